"""Traffic manager and packet replication: unicast, drop, multicast with rid, I2E/E2E clones with
sessions and preserved field lists, resubmit, recirculate (port 0, instance_type 4), truncate."""
import pytest

from p4sim.engine import EngineError, NotFoundError, Switch

from .bmv2 import SM, C, E, F, H, M, P, Program, R, extract

FIELDS = [("op", 8), ("flag", 8), ("itype_in", 8), ("inport", 16), ("keep", 8),
          ("itype_out", 8), ("rid", 16), ("eport", 16), ("keep_e", 8)]
NORMAL, I2E, E2E, RECIRC, REPL, RESUB = 0, 1, 2, 4, 5, 6


def h(f):
    return F("h", f)


def program():
    p = Program()
    p.meta(("keep", 8))
    p.header("h", FIELDS)
    p.state("start", [extract("h")])
    p.deparse("h")
    p.field_list(1, ("scalars", "keep"))
    acts = {
        "to_port": ([P("assign", SM("egress_spec"), R(0))], [("port", 9)]),
        "mcast": ([P("assign", SM("mcast_grp"), R(0))], [("grp", 16)]),
        "clone_i2e": ([P("assign", M("keep"), C(0x77)), P("clone_ingress_pkt_to_egress", R(0), C(1)),
                       P("assign", SM("egress_spec"), C(2))], [("session", 32)]),
        "resub": ([P("assign", M("keep"), C(0x55)), P("resubmit", C(1))], []),
        "flagged": ([P("assign", SM("egress_spec"), C(2)), P("assign", h("flag"), R(0))], [("flag", 8)]),
        "drop": ([P("mark_to_drop", H("standard_metadata"))], []),
        "trunc": ([P("assign", SM("egress_spec"), C(2)), P("truncate", C(4))], []),
    }
    for name, (prims, params) in acts.items():
        p.action(name, prims, params)
    p.cond("ingress", "first_pass", E("==", SM("instance_type"), C(0)), "dispatch", "tbl_again")
    p.table("ingress", "dispatch", [("hdr.h.op", "exact", ("h", "op"))], list(acts), default="drop")
    p.run("ingress", "again", [P("assign", h("itype_in"), SM("instance_type")),
                               P("assign", h("inport"), SM("ingress_port")),
                               P("assign", h("keep"), M("keep")),
                               P("assign", SM("egress_spec"), C(3))])
    p.init("ingress", "first_pass")
    # egress: record, then act on h.flag
    p.run("egress", "rec", [P("assign", h("itype_out"), SM("instance_type")),
                            P("assign", h("rid"), SM("egress_rid")),
                            P("assign", h("eport"), SM("egress_port")),
                            P("assign", h("keep_e"), M("keep"))], next_node="is_normal")
    # a unicast packet reaches egress with instance_type 0 even after a recirculation (as in BMv2):
    # meta.keep = 0x66, preserved by the recirculation, marks the second pass
    p.cond("egress", "is_normal", E("==", SM("instance_type"), C(0)), "first_pass_e", "f4")
    p.cond("egress", "first_pass_e", E("!=", M("keep"), C(0x66)), "f1", "f4")
    p.cond("egress", "f1", E("==", h("flag"), C(1)), "tbl_recirc", "f2")
    p.cond("egress", "f2", E("==", h("flag"), C(2)), "tbl_edrop", "f3")
    p.cond("egress", "f3", E("==", h("flag"), C(3)), "tbl_e2e", "f4")
    p.cond("egress", "f4", E("==", h("flag"), C(4)), "tbl_recirc", None)
    p.run("egress", "recirc", [P("assign", M("keep"), C(0x66)), P("recirculate", C(1))])
    p.run("egress", "edrop", [P("mark_to_drop", H("standard_metadata"))])
    p.run("egress", "e2e", [P("assign", M("keep"), C(0x44)), P("clone_egress_pkt_to_egress", C(5), C(1))])
    p.init("egress", "tbl_rec")
    sw = Switch(p.build())
    ops = {1: ("to_port", {"port": 2}), 2: ("mcast", {"grp": 1}), 3: ("clone_i2e", {"session": 5}),
           4: ("resub", {}), 5: ("flagged", {"flag": 1}), 7: ("drop", {}), 8: ("flagged", {"flag": 2}),
           6: ("flagged", {"flag": 3}), 9: ("trunc", {}), 10: ("mcast", {"grp": 9}), 11: ("flagged", {"flag": 4})}
    for op, (act, params) in ops.items():
        sw.table_add("dispatch", {"hdr.h.op": op}, act, params)
    return sw


def frame(op):
    return bytes([op]) + bytes(11) + b"payload"


def decode(data):
    vals = {}
    off = 0
    bits = int.from_bytes(data[:12], "big")
    shift = 96
    for name, width in FIELDS:
        shift -= width
        vals[name] = (bits >> shift) & ((1 << width) - 1)
        off += width
    vals["rest"] = data[12:]
    return vals


def send(sw, op, port=1):
    out = sw.process(port, frame(op))
    assert sw.stats["internal_errors"] == 0, sw.last_internal_error
    return [(p, decode(d)) for p, d in out]


def test_unicast_sets_egress_port_and_normal_instance():
    [(port, v)] = send(program(), 1)
    assert port == 2
    assert (v["itype_out"], v["eport"], v["rid"], v["rest"]) == (NORMAL, 2, 0, b"payload")


def test_mark_to_drop_in_ingress_and_in_egress():
    sw = program()
    assert send(sw, 7) == []
    assert send(sw, 8) == []
    assert sw.stats["dropped"] == 2


def test_multicast_replicas_carry_egress_rid():
    sw = program()
    sw.mc_group_set(1, [(1, 10), (3, 30), (4, 40)])
    out = send(sw, 2)
    assert [(p, v["itype_out"], v["rid"], v["eport"]) for p, v in out] == \
        [(1, REPL, 10, 1), (3, REPL, 30, 3), (4, REPL, 40, 4)]
    sw.mc_group_delete(1)
    assert send(sw, 2) == []
    with pytest.raises(NotFoundError):
        sw.mc_group_delete(1)


def test_multicast_to_unknown_group_drops():
    assert send(program(), 10) == []


def test_ingress_clone_is_the_original_packet_with_preserved_metadata():
    sw = program()
    sw.clone_session_set(5, [(4, 7)])
    out = sorted(sw.process(1, frame(3)))
    assert [p for p, _ in out] == [2, 4]
    original = decode(out[0][1])
    assert (original["itype_out"], original["keep_e"]) == (NORMAL, 0x77)
    # BMv2's I2E clone is the packet as received, parsed again and run through egress: egress
    # writes show up; its metadata is zero except the preserved field list and what the clone
    # session sets (instance_type 1, egress_port, egress_rid)
    clone = decode(out[1][1])
    assert (clone["op"], clone["itype_out"], clone["eport"], clone["rid"], clone["keep_e"]) == (3, I2E, 4, 7, 0x77)
    assert clone["rest"] == b"payload"


def test_clone_session_truncates_and_unknown_session_is_no_clone():
    sw = program()
    sw.clone_session_set(5, [(4, 0)], packet_length_bytes=5)
    out = sorted(sw.process(1, frame(3)))
    assert out[1] == (4, frame(3)[:5])
    sw.clone_session_delete(5)
    assert [p for p, _ in sw.process(1, frame(3))] == [2]


def test_egress_clone_keeps_headers_and_preserved_fields():
    sw = program()
    sw.clone_session_set(5, [(4, 9)])
    out = sorted(send(sw, 6))
    assert [p for p, _ in out] == [2, 4]
    original, clone = out[0][1], out[1][1]
    assert (original["itype_out"], original["eport"]) == (NORMAL, 2)
    # the clone carries the egress-modified headers; its own egress pass records E2E and the
    # preserved meta.keep
    assert (clone["itype_out"], clone["eport"], clone["rid"], clone["keep_e"]) == (E2E, 4, 9, 0x44)
    assert clone["flag"] == 3


def test_resubmit_reenters_ingress_with_preserved_fields():
    [(port, v)] = send(program(), 4, port=2)
    assert port == 3
    # ingress saw instance_type 6 and ingress_port 0 (BMv2 zeroes the metadata outside the field
    # list); egress sees a unicast packet: instance_type 0
    assert (v["itype_in"], v["inport"], v["keep"], v["itype_out"]) == (RESUB, 0, 0x55, NORMAL)


def test_recirculate_reenters_with_port_0_and_instance_type_4():
    [(port, v)] = send(program(), 5, port=2)
    assert port == 3
    assert (v["itype_in"], v["inport"], v["keep"]) == (RECIRC, 0, 0x66)
    # the recirculated bytes are the deparsed output of the first pass (flag set in ingress); the
    # second egress pass sees a unicast packet (instance_type 0)
    assert (v["flag"], v["itype_out"], v["eport"]) == (1, NORMAL, 3)


def test_truncate_shortens_the_emitted_packet():
    [(port, data)] = program().process(1, frame(9))
    assert (port, len(data)) == (2, 4)


def test_endless_recirculation_is_cut_off(caplog):
    sw = program()
    with caplog.at_level("WARNING", logger="p4sim.engine"):
        assert sw.process(1, frame(11)) == []
        assert sw.process(1, frame(11)) == []
    assert sw.stats["internal_errors"] == 0
    assert sw.stats["dropped_pass_limit"] == 2
    # one line for the first, the second within the same second is counted for the next report
    assert [r.getMessage() for r in caplog.records if r.name.startswith("p4sim")] == [
        "packet from port 1 dropped after 64 resubmit/recirculate/clone passes (1 copies left)"]
    # the switch keeps serving
    [(port, _)] = send(sw, 1)
    assert port == 2


def test_replication_engine_validation():
    sw = program()
    with pytest.raises(EngineError, match="multicast group 0"):
        sw.mc_group_set(0, [(1, 1)])
    with pytest.raises(EngineError, match="replica"):
        sw.mc_group_set(2, [(600, 1)])
    with pytest.raises(EngineError, match="replica"):
        sw.clone_session_set(1, [("x",)])
    sw.clone_session_set(3, [(1, 2)], packet_length_bytes=64)
    assert sw.clone_session_get(3) == ([(1, 2)], 64)


def tm_metadata_program():
    """Ingress records ingress_port/parser-written metadata, clones (I2E, session 5) or resubmits;
    egress writes what it sees of the standard metadata into the header."""
    p = Program()
    p.meta(("parsed", 8), ("keep", 8))
    p.header("h", [("op", 8), ("parsed", 8), ("keep", 8), ("inport", 16), ("itype", 8), ("eport", 16),
                   ("espec", 16), ("ts_zero", 8)])
    p.state("start", [extract("h"), {"op": "set", "parameters": [M("parsed"), C(0x5A)]}])
    p.deparse("h")
    p.field_list(1, ("scalars", "keep"))
    p.action("clone_it", [P("assign", M("keep"), C(0x77)), P("clone_ingress_pkt_to_egress", C(5), C(1)),
                          P("assign", SM("egress_spec"), C(2))])
    p.action("resub", [P("resubmit", C(1)), P("assign", M("keep"), C(0x55))])
    p.action("fwd", [P("assign", SM("egress_spec"), C(2))])
    p.cond("ingress", "first", E("==", SM("instance_type"), C(0)), "dispatch", "tbl_again")
    p.table("ingress", "dispatch", [("hdr.h.op", "exact", ("h", "op"))], ["clone_it", "resub", "fwd"],
            default="fwd")
    p.run("ingress", "again", [P("assign", F("h", "inport"), SM("ingress_port")),
                               P("assign", SM("egress_spec"), C(2)),
                               P("assign", F("h", "ts_zero"),
                                 {"type": "expression", "value": {"op": "b2d", "left": None, "right": E(
                                     "==", SM("ingress_global_timestamp"), C(0))["value"]}})])
    p.init("ingress", "first")
    p.run("egress", "rec", [P("assign", F("h", "parsed"), M("parsed")),
                            P("assign", F("h", "keep"), M("keep")),
                            P("assign", F("h", "itype"), SM("instance_type")),
                            P("assign", F("h", "eport"), SM("egress_port")),
                            P("assign", F("h", "espec"), SM("egress_spec"))])
    sw = Switch(p.build())
    sw.table_add("dispatch", {"hdr.h.op": 1}, "clone_it", {})
    sw.table_add("dispatch", {"hdr.h.op": 2}, "resub", {})
    return sw


def tm_fields(data):
    op, parsed, keep, inport, itype, eport, espec, ts_zero = \
        (int.from_bytes(data[a:b], "big") for a, b in ((0, 1), (1, 2), (2, 3), (3, 5), (5, 6), (6, 8),
                                                       (8, 10), (10, 11)))
    return {"op": op, "parsed": parsed, "keep": keep, "inport": inport, "itype": itype, "eport": eport,
            "espec": espec, "ts_zero": ts_zero}


def test_i2e_clone_metadata_is_zeroed_after_the_reparse():
    """BMv2 parses the clone again, then zeroes all metadata (what the parser wrote, ingress_port)
    except the field list; egress sees instance_type 1 and the session's port. In egress,
    egress_spec starts as drop_port + 1 (wrapped to 9 bits: 0)."""
    sw = tm_metadata_program()
    sw.clone_session_set(5, [(4, 0)])
    out = dict(sw.process(3, bytes([1]) + bytes(10)))
    original, clone = tm_fields(out[2]), tm_fields(out[4])
    assert (original["parsed"], original["keep"], original["itype"], original["eport"], original["espec"]) == \
        (0x5A, 0x77, NORMAL, 2, 0)
    assert (clone["parsed"], clone["keep"], clone["itype"], clone["eport"], clone["espec"]) == (0, 0x77, I2E, 4, 0)


def test_resubmit_zeroes_ingress_port_and_timestamp():
    sw = tm_metadata_program()
    [(port, data)] = sw.process(3, bytes([2]) + bytes(10))
    v = tm_fields(data)
    assert port == 2
    assert (v["inport"], v["keep"], v["itype"], v["ts_zero"]) == (0, 0x55, NORMAL, 1)
