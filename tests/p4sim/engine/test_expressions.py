"""Expression semantics: widths and wraparound, signed arithmetic, slices, concatenation, casts."""
import pytest

from p4sim.engine import Switch

from .bmv2 import IF, B, C, E, F, H, P, simple, wrap

FIELDS = [("a", 8), ("b", 8), ("c", 16), ("s", 8, True), ("t", 8, True)]


def run(prims, a=0, b=0, c=0, s=0, t=0):
    """Run `prims` in ingress on h = {a, b, c, s, t}; -> the emitted h as a dict of bit patterns."""
    sw = Switch(simple(FIELDS, prims).build())
    frame = bytes([a, b]) + c.to_bytes(2, "big") + bytes([s & 0xFF, t & 0xFF]) + b"payload"
    out = sw.process(3, frame)
    assert sw.stats["internal_errors"] == 0, sw.last_internal_error
    assert len(out) == 1 and out[0][0] == 1
    data = out[0][1]
    assert data[6:] == b"payload"
    return {"a": data[0], "b": data[1], "c": int.from_bytes(data[2:4], "big"), "s": data[4], "t": data[5]}


def h(field):
    return F("h", field)


def test_unsigned_add_wraps_at_the_field_width():
    assert run([P("assign", h("a"), wrap(E("+", h("a"), h("b")), 8))], a=250, b=10)["a"] == 4
    # even without p4c's mask, writing a field keeps its low bits
    assert run([P("assign", h("a"), E("+", h("a"), h("b")))], a=250, b=10)["a"] == 4


def test_unsigned_subtract_wraps_below_zero():
    assert run([P("assign", h("c"), wrap(E("-", h("a"), h("b")), 16))], a=3, b=5)["c"] == 0xFFFE


def test_multiply_and_shifts_keep_low_bits():
    out = run([P("assign", h("c"), wrap(E("*", h("a"), h("b")), 16)),
               P("assign", h("a"), wrap(E("<<", h("a"), C(5)), 8)),
               P("assign", h("b"), E(">>", h("b"), C(3)))], a=0x93, b=0xF1)
    assert out["c"] == (0x93 * 0xF1) & 0xFFFF
    assert out["a"] == (0x93 << 5) & 0xFF
    assert out["b"] == 0xF1 >> 3


def test_slice_and_concat_via_shift_and_mask():
    # a = c[11:4]; c = a ++ b  (as p4c encodes slices and concatenation)
    out = run([P("assign", h("a"), wrap(E(">>", h("c"), C(4)), 8)),
               P("assign", h("c"), E("|", wrap(E("<<", h("b"), C(8)), 16), h("b")))], b=0x5A, c=0xABCD)
    assert out["a"] == 0xBC
    assert out["c"] == 0x5A5A


def test_bitwise_not_and_logic():
    out = run([P("assign", h("a"), wrap(E("~", h("a")), 8)),
               P("assign", h("b"), E("b2d", E("and", E("==", h("c"), C(7)), E("not", E("<", h("b"), C(3))))))],
              a=0x0F, b=9, c=7)
    assert out["a"] == 0xF0
    assert out["b"] == 1


def test_ternary_operator_and_validity():
    out = run([P("assign", h("a"), IF(E("d2b", h("b")), C(11), C(22))),
               P("assign", h("b"), E("b2d", E("valid", H("h"))))], b=0)
    assert out == {**out, "a": 22, "b": 1}


def test_division_and_modulo():
    out = run([P("assign", h("a"), E("/", h("a"), C(7))), P("assign", h("b"), E("%", h("b"), C(7)))], a=100, b=100)
    assert (out["a"], out["b"]) == (14, 2)


def test_signed_add_wraps_in_twos_complement():
    # int<8> s = s + t, as p4c encodes it: two_comp_mod(s + t, 8)
    out = run([P("assign", h("s"), E("two_comp_mod", E("+", h("s"), h("t")), C(8)))], s=100, t=100)
    assert out["s"] == (200 - 256) & 0xFF  # -56


def test_signed_fields_compare_as_negative_numbers():
    out = run([P("assign", h("a"), E("b2d", E("<", h("s"), C(0)))),
               P("assign", h("b"), E("b2d", E("<", h("s"), h("t"))))], s=-3, t=2)
    assert (out["a"], out["b"]) == (1, 1)


@pytest.mark.parametrize("s,t,want", [(100, 100, 127), (-100, -100, -128), (-100, 50, -50)])
def test_signed_saturating_add(s, t, want):
    out = run([P("assign", h("s"), E("sat_cast", E("+", h("s"), h("t")), C(8)))], s=s, t=t)
    assert out["s"] == want & 0xFF


@pytest.mark.parametrize("a,b,want", [(250, 10, 255), (5, 6, 11)])
def test_unsigned_saturating_add(a, b, want):
    assert run([P("assign", h("a"), E("usat_cast", E("+", h("a"), h("b")), C(8)))], a=a, b=b)["a"] == want


def test_signed_field_keeps_an_unsigned_value_written_to_it():
    """simple_switch quirk (seen on agg_mini): int<8> s = (bit<8>)0xf6 computes as +246, not -10."""
    out = run([P("assign", h("s"), h("a")),
               P("assign", h("b"), E("b2d", E(">", h("s"), C(0)))),
               P("assign", h("t"), E("sat_cast", E("+", h("s"), C(1)), C(8)))], a=0xF6)
    assert out["s"] == 0xF6
    assert out["b"] == 1
    assert out["t"] == 0x7F  # 246 + 1 saturates at +127


def test_bool_constants_and_negative_hexstr():
    out = run([P("assign", h("a"), E("b2d", E("or", B(False), B(True)))),
               P("assign", h("s"), C(-2))])
    assert (out["a"], out["s"]) == (1, 0xFE)
