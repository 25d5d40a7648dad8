"""Packets can never hang or crash the native code: a parser that loops without consuming input,
an action that jumps backwards forever and a program that recirculates forever each end that
packet after a bound, are counted and logged, and the switch keeps answering."""
import logging
import random

from engine.bmv2 import SM, C, E, F, P, Program, extract, wrap

from p4sim.engine.native.switch import NativeSwitch

from .diff import pair, same_outputs


def forwarder(p):
    p.table("ingress", "fwd", [("hdr.h.a", "exact", ("h", "a"))], ["to", "nop"], default="nop")
    return p


def looping_parser():
    """start -> a -> b -> a -> ... on h.a == 1, without extracting anything after the first header."""
    p = Program()
    p.header("h", [("a", 8)])
    key = [{"type": "field", "value": ["h", "a"]}]
    p.state("start", [extract("h")], key=key, transitions=[("0x01", None, "a")])
    p.state("a", [], key=key, transitions=[("0x01", None, "b")])
    p.state("b", [], key=key, transitions=[("0x01", None, "a")])
    p.deparse("h")
    p.action("to", [P("assign", SM("egress_spec"), C(3))])
    p.action("nop", [P("assign", SM("egress_spec"), C(2))])
    return forwarder(p).build()


def test_a_parser_loop_ends_the_packet_and_is_counted(caplog):
    py, sw = pair(looping_parser())
    with caplog.at_level(logging.WARNING, logger="p4sim.engine"):
        assert py.process(1, b"\x01rest") == []
        assert sw.process(1, b"\x01rest") == []
    assert sw.stats["dropped_parser_loop"] == py.stats["dropped_parser_loop"] == 1
    assert sw.stats["dropped"] == 1
    python_line, native_line = [r.getMessage() for r in caplog.records if r.name.startswith("p4sim")]
    assert native_line == python_line and "parser visited 264 states without ending" in native_line
    # the control plane still answers and other packets still flow
    sw.table_add("fwd", {"hdr.h.a": 2}, "to")
    assert sw.process(1, b"\x02rest") == [(3, b"\x02rest")]
    assert sw.process(1, b"\x00") == [(2, b"\x00")]


def test_a_backward_jump_that_never_ends_is_bounded():
    p = Program()
    p.header("h", [("a", 8)])
    p.state("start", [extract("h")])
    p.deparse("h")
    # 0: a = a + 1 (8 bits); 1: jump back to 0 while 1 == 1 never becomes false
    p.run("ingress", "spin", [P("assign", F("h", "a"), wrap(E("+", F("h", "a"), C(1)), 8)),
                              P("_jump", C(0))])
    sw = NativeSwitch(p.build())
    assert sw.process(1, b"\x00") == []
    assert sw.stats["dropped_action_loop"] == 1 and sw.stats["dropped"] == 1
    assert sw.table_get_default("tbl_spin").action == "spin"  # the control plane still answers


def recirculate_forever():
    p = Program()
    p.header("h", [("a", 8)])
    p.state("start", [extract("h")])
    p.deparse("h")
    p.run("ingress", "fwd", [P("assign", SM("egress_spec"), C(1))])
    p.run("egress", "again", [P("assign", F("h", "a"), wrap(E("+", F("h", "a"), C(1)), 8)),
                              P("recirculate", C(0))])
    return p.build()


def test_recirculating_forever_hits_the_pass_limit_like_the_python_engine():
    py, nat = pair(recirculate_forever())
    assert same_outputs((py, nat), [(1, b"\x00")]) == [[]]
    assert nat.stats["dropped_pass_limit"] == py.stats["dropped_pass_limit"] == 1


def test_random_bytes_on_every_parser_path_agree_and_never_crash(monkeypatch):
    """Truncated and random frames through parsers with stacks, lookahead and verify: the native
    parser answers exactly as the Python one, and nothing is an internal error."""
    from engine.test_parser import program as parser_program
    for kwargs in ({"peek": True}, {"verify": True}):
        switches = []
        for name in ("python", "native"):
            monkeypatch.setenv("P4SIM_BACKEND", name)
            switches.append(parser_program(**kwargs))
        assert isinstance(switches[1], NativeSwitch)
        rng = random.Random(5)
        seeds = [b"\x08\x00\x11\x00", b"\x88\x47\x02\x04\x03\x06\x00", b"\x08\x00\xa5\x01\x02"]
        packets = []
        for _ in range(3000):
            frame = bytearray(rng.choice(seeds) + bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 12))))
            for _ in range(rng.randrange(0, 3)):
                frame[rng.randrange(len(frame))] = rng.getrandbits(8)
            packets.append((rng.randrange(0, 512), bytes(frame[:rng.randrange(0, len(frame) + 1)])))
        same_outputs(switches, packets)
        assert switches[1].stats["internal_errors"] == 0, switches[1].last_internal_error
