"""The batch API: many frames per call into C, outputs returned in one buffer."""
from engine.bmv2 import SM, C, E, F, P, Program, extract, wrap

from p4sim.engine.native.switch import NativeSwitch


def program():
    """h.a selects: 1 unicast to port h.b, 2 multicast group 1, else drop; egress counts into r."""
    p = Program()
    p.header("h", [("a", 8), ("b", 8)])
    p.state("start", [extract("h")])
    p.deparse("h")
    p.register("r", 4, 32)
    p.action("uni", [P("assign", SM("egress_spec"), F("h", "b"))])
    p.action("multi", [P("assign", SM("mcast_grp"), C(1))])
    p.action("drop", [P("mark_to_drop", {"type": "header", "value": "standard_metadata"})])
    p.table("ingress", "sel", [("hdr.h.a", "exact", ("h", "a"))], ["uni", "multi", "drop"], default="drop")
    p.run("egress", "tally", [
        P("register_read", F("h", "b"), {"type": "register_array", "value": "r"}, C(0)),
        P("register_write", {"type": "register_array", "value": "r"}, C(0), wrap(E("+", F("h", "b"), C(1)), 32))])
    return p.build()


def switch():
    sw = NativeSwitch(program())
    sw.table_add("sel", {"hdr.h.a": 1}, "uni")
    sw.table_add("sel", {"hdr.h.a": 2}, "multi")
    sw.mc_group_set(1, [(5, 0), (6, 1)])
    return sw


PACKETS = [(1, b"\x01\x07x"), (1, b"\x02\x00y"), (1, b"\x09\x00z"), (2, b"\x01\x03"), (1, b"")]


def test_process_batch_equals_one_call_per_frame():
    one_by_one = switch()
    want = [one_by_one.process(port, frame) for port, frame in PACKETS]
    batched = switch()
    assert batched.process_batch(PACKETS) == want
    assert batched.register_read("r", 0) == one_by_one.register_read("r", 0) == 4
    assert [len(out) for out in want] == [1, 2, 0, 1, 0]


def test_batch_runner_reruns_preloaded_frames():
    sw = switch()
    runner = sw.batch_runner(PACKETS * 100)
    assert runner.run() == 400
    assert runner.run() == 400
    assert sw.stats["received"] == 1000 and sw.stats["emitted"] == 800
    outs = runner.outputs()
    assert [(i, port) for i, port, _ in outs[:4]] == [(0, 7), (1, 5), (1, 6), (3, 3)]
    assert sw.register_read("r", 0) == 800 % 256  # counted through the 8-bit h.b
