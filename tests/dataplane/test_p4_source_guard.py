"""IP source guard on host-facing ports (docs/protocol.md sections 3 and 5): a host cannot send
IPv4 under another address, so it can neither forge results (source = the aggregation address)
nor spoof a worker, even from the same leaf; switch links, ARP and honest traffic are untouched."""
import json

import numpy as np
from scapy.all import ARP, ICMP, IP, Ether, raw
from test_p4_two_tier import TwoTier
from testbed.lossy_net import LossyNetwork
from testbed.reference_worker import JobRun

from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.protocol.addressing import SERVICE_IP as SWITCH_IP
from p4reduce.protocol.addressing import SERVICE_MAC as SWITCH_MAC
from p4reduce.protocol.constants import AggEvent, DropReason, Mode, MsgType
from p4reduce.protocol.frames import udp_frame
from p4reduce.protocol.wire import Header, decode, encode

ATTACKER = ("02:00:00:00:0e:0e", "10.9.0.9", 3)      # a host on port 3 of the switch
LINK_PORT = 8                                          # an unguarded port (a link to another switch)


def guarded_fabric(fabric):
    """Job 1: workers on ports 1 and 2, the attacker on port 3; every host port guarded, each
    host reachable by a /32 route (so a frame that passes the guard would be delivered)."""
    fabric.add_job(1, 2, 0, 4, Mode.DENSE, ports=[1, 2])
    hosts = [(e.mac, e.ip, e.switch_port) for e in (fabric.ends[(1, 0)], fabric.ends[(1, 1)])] + [ATTACKER]
    for mac, ip, port in hosts:
        fabric.guard(port, ip)
        fabric.sw.table_add(N.IPV4_ROUTES, {"hdr.ipv4.dstAddr": (ip, 32)}, N.FORWARD, {"port": port})
        fabric.sw.table_add(N.L2_FORWARD, {"hdr.ethernet.dstAddr": mac}, N.FORWARD, {"port": port})
    fabric.sw.table_add(N.L2_FORWARD, {"hdr.ethernet.dstAddr": "ff:ff:ff:ff:ff:ff"}, N.FLOOD, {"mcast_grp": 999})
    fabric.sw.mc_group_set(999, [(1, 0), (2, 0), (3, 0), (LINK_PORT, 0)])
    return fabric


def dense(layout, rank, value, job=1):
    return encode(Header(job_id=job, rank=rank, bitmap=layout.full_bitmap),
                  np.full(layout.lanes, value, np.int32), layout)


def forged_result(layout, victim):
    """A RESULT for `victim` as the switch would send it: source = aggregation address and port."""
    payload = encode(Header(msg_type=MsgType.RESULT, job_id=1, rank=victim.rank, count=2,
                            bitmap=layout.full_bitmap), np.full(layout.lanes, 666, np.int32), layout)
    return udp_frame(ATTACKER[0], victim.mac, SWITCH_IP, victim.ip, C.AGG_UDP_PORT, victim.port, payload)


def test_forged_result_from_a_host_port_is_dropped_and_counted(fabric):
    f = guarded_fabric(fabric)
    victim = f.ends[(1, 0)]
    frame = forged_result(f.layout, victim)
    assert f.inject(ATTACKER[2], frame) == []                  # model and switch agree: dropped
    assert f.drops() == {DropReason.SPOOFED_SOURCE: 1}
    # the same frame from an unguarded link port is routed to the victim: only the guard stopped it
    assert f.sw.process(LINK_PORT, frame) == [(victim.switch_port, frame)]
    # a worker's own port is guarded by its own address: it cannot forge a result for the other
    assert f.inject(victim.switch_port, forged_result(f.layout, f.ends[(1, 1)])) == []
    assert f.drops() == {DropReason.SPOOFED_SOURCE: 2}


def test_spoofed_contribution_dropped_before_admission_and_job_exact(fabric):
    f = guarded_fabric(fabric)
    victim = f.ends[(1, 1)]
    spoofed = udp_frame(ATTACKER[0], SWITCH_MAC, victim.ip, SWITCH_IP, victim.port, C.AGG_UDP_PORT, dense(f.layout, 1, 99))
    assert f.inject(ATTACKER[2], spoofed) == []
    assert f.drops() == {DropReason.SPOOFED_SOURCE: 1}        # caught by the guard, not SPOOFED_PORT
    assert f.sw.register_read(N.SEEN, 0) == 0 and f.sw.register_read(N.COUNT, 0) == 0
    # the genuine workers aggregate exactly through their guarded ports
    rng = np.random.default_rng(7)
    tensors = [rng.integers(-100, 100, 9 * f.layout.lanes + 1).astype(np.int32) for _ in range(2)]
    run = JobRun(tensors, 1, 4, Mode.DENSE, layout=f.layout)
    LossyNetwork(f.send, seed=7, loss=0.05, dup=0.05).run({1: run})
    assert (run.results() == np.sum(tensors, axis=0)).all()
    f.assert_counters_match_model()
    assert f.drops().get(DropReason.SPOOFED_SOURCE) == 1


def test_honest_traffic_and_arp_pass_the_guard(fabric):
    f = guarded_fabric(fabric)
    sw = f.sw
    h1 = f.ends[(1, 0)]
    ping = raw(Ether(src=ATTACKER[0], dst=h1.mac) / IP(src=ATTACKER[1], dst=h1.ip) / ICMP() / b"hi")
    assert sw.process(ATTACKER[2], ping) == [(h1.switch_port, ping)]
    # ARP is not IPv4: flooded from a guarded port, whatever its sender address says (hosts use
    # static ARP; docs/protocol.md section 3)
    for psrc in (ATTACKER[1], h1.ip):
        arp = raw(Ether(src=ATTACKER[0], dst="ff:ff:ff:ff:ff:ff") / ARP(psrc=psrc, pdst=h1.ip))
        out = sw.process(ATTACKER[2], arp)
        assert sorted(p for p, _ in out) == [1, 2, LINK_PORT] and all(fr == arp for _, fr in out)
    # IPv4 from an unguarded port is never checked (inter-switch traffic, any source)
    transit = raw(Ether(src="02:00:00:00:99:99", dst=h1.mac) / IP(src="172.16.0.1", dst=h1.ip) / ICMP())
    assert sw.process(LINK_PORT, transit) == [(h1.switch_port, transit)]
    assert f.drops() == {}
    assert f.events()[AggEvent.FORWARDED] == 4


def test_two_tier_leaf_drops_a_spoofed_neighbour_and_passes_results(compiled, layout):
    """The spine cannot tell a host from its leaf-mate (same uplink); the leaf's guard can."""
    program = json.loads(compiled.read_text())
    net = TwoTier(program, 4, slot_count=1, mode=Mode.DENSE, guard=True)
    leaf1 = net.sw["leaf1"]
    leaf1.table_add(N.SOURCE_GUARD, {N.SOURCE_GUARD_KEY[0]: 7}, N.HOST_SOURCE, {"ip": "10.0.9.7"})
    victim = net.hosts[0]                                  # rank 0, leaf1 port 1
    spoofed = udp_frame("02:00:00:00:0e:0e", SWITCH_MAC, victim["ip"], SWITCH_IP, victim["udp"],
                        C.AGG_UDP_PORT, dense(layout, 0, 7))
    assert leaf1.process(7, spoofed) == []                 # the attacker on leaf1 port 7
    assert leaf1.counter_read(N.DROP_REASONS, DropReason.SPOOFED_SOURCE)[0] == 1
    # a forged result for the victim from its leaf-mate never reaches it
    forged = udp_frame("02:00:00:00:0e:0e", victim["mac"], SWITCH_IP, victim["ip"], C.AGG_UDP_PORT,
                       victim["udp"], dense(layout, 0, 666))
    assert leaf1.process(7, forged) == []
    assert leaf1.counter_read(N.DROP_REASONS, DropReason.SPOOFED_SOURCE)[0] == 2
    # the honest round: contributions go up through guarded host ports, the spine's results (source
    # = aggregation address) come down through the unguarded uplinks
    for r in range(4):
        out = net.send(1, r, dense(layout, r, r + 1))
    assert len(out) == 4 and all((decode(p, layout)[1] == 10).all() for _, _, p in out)
    for name in ("leaf1", "leaf2", "spine"):
        assert net.sw[name].counter_read(N.DROP_REASONS, DropReason.SPOOFED_SOURCE)[0] == (2 if name == "leaf1" else 0)
    assert net.sw["spine"].counter_read(N.AGG_EVENTS, AggEvent.RESULT_MULTICAST)[0] == 1


def test_two_tier_allreduce_with_guarded_leaves(compiled, layout):
    program = json.loads(compiled.read_text())
    n = 6
    net = TwoTier(program, n, guard=True)
    rng = np.random.default_rng(11)
    length = 15 * layout.lanes + 7
    tensors = [(rng.integers(-50, 50, length) * (rng.random(length) < 0.2)).astype(np.int32) for _ in range(n)]
    run = JobRun(tensors, 1, 3, Mode.SPARSE, layout=layout)
    LossyNetwork(net.send, seed=11, loss=0.05, dup=0.05).run({1: run})
    assert (run.results() == np.sum(tensors, axis=0)).all()
    for name in ("leaf1", "leaf2", "spine"):
        assert net.sw[name].counter_read(N.DROP_REASONS, DropReason.SPOOFED_SOURCE)[0] == 0
