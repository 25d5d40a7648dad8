"""Action primitives: header validity, header stacks, registers, counters, exit, assert, jumps,
log_msg, random numbers."""
from p4sim.engine import Switch

from .bmv2 import SM, STK, C, E, F, H, M, P, Program, extract, extract_next, simple, wrap


def h(f):
    return F("h", f)


def one(sw, frame, port=1):
    out = sw.process(port, frame)
    assert sw.stats["internal_errors"] == 0, sw.last_internal_error
    assert len(out) == 1
    return out[0][1]


def test_add_and_remove_header():
    p = simple([("a", 8)], [P("add_header", H("x")), P("assign", F("x", "v"), C(0x5A)),
                            P("remove_header", H("h"))])
    p.header("x", [("v", 8), ("w", 8)])
    p.deparse("h", "x")
    data = one(Switch(p.build()), b"\x01rest")
    assert data == b"\x5a\x00rest"  # h removed, x added with its other fields zeroed


def test_add_header_on_a_valid_header_keeps_its_fields():
    p = simple([("a", 8)], [P("add_header", H("h"))])
    assert one(Switch(p.build()), b"\x42") == b"\x42"


def test_assign_header_copies_fields_and_validity():
    p = simple([("a", 8), ("b", 8)], [P("assign_header", H("x"), H("h"))])
    p.header("x", [("a", 8), ("b", 8)], type_name="h_t")
    p.deparse("h", "x")
    assert one(Switch(p.build()), b"\x01\x02") == b"\x01\x02\x01\x02"


def stack_program(prims):
    p = Program()
    p.stack("s", [("v", 8)], 3)
    p.header("h", [("idx", 8)])
    p.state("start", [extract("h"), extract_next("s"), extract_next("s")])
    p.deparse("h", "s[0]", "s[1]", "s[2]")
    p.run("ingress", "ing", [P("assign", SM("egress_spec"), C(1))] + prims)
    return Switch(p.build())


def test_push_front_shifts_up_and_invalidates_the_front():
    sw = stack_program([P("push", STK("s"), C(1)), P("add_header", H("s[0]")),
                        P("assign", F("s[0]", "v"), C(9))])
    assert one(sw, b"\x00\x01\x02rest") == b"\x00\x09\x01\x02rest"


def test_pop_front_shifts_down():
    sw = stack_program([P("pop", STK("s"), C(1))])
    assert one(sw, b"\x00\x01\x02rest") == b"\x00\x02rest"


def test_dynamic_stack_index():
    target = E("access_field", E("dereference_header_stack", STK("s"), h("idx")), 0)["value"]["value"]
    sw = stack_program([P("assign", {"type": "expression", "value": target}, C(0x77))])
    assert one(sw, b"\x01\x01\x02") == b"\x01\x01\x77"
    # an out-of-bounds index drops the packet instead of crashing the switch
    assert sw.process(1, b"\x05\x01\x02") == []
    assert sw.stats["internal_errors"] == 0


def register_program():
    p = simple([("idx", 8), ("a", 16)], [
        P("register_read", h("a"), {"type": "register_array", "value": "r"}, h("idx")),
        P("register_write", {"type": "register_array", "value": "r"}, h("idx"), wrap(E("+", h("a"), C(1)), 16)),
        P("count", {"type": "counter_array", "value": "c"}, h("idx")),
    ])
    p.register("r", 4, 16)
    p.counter("c", 4)
    return Switch(p.build())


def test_registers_read_and_write_in_the_data_plane():
    sw = register_program()
    sw.register_write("r", 2, 0xFFFF)
    assert one(sw, b"\x02\x00\x00") == b"\x02\xff\xff"
    assert sw.register_read("r", 2) == 0  # 0xffff + 1 wraps at 16 bits
    assert one(sw, b"\x02\x00\x00") == b"\x02\x00\x00"
    assert sw.register_read("r") == [0, 0, 1, 0]


def test_counters_count_packets_and_bytes():
    sw = register_program()
    for _ in range(3):
        one(sw, b"\x01\x00\x00extra")
    assert sw.counter_read("c", 1) == (3, 24)
    assert sw.counter_read("c") == [(0, 0), (3, 24), (0, 0), (0, 0)]
    sw.counter_reset("c")
    assert sw.counter_read("c", 1) == (0, 0)


def test_out_of_range_register_and_counter_index_are_ignored():
    sw = register_program()
    assert one(sw, b"\x09\x12\x34") == b"\x09\x00\x00"
    assert sw.register_read("r") == [0, 0, 0, 0]
    assert sw.counter_read("c") == [(0, 0)] * 4


def test_exit_stops_the_control_immediately():
    p = simple([("a", 8), ("b", 8)], [P("assign", h("a"), C(1)), P("exit"), P("assign", h("a"), C(2))])
    p.run("ingress", "after", [P("assign", h("b"), C(3))])
    p.j["pipelines"][0]["tables"][0]["base_default_next"] = "tbl_after"
    p.j["pipelines"][0]["tables"][0]["next_tables"] = {"ing": "tbl_after"}
    p.run("egress", "eg", [P("assign", h("b"), E("|", h("b"), C(0x10)))])
    assert one(Switch(p.build()), b"\x00\x00") == b"\x01\x10"  # egress still runs


def test_failed_assert_drops_the_packet():
    p = simple([("a", 8)], [P("assert", E("!=", h("a"), C(0)))])
    sw = Switch(p.build())
    assert sw.process(1, b"\x00") == []
    assert one(sw, b"\x01") == b"\x01"
    assert sw.stats["internal_errors"] == 0


def test_structured_jumps_as_p4c_emits_them():
    # a = (b == 0) ? 5 : 6, as p4c encodes a conditional inside an action; jump targets index the
    # action's primitives, and simple() puts one assign first
    prims = [P("_jump_if_zero", E("b2d", E("==", h("b"), C(0))), C(4)),
             P("assign", h("a"), C(5)), P("_jump", C(5)), P("assign", h("a"), C(6)),
             P("assign", h("c"), C(7))]
    sw = Switch(simple([("a", 8), ("b", 8), ("c", 8)], prims).build())
    assert one(sw, b"\x00\x00\x00") == b"\x05\x00\x07"
    assert one(sw, b"\x00\x01\x00") == b"\x06\x01\x07"


def test_backward_jumps_run_as_a_loop():
    prims = [P("assign", h("a"), wrap(E("+", h("a"), C(2)), 8)),
             P("assign", h("b"), wrap(E("+", h("b"), C(1)), 8)),
             P("_jump_if_zero", E("b2d", E("==", h("b"), C(3))), C(1))]
    sw = Switch(simple([("a", 8), ("b", 8)], prims).build())
    assert one(sw, b"\x00\x00") == b"\x06\x03"


def test_log_msg_goes_to_the_trace():
    prims = [P("log_msg", {"type": "string", "value": "a is {} and b is {}"},
               {"type": "parameters_vector", "value": [h("a"), h("b")]})]
    sw = Switch(simple([("a", 8), ("b", 8)], prims).build())
    lines = []
    sw.trace = lines.append
    one(sw, b"\x07\x09")
    assert any(line.endswith("a is 7 and b is 9") for line in lines)
    sw.trace = None
    one(sw, b"\x07\x09")
    assert len([line for line in lines if "a is" in line]) == 1


def test_random_number_within_bounds():
    prims = [P("modify_field_rng_uniform", h("a"), C(10), C(12))]
    sw = Switch(simple([("a", 8)], prims).build())
    seen = {one(sw, b"\x00")[0] for _ in range(60)}
    assert seen <= {10, 11, 12} and len(seen) > 1


def test_meta_fields_start_at_zero_for_every_packet():
    p = simple([("a", 8)], [P("assign", h("a"), M("m")), P("assign", M("m"), C(9))])
    p.meta(("m", 8))
    sw = Switch(p.build())
    assert one(sw, b"\x05") == b"\x00"
    assert one(sw, b"\x05") == b"\x00"


def meter_program():
    p = simple([("idx", 8), ("color", 8)], [
        P("execute_meter", {"type": "meter_array", "value": "m"}, h("idx"), h("color"))])
    p.j["meter_arrays"].append({"name": "m", "id": 0, "is_direct": False, "rate_count": 2,
                                "type": "packets", "size": 2})
    return Switch(p.build())


def test_unconfigured_meter_marks_green():
    sw = meter_program()
    assert [one(sw, b"\x00\x09")[1] for _ in range(5)] == [0] * 5


def test_two_rate_three_color_meter():
    sw = meter_program()
    now = [100.0]
    sw._meters["m"].clock = lambda: now[0]
    sw.meter_set("m", 1, cir=1, cburst=2, pir=2, pburst=3)
    assert sw.meter_get("m", 1) == (1, 2, 2, 3)
    colors = [one(sw, b"\x01\x00")[1] for _ in range(4)]
    assert colors == [0, 0, 1, 2]            # green, green, yellow, red
    now[0] += 1.0                            # +1 committed token, +2 peak tokens
    assert [one(sw, b"\x01\x00")[1] for _ in range(3)] == [0, 1, 2]
    assert one(sw, b"\x00\x00")[1] == 0      # cell 0 is still unconfigured
    sw.meter_reset("m", 1)
    assert one(sw, b"\x01\x00")[1] == 0
