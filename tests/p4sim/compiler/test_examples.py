"""The example programs in examples/p4: each compiles without warnings, and the classic ones
behave as their descriptions say when run on p4sim's engine."""
import pathlib
import struct

import pytest

from p4sim.compiler import compile_file

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples" / "p4"
ALL = sorted(p.name for p in EXAMPLES.glob("*.p4"))


def eth(dst, src, etype):
    return bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", "")) + struct.pack("!H", etype)


def ipv4(src, dst, proto=17, ttl=64, payload=b""):
    s = bytes(int(x) for x in src.split("."))
    d = bytes(int(x) for x in dst.split("."))
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, ttl, proto, 0, s, d)
    csum = _csum(hdr)
    return hdr[:10] + struct.pack("!H", csum) + hdr[12:] + payload


def _csum(b):
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


@pytest.fixture(scope="module")
def engine():
    from p4sim import engine
    return engine


@pytest.mark.parametrize("name", ALL)
def test_example_compiles_without_warnings(name):
    res = compile_file(str(EXAMPLES / name))
    assert res.warnings == []
    assert res.bmv2["pipelines"][0]["name"] == "ingress"
    assert len(res.p4info.SerializeToString()) > 0


def test_expected_examples_exist():
    for n in ["l3_forward.p4", "calc.p4", "ecmp.p4", "multicast.p4", "source_routing.p4",
              "group_declarations.p4", "group_expressions.p4", "group_parser.p4", "group_control.p4",
              "group_externs.p4", "group_subcontrols.p4"]:
        assert n in ALL


def test_l3_forward_routes_by_longest_prefix(engine):
    sw = engine.Switch(compile_file(str(EXAMPLES / "l3_forward.p4")).bmv2)
    sw.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.0/8"}, "MyIngress.ipv4_forward",
                 {"dstAddr": "00:00:00:00:00:0a", "port": 1})
    sw.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.1.0.0/16"}, "MyIngress.ipv4_forward",
                 {"dstAddr": "00:00:00:00:00:0b", "port": 2})
    pkt = eth("00:00:00:00:00:01", "00:00:00:00:00:99", 0x0800) + ipv4("1.2.3.4", "10.1.2.3")
    (port, out), = sw.process(3, pkt)
    assert port == 2
    assert out[0:6] == bytes.fromhex("00000000000b") and out[6:12] == bytes.fromhex("000000000001")
    assert out[14 + 8] == 63                                  # TTL decremented
    assert _csum(out[14:34]) == 0                             # checksum recomputed
    (port, _), = sw.process(3, eth("00:00:00:00:00:01", "00:00:00:00:00:99", 0x0800) + ipv4("1.2.3.4", "10.9.9.9"))
    assert port == 1
    assert sw.process(3, eth("00:00:00:00:00:01", "00:00:00:00:00:99", 0x0800) + ipv4("1.2.3.4", "11.0.0.1")) == []


def test_calc_computes_and_returns(engine):
    sw = engine.Switch(compile_file(str(EXAMPLES / "calc.p4")).bmv2)
    for op, a, b, want in [("+", 7, 5, 12), ("-", 5, 7, 0xFFFFFFFE), ("&", 12, 10, 8), ("|", 12, 10, 14),
                           ("^", 12, 10, 6)]:
        pkt = eth("00:00:00:00:00:01", "00:00:00:00:00:02", 0x1234) + bytes([0x50, 0x34, 1, ord(op)]) + \
            struct.pack("!III", a, b, 0)
        (port, out), = sw.process(3, pkt)
        assert port == 3
        assert out[:12] == bytes.fromhex("000000000002" "000000000001")
        assert struct.unpack("!I", out[26:30])[0] == want, op
    bad = eth("00:00:00:00:00:01", "00:00:00:00:00:02", 0x1234) + bytes([0x50, 0x34, 1, ord("*")]) + bytes(12)
    assert sw.process(3, bad) == []


def test_ecmp_spreads_flows_over_next_hops(engine):
    sw = engine.Switch(compile_file(str(EXAMPLES / "ecmp.p4")).bmv2)
    sw.table_add("EcmpIngress.ecmp_group", {"hdr.ipv4.dstAddr": "10.0.0.0/8"}, "EcmpIngress.set_ecmp_select",
                 {"ecmp_base": 0, "ecmp_count": 2})
    sw.table_add("EcmpIngress.ecmp_nhop", {"meta.ecmp_select": 0}, "EcmpIngress.set_nhop",
                 {"nhop_dmac": "00:00:00:00:01:01", "port": 1})
    sw.table_add("EcmpIngress.ecmp_nhop", {"meta.ecmp_select": 1}, "EcmpIngress.set_nhop",
                 {"nhop_dmac": "00:00:00:00:02:02", "port": 2})
    ports = set()
    for sport in range(40):
        pkt = eth("00:00:00:00:00:01", "00:00:00:00:00:99", 0x0800) + \
            ipv4("1.2.3.4", "10.0.0.1", payload=struct.pack("!HH", 1000 + sport, 80))
        (port, out), = sw.process(3, pkt)
        again = sw.process(3, pkt)
        assert again == [(port, out)]                          # same flow, same path
        ports.add(port)
    assert ports == {1, 2}


def test_multicast_floods_except_ingress(engine):
    sw = engine.Switch(compile_file(str(EXAMPLES / "multicast.p4")).bmv2)
    sw.mc_group_set(1, [(1, 1), (2, 2), (3, 3)])
    out = sw.process(2, eth("ff:ff:ff:ff:ff:ff", "00:00:00:00:00:02", 0x0800) + bytes(20))
    assert sorted(p for p, _ in out) == [1, 3]
    sw.table_add("McIngress.mac_table", {"hdr.ethernet.dstAddr": "00:00:00:00:00:03"}, "McIngress.forward",
                 {"port": 3})
    out = sw.process(2, eth("00:00:00:00:00:03", "00:00:00:00:00:02", 0x0800) + bytes(20))
    assert [p for p, _ in out] == [3]


def test_source_routing_pops_hops(engine):
    sw = engine.Switch(compile_file(str(EXAMPLES / "source_routing.p4")).bmv2)
    hops = struct.pack("!HH", 2, 0x8000 | 3)
    ip = ipv4("1.2.3.4", "5.6.7.8")
    (port, out), = sw.process(1, eth("00:00:00:00:00:01", "00:00:00:00:00:02", 0x1234) + hops + ip)
    assert port == 2
    assert out[12:14] == b"\x12\x34" and out[14:16] == b"\x80\x03"
    assert out[16:24] == ip[:8] and out[24] == 63              # every hop decrements the TTL
    (port, out), = sw.process(2, out)
    assert port == 3
    assert out[12:14] == b"\x08\x00" and out[14 + 8] == 62     # last hop: EtherType back to IPv4


def test_expressions_wrap_and_saturate(engine):
    sw = engine.Switch(compile_file(str(EXAMPLES / "group_expressions.p4")).bmv2)
    a, b, sa, sb = 200, 100, -100, -50
    pkt = eth("00:00:00:00:00:01", "00:00:00:00:00:02", 0x88B6) + bytes([a, b, sa & 255, sb & 255]) + bytes(20)
    (_port, out), = sw.process(1, pkt)
    r = list(out[14:])
    assert r[4:] == [(a + b) & 255, (a - b) & 255, (a * b) & 255, 255, 100, 128, (sa - sb) & 255,
                     a & b, a | b, a ^ b, ~a & 255, (a << 3) & 255, a >> (b & 7), (a >> 4) << 4, a, b,
                     (-a) & 255, 2, max(a, b), 0xC0 | (b >> 4)]


def test_parser_group_paths(engine):
    sw = engine.Switch(compile_file(str(EXAMPLES / "group_parser.p4")).bmv2)
    # 0x90xx: tag kind 1 -> options (last bit ends the stack) -> peek
    pkt = eth("00:00:00:00:00:01", "00:00:00:00:00:02", 0x9012) + bytes([1, 4]) + bytes([2, 4, 7]) + b"\xabrest"
    (_, out), = sw.process(1, pkt)
    assert out[19:23] == bytes([1 | 2 | 4, 3, 0xAB, 0])       # trailer after eth, tag, 3 options
    assert out[23:] == b"\xabrest"
    # range 0x8800..0x88FF goes straight to options; five options overflow the 4-entry stack
    pkt = eth("00:00:00:00:00:01", "00:00:00:00:00:02", 0x88AA) + bytes([2, 2, 2, 2, 2, 3])
    (_, out), = sw.process(1, pkt)
    assert out[18] == 2 and out[19] == 4 and out[21] == 1      # 4 options, then StackOutOfBounds
    # verify(len <= 64) fails -> HeaderTooShort reported by the program
    pkt = eth("00:00:00:00:00:01", "00:00:00:00:00:02", 0x9000) + bytes([9, 200])
    (_, out), = sw.process(1, pkt)
    assert out[16] == 1 and out[19] == 2                       # path: tag; error: HeaderTooShort


def test_control_group_priorities_switch_and_hit_miss(engine):
    sw = engine.Switch(compile_file(str(EXAMPLES / "group_control.p4")).bmv2)
    src_mac = "00:00:00:00:00:99"
    sw.table_add("CIngress.routes", {"hdr.ip.dst": "20.0.0.0/8"}, "CIngress.forward", {"port": 2})

    def send(proto, sport, dport, dst="20.0.0.1"):
        l4 = struct.pack("!HH", sport, dport)
        pkt = eth("00:00:00:00:00:01", src_mac, 0x0800) + ipv4("10.1.1.1", dst, proto=proto, payload=l4)
        return sw.process(1, pkt)

    # UDP to port 53: class 2 (priority 100); acl miss -> TTL - 1 (forward) - 3 (class + 1)
    (port, out), = send(17, 1234, 53)
    assert port == 2 and out[14 + 8] == 60
    # TCP from 10/8 with sport 7777: entries with priority 30 (class 1) and 10 (class 3) both match;
    # the larger priority wins, and an acl entry for class 1 turns the miss into a hit
    sw.table_add("CIngress.acl", {"hdr.eth.src": src_mac, "meta.klass": 1}, "CIngress.permit", {})
    (port, out), = send(6, 7777, 80)
    assert out[14 + 8] == 63
    # no route: drop, and the switch's 'return' skips the acl
    assert send(17, 1, 53, dst="30.0.0.1") == []
    # the direct counter on acl counted the one hit
    (entry,) = sw.table_entries("CIngress.acl")
    assert sw.direct_counter_read("CIngress.acl", entry.handle)[0] == 1
