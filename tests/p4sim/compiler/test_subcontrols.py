"""Sub-controls: controls instantiated and applied inside controls, inlined and named as p4c does
(<TopControl>.<instance>.<object>), run on p4sim's engine, and the errors around them."""
import pathlib
import struct

import pytest
from compiler_helpers import by_name, compile_error, compile_text, line_of, program

from p4sim.compiler import compile_file
from p4sim.engine import Switch

EXAMPLE = pathlib.Path(__file__).resolve().parents[3] / "examples" / "p4" / "group_subcontrols.p4"


@pytest.fixture(scope="module")
def example():
    return compile_file(str(EXAMPLE))


def test_objects_are_named_after_the_instance_path(example):
    doc = example.bmv2
    user_tables = [t["name"] for p in doc["pipelines"] for t in p["tables"] if not t["name"].startswith("tbl_")]
    assert sorted(user_tables) == ["SIngress.admission.jobs", "SIngress.finish.finish"]
    assert [r["name"] for r in doc["register_arrays"]] == ["SIngress.low.cells", "SIngress.high.cells"]
    assert [c["name"] for c in doc["counter_arrays"]] == ["SIngress.finish.tally.hits"]
    actions = {a["name"] for a in doc["actions"]}
    assert {"SIngress.admission.admit", "SIngress.admission.deny", "SIngress.finish.stamp", "NoAction"} <= actions
    jobs = by_name(doc["pipelines"][0]["tables"], "SIngress.admission.jobs")
    assert [k["name"] for k in jobs["key"]] == ["job"]          # the key as written in the sub-control
    assert jobs["max_size"] == 16


def test_p4info_names_and_aliases(example):
    info = example.p4info
    names = {(x.preamble.name, x.preamble.alias) for x in info.tables}
    assert names == {("SIngress.admission.jobs", "jobs"), ("SIngress.finish.finish", "finish")}
    assert {(x.preamble.name, x.preamble.alias) for x in info.registers} == {
        ("SIngress.low.cells", "low.cells"), ("SIngress.high.cells", "high.cells")}
    assert [(x.preamble.name, x.preamble.alias) for x in info.counters] == [("SIngress.finish.tally.hits", "hits")]
    assert {x.preamble.name for x in info.actions} == {
        "NoAction", "SIngress.admission.admit", "SIngress.admission.deny", "SIngress.finish.stamp"}
    jobs = next(t for t in info.tables if t.preamble.name == "SIngress.admission.jobs")
    assert [(m.name, m.bitwidth) for m in jobs.match_fields] == [("job", 8)]


def _agg(job, slot, value):
    return bytes(12) + b"\x88\xb5" + struct.pack(">BBIIBB", job, slot, value, 0, 0, 0)


def test_stages_run_in_order_with_their_own_state(example):
    sw = Switch(example.bmv2)
    sw.table_add("SIngress.admission.jobs", {"job": 2}, "SIngress.admission.admit", {"port": 3})
    sw.table_add("SIngress.admission.jobs", {"job": 3}, "SIngress.admission.admit", {"port": 4})
    sw.table_add("SIngress.finish.finish", {"hdr.agg.job": 2}, "SIngress.finish.stamp", {"status": 7})
    outs = [sw.process(1, p) for p in (_agg(2, 1, 10), _agg(2, 1, 5), _agg(3, 1, 100), _agg(2, 9, 1),
                                       _agg(5, 1, 1), bytes(14))]
    fields = [[(port, struct.unpack(">BBIIBB", data[14:])) for port, data in out] for out in outs]
    assert fields == [
        [(3, (2, 1, 10, 10, 1, 7))],     # low.cells[1] = 10, stamped by finish
        [(3, (2, 1, 5, 15, 1, 7))],      # low.cells[1] = 15
        [(4, (3, 1, 100, 0, 1, 0))],     # odd job: high.cells; finish misses (NoAction)
        [(3, (2, 9, 1, 0, 1, 7))],       # slot out of range: Accumulate returns early, Finish still runs
        [],                              # job 5 denied by admission
        [],                              # no agg header: dropped, exit
    ]
    assert sw.register_read("SIngress.low.cells") == [0, 15, 0, 0, 0, 0, 0, 0]
    assert sw.register_read("SIngress.high.cells") == [0, 100, 0, 0, 0, 0, 0, 0]
    assert sw.counter_read("SIngress.finish.tally.hits", 1) == (4, 4 * 26)   # 26-byte frames
    assert sw.stats["internal_errors"] == 0


def test_in_parameters_are_copied_at_the_call(tmp_path):
    """P4 copy-in: the sub-control sees the argument's value at the call, even after writing the
    argument's storage through another parameter."""
    text = program(
        decls="control Sub(in bit<8> x, inout bit<8> y, out bit<8> z) { apply { y = 9; z = x; } }",
        ingress="Sub() sub; apply { meta.a = 5; sub.apply(meta.a, meta.a, meta.b); sm.egress_spec = 1; "
                "hdr.eth.dst = meta.a ++ meta.b ++ 32w0; }")
    sw = Switch(compile_text(tmp_path, text).bmv2)
    [(port, data)] = sw.process(0, bytes(14))
    assert port == 1 and data[:2] == bytes([9, 5])


def test_name_annotations_inside_sub_controls(tmp_path):
    text = program(
        decls='control Sub(inout meta_t m) { @name("renamed") register<bit<8>>(2) r; '
              '@name(".global_t") table t { key = { m.a: exact; } actions = { NoAction; } } '
              'apply { r.write(0, m.a); t.apply(); } }',
        ingress="Sub() s; apply { s.apply(meta); }")
    res = compile_text(tmp_path, text)
    assert [r["name"] for r in res.bmv2["register_arrays"]] == ["Ing.s.renamed"]
    assert [t.preamble.name for t in res.p4info.tables] == ["global_t"]


def test_directionless_parameter_and_nested_return(tmp_path):
    text = program(
        decls="control Sub(bit<8> k, inout headers_t h) { apply { if (k == 1) { h.eth.etype = 1; return; } "
              "h.eth.etype = 2; } }",
        ingress="Sub() one; Sub() two; apply { one.apply(1, hdr); hdr.eth.src = 48w7; two.apply(2, hdr); "
                "hdr.eth.dst = (bit<48>)hdr.eth.etype; sm.egress_spec = 1; }")
    sw = Switch(compile_text(tmp_path, text).bmv2)
    [(_, data)] = sw.process(0, bytes(14))
    assert data[:6] == (2).to_bytes(6, "big") and data[6:12] == (7).to_bytes(6, "big")


def test_functions_are_inlined_at_each_call(tmp_path):
    text = program(
        decls="header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; } "
              "bit<8> avg(in bit<8> x, in bit<8> y) { return (bit<8>)(((bit<9>)x + (bit<9>)y) >> 1); } "
              "bool big(bit<8> x) { return x > 100; }",
        hdr_fields="h_t h;", parser="state start { pkt.extract(hdr.h); transition accept; }",
        deparser="pkt.emit(hdr.h);",
        ingress="action set(bit<8> v) { hdr.h.d = avg(v, hdr.h.a); } "
                "table t { key = { hdr.h.a: exact; } actions = { set; } } "
                "apply { sm.egress_spec = 1; hdr.h.c = avg(hdr.h.a, avg(hdr.h.b, 8w0)); "
                "if (big(hdr.h.a)) { hdr.h.b = 1; } t.apply(); }")
    sw = Switch(compile_text(tmp_path, text).bmv2)
    sw.table_add("Ing.t", {"hdr.h.a": 200}, "Ing.set", {"v": 100})
    assert sw.process(0, bytes([200, 40, 0, 0])) == [(1, bytes([200, 1, 110, 150]))]
    assert sw.process(0, bytes([20, 40, 0, 0])) == [(1, bytes([20, 40, 20, 0]))]


def err(tmp_path, text, needle, message):
    got = compile_error(tmp_path, text)
    line, col = line_of(text, needle)
    assert got == f"prog.p4:{line}:{col}: error: {message}"


SUB = "control Sub(inout meta_t m) { apply { m.a = 1; } }"


def test_constructor_arguments_are_outside_the_subset(tmp_path):
    err(tmp_path, program(decls=SUB, ingress="Sub(3) s; apply { s.apply(meta); }"), "Sub(3) s",
        "constructor arguments for control 'Sub' is not supported by p4sim-compile (outside its P4_16 "
        "subset; see docs/p4-subset.md)")


def test_a_control_cannot_instantiate_itself(tmp_path):
    text = program(decls="control Sub(inout meta_t m) { Sub() again; apply { again.apply(m); } }",
                   ingress="Sub() s; apply { s.apply(meta); }")
    err(tmp_path, text, "Sub() again", "control 'Sub' instantiates itself (Sub -> Sub)")


def test_an_instance_is_applied_once(tmp_path):
    err(tmp_path, program(decls=SUB, ingress="Sub() s; apply { s.apply(meta); s.apply(meta); }"),
        "s.apply(meta); }", "applying control instance 's' more than once (its tables would be applied twice; "
        "instantiate the control once per use) is not supported by p4sim-compile (outside its P4_16 subset; "
        "see docs/p4-subset.md)")


def test_apply_arguments_are_checked(tmp_path):
    err(tmp_path, program(decls=SUB, ingress="Sub() s; apply { s.apply(); }"), "s.apply()",
        "'s.apply' takes 1 argument, 0 given")
    err(tmp_path, program(decls=SUB, ingress="Sub() s; apply { s.apply(hdr); }"), "hdr); }",
        "argument for 'm' has type headers_t, expected meta_t")
    err(tmp_path, program(decls="control Sub(out bit<8> x) { apply { x = 1; } }",
                          ingress="Sub() s; apply { s.apply(3); }"), "3); }",
        "argument for 'out x' must be a variable, field or header (an l-value)")
    err(tmp_path, program(decls="control Sub(in bit<8> x) { apply { x = 1; } }",
                          ingress="Sub() s; apply { s.apply(meta.a); }"), "x = 1",
        "cannot write to 'x': it is an 'in' parameter")


def test_apply_only_in_apply_blocks(tmp_path):
    err(tmp_path, program(decls=SUB, ingress="Sub() s; action a() { s.apply(meta); } apply { a(); }"),
        "s.apply(meta)", "controls can only be applied in a control's apply block")


def test_overlapping_arguments_are_refused(tmp_path):
    text = program(decls="control Sub(inout meta_t m, inout bit<8> x) { apply { x = m.a; } }",
                   ingress="Sub() s; apply { s.apply(meta, meta.a); }")
    err(tmp_path, text, "meta.a); }", "passing overlapping storage to two parameters of 's.apply' is not "
        "supported by p4sim-compile (outside its P4_16 subset; see docs/p4-subset.md)")


def test_sub_controls_in_checksum_controls_are_refused(tmp_path):
    text = program(decls=SUB.replace("inout meta_t m", "inout meta_t m"),
                   verify="").replace("control VC(inout headers_t hdr, inout meta_t meta) { apply {  } }",
                                      "control VC(inout headers_t hdr, inout meta_t meta) { Sub() s; "
                                      "apply { s.apply(meta); } }")
    err(tmp_path, text, "control VC", "tables, extern instances or sub-controls in the verifyChecksum control "
        "is not supported by p4sim-compile (outside its P4_16 subset; see docs/p4-subset.md)")
