"""Parser semantics: select (exact, masks, default, no match), header stacks (.next/.last),
lookahead, verify, and parser errors as BMv2 reports them (no drop, earlier headers stay valid)."""
from p4sim.engine import Switch

from .bmv2 import SM, C, E, F, H, M, P, Program, extract, extract_next, pset

NO_ERROR, TOO_SHORT, NO_MATCH, STACK_OOB = 0, 1, 2, 3


def program(peek=False, verify=False):
    p = Program()
    p.meta(("path", 8), ("peek", 8))
    p.header("e", [("etype", 16)])
    p.stack("lbl", [("val", 7), ("bos", 1)], 3)
    p.header("ip", [("proto", 8), ("x", 8)])
    p.header("tr", [("err", 32), ("path", 8), ("peek", 8)])
    p.state("start", [extract("e")], key=[F("e", "etype")],
            transitions=[("0x0800", None, "ip"), ("0x8800", "0xff00", "labels")], default=None)
    p.state("labels", [extract_next("lbl"), pset(M("path"), E("|", M("path"), C(2)))],
            key=[{"type": "stack_field", "value": ["lbl", "bos"]}],
            transitions=[("0x00", None, "labels"), ("0x01", None, "ip")])
    ip_ops = [extract("ip"), pset(M("path"), E("|", M("path"), C(4)))]
    if verify:
        ip_ops.append({"op": "verify", "parameters": [E("!=", F("ip", "proto"), C(0)), C(NO_MATCH)]})
    if peek:
        ip_ops.append(pset(M("peek"), {"type": "lookahead", "value": [4, 8]}))
        p.state_no_default("ip", ip_ops, key=[{"type": "lookahead", "value": [0, 8]}],
                           transitions=[("0xa0", "0xf0", "marked"), ("0x00", "0x80", None)])
        p.header("mark", [("kind", 8)])
        p.state("marked", [extract("mark"), pset(M("path"), E("|", M("path"), C(8)))])
        order = ["e", "lbl[0]", "lbl[1]", "lbl[2]", "ip", "mark", "tr"]
    else:
        p.state_no_default("ip", ip_ops, key=[F("ip", "proto")], transitions=[("0x11", None, None),
                                                                            ("0x06", None, None)])
        order = ["e", "lbl[0]", "lbl[1]", "lbl[2]", "ip", "tr"]
    p.deparse(*order)
    p.run("ingress", "record", [
        P("assign", SM("egress_spec"), SM("ingress_port")),
        P("add_header", H("tr")),
        P("assign", F("tr", "err"), SM("parser_error")),
        P("assign", F("tr", "path"), M("path")),
        P("assign", F("tr", "peek"), M("peek")),
    ])
    return Switch(p.build())


def send(sw, frame):
    out = sw.process(2, frame)
    assert sw.stats["internal_errors"] == 0, sw.last_internal_error
    assert len(out) == 1 and out[0][0] == 2, "parser errors must not drop the packet"
    data = out[0][1]
    return data


def trailer_at(data, offset):
    return int.from_bytes(data[offset:offset + 4], "big"), data[offset + 4], data[offset + 5]


LBL = lambda val, bos: bytes([(val << 1) | bos])


def test_select_exact_value_goes_to_ip():
    data = send(program(), b"\x08\x00" + b"\x11\x22" + b"rest")
    assert data[:4] == b"\x08\x00\x11\x22"
    assert trailer_at(data, 4) == (NO_ERROR, 4, 0)
    assert data[10:] == b"rest"


def test_select_default_accepts_and_leaves_payload():
    data = send(program(), b"\x86\xdd" + b"\x11\x22rest")
    assert trailer_at(data, 2) == (NO_ERROR, 0, 0)
    assert data[8:] == b"\x11\x22rest"


def test_select_mask_and_header_stack_next_last():
    frame = b"\x88\x47" + LBL(5, 0) + LBL(6, 1) + b"\x06\x33" + b"rest"
    data = send(program(), frame)
    assert data[:6] == frame[:6]          # lbl[0], lbl[1] valid, lbl[2] not emitted
    assert trailer_at(data, 6) == (NO_ERROR, 6, 0)
    assert data[12:] == b"rest"


def test_stack_out_of_bounds_keeps_extracted_headers():
    frame = b"\x88\x47" + LBL(1, 0) + LBL(2, 0) + LBL(3, 0) + LBL(4, 1) + b"\x11\x00rest"
    data = send(program(), frame)
    assert data[:5] == frame[:5]          # three labels extracted before the error
    assert trailer_at(data, 5) == (STACK_OOB, 2, 0)
    assert data[11:] == frame[5:]         # the 4th label stays in the payload


def test_packet_too_short_keeps_earlier_headers_valid():
    data = send(program(), b"\x88\x47" + LBL(1, 1) + b"\x11")  # ip needs 2 bytes, 1 left
    assert data[:3] == b"\x88\x47" + LBL(1, 1)
    assert trailer_at(data, 3) == (TOO_SHORT, 2, 0)
    assert data[9:] == b"\x11"


def test_empty_packet_is_processed_with_packet_too_short():
    data = send(program(), b"")
    assert trailer_at(data, 0) == (TOO_SHORT, 0, 0)


def test_no_matching_transition_without_default_accepts_without_error():
    # BMv2 (and the ground truth parse_mix) accepts when no case matches and there is no default
    data = send(program(), b"\x08\x00\x99\x00rest")
    assert trailer_at(data, 4) == (NO_ERROR, 4, 0)


def test_verify_sets_the_given_error():
    data = send(program(verify=True), b"\x08\x00\x00\x00rest")
    assert trailer_at(data, 4)[0] == NO_MATCH
    data = send(program(verify=True), b"\x08\x00\x11\x00rest")
    assert trailer_at(data, 4)[0] == NO_ERROR


def test_lookahead_in_select_and_set():
    sw = program(peek=True)
    data = send(sw, b"\x08\x00\x11\x00" + b"\xa7\x3c" + b"z")  # first payload nibble 0xa -> marked
    assert data[:5] == b"\x08\x00\x11\x00\xa7"
    assert trailer_at(data, 5) == (NO_ERROR, 4 | 8, 0x73)  # peek = bits 4..11 of the payload
    data = send(sw, b"\x08\x00\x11\x00" + b"\x31\x00")      # < 0x80 -> accept, no mark
    assert trailer_at(data, 4) == (NO_ERROR, 4, 0x10)


def test_lookahead_past_the_end_is_packet_too_short():
    data = send(program(peek=True), b"\x08\x00\x11\x00")
    assert trailer_at(data, 4)[0] == TOO_SHORT


def test_parse_value_set_with_two_key_fields():
    p = Program()
    p.header("e", [("a", 4), ("b", 12), ("c", 8)])
    p.header("x", [("v", 8)])
    p.state("start", [extract("e")], key=[F("e", "a"), F("e", "b")], default=None)
    p.j["parsers"][0]["parse_states"][0]["transitions"].insert(
        0, {"type": "parse_vset", "value": "pvs", "mask": None, "next_state": "more"})
    p.j["parse_vsets"].append({"name": "pvs", "id": 0, "compressed_bitwidth": 16})
    p.state("more", [extract("x")])
    p.deparse("e", "x")
    p.run("ingress", "ing", [P("assign", SM("egress_spec"), C(1)), P("assign", F("e", "c"), E("b2d", E("valid", {"type": "header", "value": "x"})))])
    sw = Switch(p.build())
    frame = bytes([0x51, 0x23, 0x00, 0x77])   # a = 5, b = 0x123
    assert sw.process(1, frame)[0][1][2] == 0
    sw.parse_vset_set("pvs", [0x5123])
    assert sw.process(1, frame)[0][1][2] == 1
    sw.parse_vset_set("pvs", [(0x5000, 0xF000)])
    assert sw.process(1, frame)[0][1][2] == 1
    assert sw.parse_vset_get("pvs") == [(0x5000, 0xF000)]
    sw.parse_vset_set("pvs", [])
    assert sw.process(1, frame)[0][1][2] == 0


def looping_program():
    """start -> a -> b -> a ... when e.etype is 0xdead (no state consumes input), else accept."""
    p = Program()
    p.header("e", [("etype", 16)])
    p.state("start", [extract("e")], key=[F("e", "etype")], transitions=[("0xdead", None, "a")], default=None)
    p.state("a", [], default="b")
    p.state("b", [], default="a")
    p.deparse("e")
    p.run("ingress", "out", [P("assign", SM("egress_spec"), C(1))])
    return p.build()


def test_a_parser_loop_drops_the_packet_counts_it_and_the_switch_keeps_serving(caplog):
    sw = Switch(looping_program())
    with caplog.at_level("WARNING", logger="p4sim.engine"):
        assert sw.process(3, b"\xde\xad") == []
    assert sw.stats["dropped_parser_loop"] == 1 and sw.stats["dropped"] == 1
    assert sw.stats["internal_errors"] == 0
    assert [r.getMessage() for r in caplog.records if r.name.startswith("p4sim")] == [
        "packet from port 3 dropped: parser visited 261 states without ending (a loop in the parse graph)"]
    # the lock is free again and other packets go through
    assert sw.process(3, b"\x08\x00") == [(1, b"\x08\x00")]
    assert sw.lock.acquire(blocking=False)
    sw.lock.release()


def test_a_long_legitimate_parse_is_not_a_loop():
    """A state visited once per byte consumed (an options loop) may run as long as the packet."""
    p = Program()
    p.header("e", [("etype", 16)])
    p.header("opt", [("kind", 8)])
    p.meta(("n", 16))
    p.state("start", [extract("e")], key=[F("e", "etype")], transitions=[("0x0001", None, "skip")], default=None)
    p.state("skip", [{"op": "advance", "parameters": [C(8)]}, pset(M("n"), E("+", M("n"), C(1)))],
            key=[{"type": "lookahead", "value": [0, 8]}], transitions=[("0x00", None, "skip")], default=None)
    p.deparse("e")
    p.run("ingress", "out", [P("assign", SM("egress_spec"), C(1)), P("assign", F("e", "etype"), M("n"))])
    sw = Switch(p.build())
    frame = b"\x00\x01" + bytes(3000) + b"\x01"
    [(port, data)] = sw.process(0, frame)
    assert data[:2] == (3000).to_bytes(2, "big")     # 3000 loop iterations, one byte each
    assert sw.stats["dropped_parser_loop"] == 0
