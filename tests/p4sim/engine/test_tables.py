"""Tables: match kinds, priorities, default actions, const entries, next-node graph, direct counters,
and the control-plane errors the runtime maps to P4Runtime status codes."""
import pytest

from p4sim.engine import (
    AlreadyExistsError,
    ConstViolationError,
    EngineError,
    NotFoundError,
    ResourceExhaustedError,
    Switch,
)

from .bmv2 import C, F, P, Program, R, extract

KEYS = {
    "exact": [("hdr.h.k1", "exact", ("h", "k1")), ("hdr.h.k2", "exact", ("h", "k2"))],
    "lpm": [("hdr.h.k1", "lpm", ("h", "k1")), ("hdr.h.k2", "exact", ("h", "k2"))],
    "ternary": [("hdr.h.k1", "ternary", ("h", "k1")), ("hdr.h.k2", "exact", ("h", "k2"))],
    "range": [("hdr.h.k1", "exact", ("h", "k1")), ("hdr.h.k2", "range", ("h", "k2"))],
    "optional": [("hdr.h.k1", "optional", ("h", "k1")), ("hdr.h.k2", "optional", ("h", "k2"))],
}


def program(kind, const_default=False, entries=None, counters=False, max_size=1024, second_table=False):
    p = Program()
    p.header("h", [("k1", 32), ("k2", 8), ("out", 8), ("out2", 8)])
    p.state("start", [extract("h")])
    p.deparse("h")
    p.action("set_out", [P("assign", F("h", "out"), R(0))], params=[("v", 8)])
    p.action("miss", [P("assign", F("h", "out"), C(0xEE))])
    p.action("NoAction", [])
    nxt = None
    if second_table:
        p.action("second", [P("assign", F("h", "out2"), C(0x22))])
        p.table("ingress", "t2", [], ["second"], default="second", const_default=True)
        nxt = {"__HIT__": None, "__MISS__": "t2"}
    p.table("ingress", "t", KEYS[kind], ["set_out", "miss", "NoAction"], default="miss",
            const_default=const_default, next_tables=nxt, counters=counters, entries=entries, max_size=max_size)
    p.init("ingress", "t")
    p.run("egress", "port", [])
    sw = Switch(p.build())
    return sw


def lookup(sw, k1, k2):
    frame = k1.to_bytes(4, "big") + bytes([k2, 0, 0]) + b"pay"
    out = sw.process(1, frame)
    assert sw.stats["internal_errors"] == 0, sw.last_internal_error
    assert len(out) == 1
    return out[0][1][5]


def test_exact_match_with_string_values():
    sw = program("exact")
    sw.table_add("t", {"hdr.h.k1": "10.0.0.1", "hdr.h.k2": "7"}, "set_out", {"v": 1})
    sw.table_add("t", [0x0A000002, 7], "set_out", [2])
    assert lookup(sw, 0x0A000001, 7) == 1
    assert lookup(sw, 0x0A000002, 7) == 2
    assert lookup(sw, 0x0A000002, 8) == 0xEE


def test_lpm_longest_prefix_wins_regardless_of_order():
    sw = program("lpm")
    sw.table_add("t", {"hdr.h.k1": "0.0.0.0/0", "hdr.h.k2": 1}, "set_out", {"v": 1})
    sw.table_add("t", {"hdr.h.k1": "10.1.2.0/24", "hdr.h.k2": 1}, "set_out", {"v": 3})
    sw.table_add("t", {"hdr.h.k1": ("10.1.0.0", 16), "hdr.h.k2": 1}, "set_out", {"v": 2})
    assert lookup(sw, 0x0A010203, 1) == 3
    assert lookup(sw, 0x0A01FF03, 1) == 2
    assert lookup(sw, 0x0B000000, 1) == 1
    assert lookup(sw, 0x0A010203, 2) == 0xEE


def test_ternary_priority_larger_number_wins():
    sw = program("ternary")
    sw.table_add("t", {"hdr.h.k1": "0x0a000000&&&0xff000000", "hdr.h.k2": 1}, "set_out", {"v": 1}, priority=10)
    sw.table_add("t", {"hdr.h.k1": ("0x0a010000", "0xffff0000"), "hdr.h.k2": 1}, "set_out", {"v": 2}, priority=20)
    sw.table_add("t", {"hdr.h.k1": "0x0a010200&&&0xffffff00", "hdr.h.k2": 1}, "set_out", {"v": 3}, priority=5)
    assert lookup(sw, 0x0A010203, 1) == 2
    assert lookup(sw, 0x0A020203, 1) == 1
    assert lookup(sw, 0x0B010203, 1) == 0xEE


def test_ternary_needs_a_priority():
    sw = program("ternary")
    with pytest.raises(EngineError, match="priority"):
        sw.table_add("t", {"hdr.h.k1": "1&&&1", "hdr.h.k2": 1}, "set_out", {"v": 1})


def test_range_match():
    sw = program("range")
    sw.table_add("t", {"hdr.h.k1": 5, "hdr.h.k2": "10..20"}, "set_out", {"v": 1}, priority=1)
    sw.table_add("t", {"hdr.h.k1": 5, "hdr.h.k2": (15, 30)}, "set_out", {"v": 2}, priority=2)
    assert [lookup(sw, 5, k) for k in (9, 10, 14, 15, 20, 30, 31)] == [0xEE, 1, 1, 2, 2, 2, 0xEE]


def test_optional_match_value_or_wildcard():
    sw = program("optional")
    sw.table_add("t", {"hdr.h.k1": 9, "hdr.h.k2": None}, "set_out", {"v": 1}, priority=1)
    sw.table_add("t", {"hdr.h.k2": 4}, "set_out", {"v": 2}, priority=2)  # omitted key = wildcard
    assert lookup(sw, 9, 1) == 1
    assert lookup(sw, 9, 4) == 2
    assert lookup(sw, 8, 1) == 0xEE
    with pytest.raises(EngineError, match="optional"):
        sw.table_add("t", {"hdr.h.k1": "1&&&3"}, "set_out", {"v": 3}, priority=3)


def test_default_action_can_be_changed_and_reset():
    sw = program("exact")
    assert lookup(sw, 1, 1) == 0xEE
    sw.table_set_default("t", "set_out", {"v": 0x42})
    assert lookup(sw, 1, 1) == 0x42
    assert sw.table_get_default("t").action == "set_out"
    sw.table_reset_default("t")
    assert lookup(sw, 1, 1) == 0xEE


def test_const_default_action_cannot_be_changed():
    sw = program("exact", const_default=True)
    with pytest.raises(ConstViolationError):
        sw.table_set_default("t", "set_out", {"v": 1})


def test_const_entries_match_and_are_immutable():
    entries = [
        {"match_key": [{"match_type": "ternary", "key": "0x00000001", "mask": "0x000000ff"},
                       {"match_type": "exact", "key": "0x02"}],
         "action_entry": {"action_id": 0, "action_data": ["0x11"]}, "priority": 1},
        {"match_key": [{"match_type": "ternary", "key": "0x00000000", "mask": "0x00000000"},
                       {"match_type": "exact", "key": "0x02"}],
         "action_entry": {"action_id": 0, "action_data": ["0x22"]}, "priority": 2},
    ]
    sw = program("ternary", entries=entries)
    assert lookup(sw, 0x101, 2) == 0x11   # first const entry has the highest priority
    assert lookup(sw, 0x102, 2) == 0x22
    assert lookup(sw, 0x102, 3) == 0xEE
    listed = sw.table_entries("t")
    assert [e.is_const for e in listed] == [True, True]
    assert listed[0].priority > listed[1].priority
    with pytest.raises(ConstViolationError):
        sw.table_add("t", {"hdr.h.k1": "1&&&1", "hdr.h.k2": 1}, "set_out", {"v": 1}, priority=9)
    with pytest.raises(ConstViolationError):
        sw.table_delete("t", listed[0].handle)


def test_hit_and_miss_next_tables():
    sw = program("exact", second_table=True)
    sw.table_add("t", {"hdr.h.k1": 1, "hdr.h.k2": 1}, "set_out", {"v": 5})
    frame = lambda k: k.to_bytes(4, "big") + bytes([1, 0, 0])
    hit = sw.process(1, frame(1))[0][1]
    miss = sw.process(1, frame(2))[0][1]
    assert (hit[5], hit[6]) == (5, 0)        # __HIT__ -> end of pipeline
    assert (miss[5], miss[6]) == (0xEE, 0x22)  # __MISS__ -> t2


def test_direct_counter_counts_hits_only():
    sw = program("exact", counters=True)
    h = sw.table_add("t", {"hdr.h.k1": 1, "hdr.h.k2": 1}, "set_out", {"v": 5})
    for _ in range(3):
        lookup(sw, 1, 1)
    lookup(sw, 2, 2)
    assert sw.direct_counter_read("t", h) == (3, 3 * 10)
    assert sw.table_get("t", h).packets == 3
    sw.direct_counter_write("t", h, 0, 0)
    assert sw.direct_counter_read("t", h) == (0, 0)


def test_entry_lifecycle_errors():
    sw = program("exact", max_size=2)
    h = sw.table_add("t", {"hdr.h.k1": 1, "hdr.h.k2": 1}, "set_out", {"v": 5})
    with pytest.raises(AlreadyExistsError):
        sw.table_add("t", {"hdr.h.k1": 1, "hdr.h.k2": 1}, "set_out", {"v": 6})
    assert sw.table_find("t", {"hdr.h.k1": 1, "hdr.h.k2": 1}) == h
    assert sw.table_find("t", {"hdr.h.k1": 2, "hdr.h.k2": 1}) is None
    sw.table_modify("t", h, "set_out", {"v": 9})
    assert lookup(sw, 1, 1) == 9
    assert sw.table_get("t", h).args == (9,)
    sw.table_add("t", {"hdr.h.k1": 2, "hdr.h.k2": 1}, "NoAction")
    with pytest.raises(ResourceExhaustedError):
        sw.table_add("t", {"hdr.h.k1": 3, "hdr.h.k2": 1}, "NoAction")
    sw.table_delete("t", h)
    with pytest.raises(NotFoundError):
        sw.table_delete("t", h)
    assert lookup(sw, 1, 1) == 0xEE
    e = sw.table_entries("t")[0]
    assert (e.action, e.match, e.params, e.args) == ("NoAction", {"hdr.h.k1": 2, "hdr.h.k2": 1}, {}, ())
    mod = sw.table_entries("t")
    assert sw.table_get("t", mod[0].handle) == mod[0]


@pytest.mark.parametrize("call,message", [
    (lambda sw: sw.table_add("nope", {}, "set_out", {"v": 1}), "table 'nope'"),
    (lambda sw: sw.table_add("t", {"hdr.h.k1": 1, "hdr.h.k2": 1}, "fly", {}), "action 'fly'"),
    (lambda sw: sw.table_add("t", {"hdr.h.k1": 1, "hdr.h.k2": 1}, "set_out", {"w": 1}), "parameter"),
    (lambda sw: sw.table_add("t", {"hdr.h.k1": 1, "hdr.h.k2": 1}, "set_out", {"v": 256}), "parameter v"),
    (lambda sw: sw.table_add("t", {"hdr.h.k1": 1, "hdr.h.k2": 300}, "set_out", {"v": 1}), "hdr.h.k2"),
    (lambda sw: sw.table_add("t", {"hdr.h.k1": "x.y", "hdr.h.k2": 1}, "set_out", {"v": 1}), "hdr.h.k1"),
    (lambda sw: sw.table_add("t", {"hdr.h.k2": 1}, "set_out", {"v": 1}), "missing exact key"),
    (lambda sw: sw.table_add("t", {"hdr.h.k1": 1, "hdr.h.k2": 1, "z": 1}, "set_out", {"v": 1}), "unknown key"),
])
def test_bad_requests_name_the_object(call, message):
    sw = program("exact")
    with pytest.raises(EngineError, match=message):
        call(sw)


def test_program_description_for_the_runtime():
    sw = program("lpm", counters=True)
    t = sw.program.tables["t"]
    assert [(k.name, k.match_type, k.width) for k in t.keys] == [("hdr.h.k1", "lpm", 32), ("hdr.h.k2", "exact", 8)]
    assert t.actions == ("set_out", "miss", "NoAction")
    assert t.direct_counter == "t_counter"
    assert t.default_entry.action == "miss" and not t.default_entry.action_const
    a = sw.program.action_by_name("set_out")
    assert [(p.name, p.width) for p in a.params] == [("v", 8)]
    assert sw.program.counters["t_counter"].direct


def test_id_based_calls_with_lists():
    sw = program("ternary")
    info = sw.program.tables["t"]
    set_out = sw.program.action_by_name("set_out")
    h = sw.table_add(info.id, [("0x05", "0xff"), 1], set_out.id, [0x33], priority=1)
    assert lookup(sw, 5, 1) == 0x33
    assert sw.table_entries(info.id)[0].handle == h
    sw.table_set_default(info.id, set_out.id, [0x44])
    assert lookup(sw, 6, 1) == 0x44


def test_keyless_table_with_const_action_keeps_data_changeable():
    """action_const without action_entry_const: the action is fixed but its data is not."""
    p = Program()
    p.header("h", [("k1", 32), ("k2", 8), ("out", 8), ("out2", 8)])
    p.state("start", [extract("h")])
    p.deparse("h")
    p.action("set_out", [P("assign", F("h", "out"), R(0))], params=[("v", 8)])
    p.table("ingress", "t", [], ["set_out"], default="set_out", default_args=(7,))
    p.j["pipelines"][0]["tables"][0]["default_entry"]["action_const"] = True
    sw = Switch(p.build())
    assert lookup(sw, 0, 0) == 7
    sw.table_set_default("t", "set_out", {"v": 9})
    assert lookup(sw, 0, 0) == 9


def test_ternary_ties_and_deletes_keep_order():
    sw = program("ternary")
    a = sw.table_add("t", {"hdr.h.k1": "0&&&0", "hdr.h.k2": 1}, "set_out", {"v": 1}, priority=5)
    b = sw.table_add("t", {"hdr.h.k1": "7&&&0xff", "hdr.h.k2": 1}, "set_out", {"v": 2}, priority=5)
    c = sw.table_add("t", {"hdr.h.k1": "7&&&0x0f", "hdr.h.k2": 1}, "set_out", {"v": 3}, priority=9)
    assert lookup(sw, 7, 1) == 3
    sw.table_delete("t", c)
    assert lookup(sw, 7, 1) == 1        # equal priority: the entry installed first wins
    sw.table_delete("t", a)
    assert lookup(sw, 7, 1) == 2
    assert sw.table_find("t", {"hdr.h.k1": "7&&&0xff", "hdr.h.k2": 1}, priority=5) == b
    assert sw.table_find("t", {"hdr.h.k1": "7&&&0xff", "hdr.h.k2": 1}, priority=6) is None


def test_lpm_levels_come_and_go():
    sw = program("lpm")
    h16 = sw.table_add("t", {"hdr.h.k1": "10.1.0.0/16", "hdr.h.k2": 1}, "set_out", {"v": 16})
    sw.table_add("t", {"hdr.h.k1": "10.0.0.0/8", "hdr.h.k2": 1}, "set_out", {"v": 8})
    assert lookup(sw, 0x0A010101, 1) == 16
    sw.table_delete("t", h16)
    assert lookup(sw, 0x0A010101, 1) == 8
    sw.table_clear("t")
    assert lookup(sw, 0x0A010101, 1) == 0xEE
    assert sw.table_entries("t") == []
    sw.table_add("t", {"hdr.h.k1": "10.1.0.0/16", "hdr.h.k2": 1}, "set_out", {"v": 16})
    assert lookup(sw, 0x0A010101, 1) == 16
