"""Malformed and unsupported sources: exact messages at exact positions, never a traceback."""
import pytest
from compiler_helpers import compile_error, line_of, program, write

from p4sim.compiler import compile_file


def err_at(tmp_path, text, needle, message, nth=0):
    got = compile_error(tmp_path, text)
    line, col = line_of(text, needle, nth)
    assert got == f"prog.p4:{line}:{col}: error: {message}"


def test_syntax_error_points_at_token(tmp_path):
    text = program(ingress="apply { meta.a = 1 meta.b = 2; }")
    err_at(tmp_path, text, "meta.b = 2", "syntax error: unexpected 'meta'")


def test_unexpected_end_of_file(tmp_path):
    text = program().replace("V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;\n", "control X() {")
    got = compile_error(tmp_path, text)
    assert got.startswith("prog.p4:") and got.endswith("error: syntax error: unexpected end of file")


def test_undeclared_name(tmp_path):
    text = program(ingress="apply { meta.a = nosuch; }")
    err_at(tmp_path, text, "nosuch", "undeclared name 'nosuch'")


def test_unknown_field(tmp_path):
    text = program(ingress="apply { hdr.eth.dest = 1; }")
    err_at(tmp_path, text, "hdr.eth.dest", "header type 'ethernet_t' has no field 'dest'")


def test_width_mismatch_in_binary_op(tmp_path):
    text = program(ingress="apply { meta.c = meta.c + meta.a; }")
    err_at(tmp_path, text, "meta.c + meta.a", "operands of '+' have different types: bit<32> and bit<8> "
                                              "(cast one of them)")


def test_assignment_type_mismatch(tmp_path):
    text = program(ingress="apply { meta.a = hdr.eth.etype; }")
    err_at(tmp_path, text, "hdr.eth.etype;", "type mismatch: expected bit<8>, got bit<16>")


def test_condition_must_be_bool(tmp_path):
    text = program(ingress="apply { if (meta.a) { meta.b = 1; } }")
    err_at(tmp_path, text, "meta.a)", "condition must be bool, not bit<8>")


def test_write_to_in_parameter(tmp_path):
    text = program(ingress="action f(in bit<8> x) { x = 1; } apply { f(meta.a); }")
    err_at(tmp_path, text, "x = 1", "cannot write to 'x': it is an 'in' parameter")


def test_action_argument_count(tmp_path):
    text = program(ingress="action f(bit<8> x) { meta.a = x; } apply { f(); }")
    err_at(tmp_path, text, "f();", "action 'f' takes 1 argument, 0 given")


def test_unknown_match_kind(tmp_path):
    text = program(ingress="table t { key = { meta.a: fuzzy; } actions = { NoAction; } } apply { t.apply(); }")
    err_at(tmp_path, text, "meta.a: fuzzy", "unknown match kind 'fuzzy'")


def test_default_action_not_in_list(tmp_path):
    text = program(ingress="action a() {} table t { key = { meta.a: exact; } actions = { NoAction; } "
                           "default_action = a(); } apply { t.apply(); }")
    err_at(tmp_path, text, "a();", "default_action 'a' is not in the actions of table 't'", nth=0)


def test_unknown_parser_state(tmp_path):
    text = program(parser="state start { pkt.extract(hdr.eth); transition nowhere; }")
    err_at(tmp_path, text, "transition nowhere", "unknown parser state 'nowhere'")


def test_missing_start_state(tmp_path):
    text = program(parser="state begin { transition accept; }")
    err_at(tmp_path, text, "parser P", "parser 'P' has no 'start' state")


def test_stack_index_out_of_bounds(tmp_path):
    text = program(decls="header l_t { bit<8> v; }", hdr_fields="l_t[2] ls;",
                   ingress="apply { hdr.ls[2].v = 1; }")
    err_at(tmp_path, text, "2].v", "header stack index 2 out of bounds (size 2)")


def test_header_not_byte_aligned(tmp_path):
    text = program(decls="header odd_t { bit<7> v; }", hdr_fields="odd_t odd;")
    err_at(tmp_path, text, "header odd_t", "header 'odd_t' is 7 bits long; BMv2 needs headers to be a whole "
                                           "number of bytes")


def test_missing_main(tmp_path):
    text = program().replace("V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;", "")
    last = len(text.rstrip("\n").split("\n"))
    assert compile_error(tmp_path, text) == \
        f"prog.p4:{last}:1: error: the program has no 'main' instance (expected: V1Switch(...) main;)"


SUFFIX = " is not supported by p4sim-compile (outside its P4_16 subset; see docs/p4-subset.md)"


@pytest.mark.parametrize("parts,needle,what", [
    ({"decls": "header_union u_t { ethernet_t a; }"}, "header_union", "header_union"),
    ({"decls": "header v_t { varbit<32> opts; }"}, "varbit", "varbit"),
    ({"ingress": "meter(8, MeterType.packets) m; apply { }"}, "meter(8", "extern 'meter'"),
    ({"ingress": "table t { key = { meta.a: exact; } actions = { NoAction; } } "
                 "apply { t.apply(); t.apply(); }"}, "t.apply(); }",
     "applying table 't' more than once (BMv2 tables have one successor per action)"),
    ({"parser": "state start { pkt.extract(hdr.eth); if (hdr.eth.etype == 1) { transition accept; } "
                "transition accept; }"}, "if (hdr", "syntax error"),
    ({"parser": "state start { pkt.extract(hdr.eth); if (hdr.eth.etype == 1) { meta.a = 1; } "
                "transition accept; }"}, "if (hdr", "'if' inside a parser state (use select)"),
    ({"ingress": "apply { meta.c = meta.c / meta.c; }"}, "meta.c / meta.c",
     "'/' on non-constant values (BMv2 has no division)"),
    ({"ingress": "apply { hash(meta.c, HashAlgorithm.crc32_custom, 32w0, {meta.a}, 32w16); }"},
     "HashAlgorithm.crc32_custom", "hash algorithm HashAlgorithm.crc32_custom"),
])
def test_unsupported_constructs_say_so(tmp_path, parts, needle, what):
    text = program(**parts)
    got = compile_error(tmp_path, text)
    line, col = line_of(text, needle)
    if what == "syntax error":
        assert got.startswith("prog.p4:") and "syntax error: unexpected 'transition'" in got
    else:
        assert got == f"prog.p4:{line}:{col}: error: {what}{SUFFIX}"


def test_position_in_included_file(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "defs.p4").write_text("// a header file\n\nconst bit<8> X = 1;\nconst bit<8> Y = Z;\n")
    text = program(decls='#include "inc/defs.p4"')
    p = write(tmp_path, text)
    from p4sim.compiler import CompileError
    with pytest.raises(CompileError) as ei:
        compile_file(str(p))
    assert ei.value.pos.file.endswith("inc/defs.p4")
    assert (ei.value.pos.line, ei.value.pos.col) == (4, 18)
    assert ei.value.message == "undeclared name 'Z'"


def test_position_after_macros_and_includes(tmp_path):
    text = program(decls="#define TWICE(x) ((x) + (x))\n#define BAD nosuch",
                   ingress="apply {\n  meta.a = TWICE(meta.a);\n  meta.b = BAD;\n}")
    got = compile_error(tmp_path, text)
    line, _ = line_of(text, "meta.b = BAD")
    assert got.startswith(f"prog.p4:{line}:")
    assert got.endswith("error: undeclared name 'nosuch'")


def test_cpp_error_is_reported(tmp_path):
    text = program(decls='#include "missing.p4"')
    got = compile_error(tmp_path, text)
    assert "missing.p4" in got and "No such file" in got


def test_function_bodies_beyond_one_return_and_new_types_are_outside_the_subset(tmp_path):
    text = program(decls="bit<8> twice(in bit<8> x) { bit<8> y = x; return y + y; }")
    err_at(tmp_path, text, "{ bit<8> y", "a function body other than one 'return <expression>;'" + SUFFIX)
    text = program(decls="bit<8> pick(in bit<8> x) { return x > 1 ? x : 1; }")
    err_at(tmp_path, text, "x > 1 ?", "'?:' inside a function (use an if in the caller)" + SUFFIX)
    text = program(decls="bit<8> bump(inout bit<8> x) { return x; }")
    err_at(tmp_path, text, "inout bit<8> x", "'inout' parameter of a function (only 'in')" + SUFFIX)
    text = program(decls="bit<8> one() { return 1; }", ingress="apply { one(); }")
    err_at(tmp_path, text, "one();", "the result of function 'one' is not used")
    text = program(decls="type bit<9> Port_t;")
    err_at(tmp_path, text, "type bit<9>", "'type' declarations" + SUFFIX.replace(" is ", " are ") + "; use typedef")


def test_value_sets_and_sub_parsers_are_outside_the_subset(tmp_path):
    text = program(parser="value_set<bit<16>>(4) types; state start { pkt.extract(hdr.eth); transition accept; }")
    err_at(tmp_path, text, "value_set", "extern 'value_set'" + SUFFIX)
    sub = "parser Sub(packet_in pkt, out headers_t hdr) { state start { transition accept; } }"
    text = program(decls=sub, parser="Sub() sub; state start { pkt.extract(hdr.eth); transition accept; }")
    err_at(tmp_path, text, "Sub() sub", "instantiating a parser inside another (sub-parsers)" + SUFFIX)


def test_calling_a_stack_size_is_an_error_not_a_crash(tmp_path):
    # .size is folded to a literal before the call is checked (found by typing the checker)
    text = program(decls="header l_t { bit<8> v; }", hdr_fields="l_t[2] ls;", ingress="apply { hdr.ls.size(); }")
    err_at(tmp_path, text, "hdr.ls.size()", "'size' is a bit<32> field, not a method")


def test_a_table_without_core_p4_has_no_implicit_noaction(tmp_path):
    text = """
match_kind { exact }
extern packet_in {}
extern packet_out {}
struct standard_metadata_t { bit<9> ingress_port; }
header h_t { bit<8> x; }
struct H { h_t x; }
struct M {}
parser P(packet_in pk, out H h, inout M m, inout standard_metadata_t sm) { state start { transition accept; } }
control C(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action a() {}
    table t { key = { h.x.x: exact; } actions = { a; } }
    apply { t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control D(packet_out pk, in H h) { apply {} }
package V1Switch(P p, C vr, I ig, E eg, C ck, D dep);
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""
    err_at(tmp_path, text, "table t", "table 't' has no default_action and NoAction is not declared "
                                      "(include <core.p4>)")
