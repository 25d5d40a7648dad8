"""Non-aggregation traffic crosses the same switch: IPv4 routes, then L2 by destination MAC."""

from scapy.all import ARP, ICMP, IP, TCP, UDP, Ether, raw

from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.protocol.constants import AggEvent, DropReason
from p4reduce.protocol.frames import ipv4_checksum

H1 = ("02:00:00:00:00:01", "10.0.0.1", 1)
H2 = ("02:00:00:00:00:02", "10.0.0.2", 2)
H3 = ("02:00:00:00:00:03", "10.0.1.3", 3)
ROUTER_MAC = "02:00:00:00:00:fe"


def setup_tables(sw):
    sw.table_add(N.L2_FORWARD, {"hdr.ethernet.dstAddr": H1[0]}, N.FORWARD, {"port": 1})
    sw.table_add(N.L2_FORWARD, {"hdr.ethernet.dstAddr": H2[0]}, N.FORWARD, {"port": 2})
    sw.table_add(N.L2_FORWARD, {"hdr.ethernet.dstAddr": "ff:ff:ff:ff:ff:ff"}, N.FLOOD, {"mcast_grp": 999})
    sw.mc_group_set(999, [(1, 0), (2, 0), (3, 0)])
    sw.table_add(N.IPV4_ROUTES, {"hdr.ipv4.dstAddr": ("10.0.1.0", 24)}, N.ROUTE,
                 {"port": 3, "dst_mac": H3[0], "src_mac": ROUTER_MAC})
    sw.table_add(N.IPV4_ROUTES, {"hdr.ipv4.dstAddr": ("10.0.0.2", 32)}, N.FORWARD, {"port": 2})


def test_ping_and_tcp_switched_by_mac(fabric):
    sw = fabric.sw
    setup_tables(sw)
    ping = raw(Ether(src=H1[0], dst=H2[0]) / IP(src=H1[1], dst=H2[1]) / ICMP() / b"payload")
    assert sw.process(1, ping) == [(2, ping)]
    tcp = raw(Ether(src=H2[0], dst=H1[0]) / IP(src=H2[1], dst=H1[1]) / TCP(sport=5000, dport=80, flags="S"))
    assert sw.process(2, tcp) == [(1, tcp)]
    # ordinary UDP (not to the aggregation port) is just forwarded, even to the switch's port number range
    udp = raw(Ether(src=H2[0], dst=H1[0]) / IP(src=H2[1], dst=H1[1]) / UDP(sport=C.AGG_UDP_PORT, dport=1234) / b"x")
    assert sw.process(2, udp) == [(1, udp)]
    assert fabric.events()[AggEvent.FORWARDED] == 3


def test_ipv4_route_rewrites_macs_and_ttl(fabric):
    sw = fabric.sw
    setup_tables(sw)
    pkt = raw(Ether(src=H1[0], dst=ROUTER_MAC) / IP(src=H1[1], dst="10.0.1.3", ttl=9) / UDP(sport=1, dport=2) / b"hi")
    [(port, out)] = sw.process(1, pkt)
    assert port == 3
    got = Ether(out)
    assert (got.dst, got.src, got[IP].ttl) == (H3[0], ROUTER_MAC, 8)
    assert ipv4_checksum(out[14:34]) == 0
    # a /32 route with plain forward wins over L2 and keeps the frame unchanged
    pkt2 = raw(Ether(src=H1[0], dst="02:00:00:00:00:99") / IP(src=H1[1], dst=H2[1]) / ICMP())
    assert sw.process(1, pkt2) == [(2, pkt2)]


def test_arp_broadcast_floods_except_ingress(fabric):
    sw = fabric.sw
    setup_tables(sw)
    arp = raw(Ether(src=H1[0], dst="ff:ff:ff:ff:ff:ff") / ARP(psrc=H1[1], pdst=H2[1]))
    out = sw.process(1, arp)
    assert sorted(p for p, _ in out) == [2, 3] and all(f == arp for _, f in out)


def test_unknown_destination_dropped_and_counted(fabric):
    sw = fabric.sw
    setup_tables(sw)
    pkt = raw(Ether(src=H1[0], dst="02:00:00:00:00:77") / IP(src=H1[1], dst="192.168.0.1") / ICMP())
    assert sw.process(1, pkt) == []
    assert sw.process(1, b"\x02" * 10) == []
    assert fabric.drops() == {DropReason.NO_ROUTE: 1, DropReason.TRUNCATED: 1}
