"""BMv2 JSON expressions as C with the Python engine's results (infinite-precision arithmetic).

Python computes every intermediate value exactly and masks only on stores; C must pick a
machine type that gives the same bits.  Each expression gets an interval (the range of its
exact value, from the widths of its leaves) and a demand from its consumer: either the exact
value (comparisons, shifts right, division, indices, saturation) or only its low k bits (a
store into a bit<k> field, operands of +, -, *, <<, &, |, ^, ~, whose low bits depend only on
their operands' low bits).  From both it picks a container:

    u64   uint64_t: exact when the value is in [0, 2^64), otherwise valid modulo 2^64
    i64   int64_t:  exact (the value is in the int64 range)
    w     wide_t:   P4_WL limbs, two's complement, exact or valid modulo 2^(64*P4_WL)
    bool  int 0/1

Ring operations run in uint64_t (wrapping, never undefined) whenever 64 bits are enough for
the demand or the exact result; otherwise in wide_t with as many limbs as needed.  A value
whose exact form would need more than MAX_BITS bits is not compiled (NativeUnsupported).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

from ..program import FieldInfo, Json, RegisterInfo
from ..program_loader import parse_hexstr
from .errors import NativeUnsupported
from .layout import CStack, FieldRef, HeaderType

if TYPE_CHECKING:
    from .cgen import ProgramC

Interval: TypeAlias = tuple[int, int]   # the range [lo, hi] of an exact value

U64_MAX = (1 << 64) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
MAX_BITS = 2048
RING = {"+": "add", "-": "sub", "*": "mul", "&": "and", "|": "or", "^": "xor"}
COMPARE = ("==", "!=", "<", "<=", ">", ">=")


def fits_u64(lo: int, hi: int) -> bool:
    return lo >= 0 and hi <= U64_MAX


def fits_i64(lo: int, hi: int) -> bool:
    return lo >= I64_MIN and hi <= I64_MAX


def signed_bits(lo: int, hi: int) -> int:
    """Bits of a two's-complement container that holds every value of [lo, hi]."""
    return max(lo.bit_length(), hi.bit_length()) + 1


def limbs_for_bits(bits: int) -> int:
    return max(1, (bits + 63) // 64)


class V:
    """A generated C value: `code` in container `ct`; lo/hi bound its exact value."""
    __slots__ = ("code", "ct", "exact", "hi", "lo")

    def __init__(self, code: str, ct: str, exact: bool, lo: int | None = None, hi: int | None = None) -> None:
        self.code, self.ct, self.exact, self.lo, self.hi = code, ct, exact, lo, hi

    def bounds(self) -> Interval | None:
        """(lo, hi) of an exact value; None when only its low bits are valid."""
        if self.exact and self.lo is not None and self.hi is not None:
            return (self.lo, self.hi)
        return None


class ExactV(V):
    """A V that holds the exact value (not just its low bits), so its bounds are known."""
    __slots__ = ()
    lo: int
    hi: int

    def __init__(self, v: V) -> None:
        assert v.exact and v.lo is not None and v.hi is not None
        super().__init__(v.code, v.ct, True, v.lo, v.hi)


class Lv:
    """A C lvalue of a field: `code` (e.g. "st->h2_eth.f0_dst") and how the field is stored."""
    __slots__ = ("code", "ref")

    def __init__(self, code: str, ref: FieldRef) -> None:
        self.code, self.ref = code, ref


def c_string(text: str) -> str:
    out = []
    for ch in text.encode("utf-8"):
        c = chr(ch)
        if c in "\\\"":
            out.append("\\" + c)
        elif 32 <= ch < 127 and c != "?":
            out.append(c)
        else:
            out.append(f"\\{ch:03o}")
    return '"' + "".join(out) + '"'


class ExprC:
    """Expression compiler for one context (an action, a parser state, a control's nodes).

    `cg` is the program generator (layout, program, wide-limb bookkeeping); `params(i)` gives
    (C code, width, limbs) of action parameter i; `ptr` names the pstate pointer.
    """

    def __init__(self, cg: ProgramC, where: str, params: Callable[[int], tuple[str, int, int]] | None = None,
                 ptr: str = "st") -> None:
        self.cg = cg
        self.prog = cg.prog
        self.layout = cg.layout
        self.where = where
        self.params = params
        self.ptr = ptr
        self.uses_index = False   # a stack index computed at run time: check sw->abort after
        self._iv: dict[int, Interval | None] = {}

    def unsupported(self, msg: str) -> NoReturn:
        raise NativeUnsupported(f"{self.where}: {msg}")

    # ---- constants and conversions ---------------------------------------------------------
    def const(self, v: int) -> V:
        if 0 <= v <= U64_MAX:
            return V(f"{v:#x}ULL", "u64", True, v, v)
        if I64_MIN <= v < 0:
            return V(f"((int64_t){v & U64_MAX:#x}ULL)", "i64", True, v, v)
        return V(self.wconst(v), "w", True, v, v)

    def wconst(self, v: int) -> str:
        bits = signed_bits(v, v)
        if bits > MAX_BITS:
            self.unsupported(f"constant {v:#x} is too wide")
        self.cg.need_bits(bits)
        return self.cg.wide_constant(v)

    def as_u64(self, v: V) -> str:
        """C code for v modulo 2^64."""
        if v.ct == "w":
            return f"w_lo({v.code})"
        if v.ct == "u64":
            return v.code
        return f"((uint64_t)({v.code}))"

    def as_wide(self, v: V) -> str:
        if v.ct == "w":
            return v.code
        if v.ct == "i64":
            return f"w_from_i64({v.code})"
        return f"w_from_u64((uint64_t)({v.code}))"

    def convert(self, v: V, ct: str) -> str:
        """An exact value in container ct (the caller checked that it fits)."""
        if ct == v.ct:
            return v.code
        if ct == "w":
            return self.as_wide(v)
        if ct == "u64":
            return self.as_u64(v)
        if v.ct == "w":
            return f"((int64_t)w_lo({v.code}))"
        return f"((int64_t)({v.code}))"

    def container(self, lo: int, hi: int) -> str:
        """The narrowest container holding [lo, hi] exactly."""
        if fits_i64(lo, hi):
            return "i64"
        if fits_u64(lo, hi):
            return "u64"
        bits = signed_bits(lo, hi)
        if bits > MAX_BITS:
            self.unsupported(f"a value needs {bits} bits")
        self.cg.need_bits(bits)
        return "w"

    def exact(self, node: Json) -> ExactV:
        v = self.gen(node, None)
        if not v.exact:  # pragma: no cover - gen(None) always returns exact values
            self.unsupported("internal: inexact value where an exact one is needed")
        return ExactV(v)

    def index_code(self, node: Json) -> str:
        """uint64_t code of an index; negative values become huge (out of any range)."""
        v = self.exact(node)
        if v.ct == "w":
            if v.lo >= 0 and v.hi <= U64_MAX:
                return f"w_lo({v.code})"
            return (f"(w_neg_p({v.code}) || w_cmp({v.code}, w_from_u64(UINT64_MAX)) > 0 ? UINT64_MAX "
                    f": w_lo({v.code}))")
        return self.as_u64(v)

    def i64_code(self, node: Json, what: str) -> str:
        v = self.exact(node)
        if not fits_i64(v.lo, v.hi):
            self.unsupported(f"{what} does not fit 64 bits")
        return self.convert(v, "i64")

    def cond(self, node: Json | None) -> str:
        v = self.gen(node, None)
        return self.truth(v)

    def truth(self, v: V) -> str:
        if v.ct == "bool":
            return v.code
        if v.ct == "w":
            return f"w_nonzero({v.code})"
        return f"({v.code} != 0)"

    # ---- intervals -------------------------------------------------------------------------
    def iv(self, node: Json) -> Interval | None:
        """(lo, hi) of the exact value of an int expression, or None if too large to bound."""
        key = id(node)
        if key not in self._iv:
            self._iv[key] = self._interval(node)
        return self._iv[key]

    def _interval(self, node: Json) -> Interval | None:
        t = node.get("type")
        v: Any = node.get("value")
        if t == "hexstr":
            x = parse_hexstr(v)
            return (x, x)
        if t == "bool":
            return (0, 1)
        if t == "$c":
            return (node["lo"], node["hi"])
        if t in ("runtime_data", "local"):
            _code, width, _limbs = self.param(int(v))
            return (0, (1 << width) - 1)
        if t in ("field", "stack_field"):
            return self.field_range(self.lvalue(node).ref)
        if t == "register":
            reg = self.register(v[0])
            return (0, (1 << reg.width) - 1)
        if t == "expression":
            return self.iv(v) if "op" not in v else self._op_interval(v)
        if "op" in node:
            return self._op_interval(node)
        return None

    @staticmethod
    def field_range(ref: FieldRef) -> Interval:
        if ref.signed:
            return (-(1 << (ref.width - 1)), (1 << ref.width) - 1)
        return (0, (1 << ref.width) - 1)

    def _op_interval(self, e: Json) -> Interval | None:
        op = e.get("op")
        left: Any = e.get("left")     # None for unary operators
        right: Any = e.get("right")
        if op in COMPARE or op in ("and", "or", "not", "d2b", "b2d", "valid"):
            return (0, 1)
        if op == "last_stack_index":
            return (-1, self.stack(right).size - 1)
        if op == "size_stack":
            return (0, self.stack(right).size)
        if op == "access_field":
            return self.field_range(self.lvalue(e).ref)
        if op in ("two_comp_mod", "sat_cast", "usat_cast"):
            w = self.cast_width(right)
            if op == "usat_cast":
                lo, hi = 0, (1 << w) - 1
            else:
                lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
            if op == "two_comp_mod":
                return (lo, hi)
            a = self.iv(left)
            if a is None:
                return (lo, hi)
            return (min(max(a[0], lo), hi), max(min(a[1], hi), lo))
        if op == "?":
            a, b = self.iv(left), self.iv(right)
            if a is None or b is None:
                return None
            return (min(a[0], b[0]), max(a[1], b[1]))
        if op == "~":
            a = self.iv(right)
            return None if a is None else (-a[1] - 1, -a[0] - 1)
        a, b = self.iv(left) if left is not None else None, self.iv(right) if right is not None else None
        if op in ("&", "|", "^"):
            return self._bitwise_interval(op, a, b)
        if a is None or b is None:
            return None
        if op == "+":
            return (a[0] + b[0], a[1] + b[1])
        if op == "-":
            return (a[0] - b[1], a[1] - b[0])
        if op == "*":
            products = [x * y for x in a for y in b]
            return (min(products), max(products))
        if op == "<<":
            if b[0] < 0 or b[1] > MAX_BITS:
                return None
            corners = [x << s for x in a for s in b]
            return (min(corners), max(corners))
        if op == ">>":
            if b[0] < 0:
                return None
            top = min(b[1], max(a[0].bit_length(), a[1].bit_length()) + 1)
            corners = [x >> s for x in a for s in (b[0], max(b[0], top))]
            return (min(corners), max(corners))
        if op == "/":
            m = max(abs(a[0]), abs(a[1]))
            if a[0] >= 0 and b[0] >= 0:
                return (0, a[1] // max(b[0], 1) if b[0] else a[1])
            return (-m, m)
        if op == "%":
            lo, hi = min(0, b[0] + 1), max(0, b[1] - 1)
            if a[0] >= 0 and b[0] >= 0:
                hi = min(hi, a[1])
            return (lo, hi)
        return None

    @staticmethod
    def _bitwise_interval(op: str, a: Interval | None, b: Interval | None) -> Interval | None:
        if op == "&":
            if a is not None and a[0] >= 0 and b is not None and b[0] >= 0:
                return (0, min(a[1], b[1]))
            if a is not None and a[0] >= 0:
                return (0, a[1])
            if b is not None and b[0] >= 0:
                return (0, b[1])
        if a is None or b is None:
            return None
        n = max(signed_bits(a[0], a[1]), signed_bits(b[0], b[1]))
        if a[0] >= 0 and b[0] >= 0:
            return (0, (1 << n) - 1)
        return (-(1 << n), (1 << n) - 1)

    def cast_width(self, node: Json | None) -> int:
        if node is None or node.get("type") != "hexstr":
            self.unsupported("a cast to a width computed at run time")
        w = parse_hexstr(node["value"])
        if not 0 < w <= MAX_BITS:
            self.unsupported(f"cast to {w} bits")
        return w

    # ---- names -----------------------------------------------------------------------------
    def register(self, name: str) -> RegisterInfo:
        reg = self.prog.registers.get(name)
        if reg is None:
            self.unsupported(f"unknown register {name!r}")
        return reg

    def stack(self, node: Json | None) -> CStack:
        if node is None or node.get("type") != "header_stack" or node.get("value") not in self.layout.stacks:
            self.unsupported(f"expected a header stack, got {node!r}")
        return self.layout.stacks[node["value"]]

    def param(self, i: int) -> tuple[str, int, int]:
        if self.params is None:
            self.unsupported("action parameter used outside an action")
        return self.params(i)

    # ---- headers and lvalues ---------------------------------------------------------------
    def header(self, node: Json | None) -> tuple[str, HeaderType]:
        """-> (C lvalue of the header struct, HeaderType)."""
        if node is None:
            self.unsupported("missing header operand")
        t = node.get("type")
        v: Any = node.get("value")
        if t == "header":
            h = self.layout.headers.get(v)
            if h is None:
                self.unsupported(f"unknown header {v!r}")
            return f"{self.ptr}->{h.access}", h.htype
        if t == "expression":
            return self.header(v)
        if node.get("op") == "dereference_header_stack":
            cs = self.stack(node["left"])
            right = node["right"]
            if right.get("type") == "hexstr" and 0 <= parse_hexstr(right["value"]) < cs.size:
                return f"{self.ptr}->{cs.array}[{parse_hexstr(right['value'])}]", cs.htype
            self.uses_index = True
            return f"{self.ptr}->{cs.array}[rt_idx(sw, {self.index_code(right)}, {cs.size})]", cs.htype
        self.unsupported(f"expected a header, got {node!r}")

    def lvalue(self, node: Json) -> Lv:
        t = node.get("type")
        v: Any = node.get("value")
        if t == "field":
            ref = self.layout.field(v[0], v[1])
            return Lv(f"{self.ptr}->{ref.access}", ref)
        if t == "stack_field":
            cs = self.layout.stacks.get(v[0])
            if cs is None:
                self.unsupported(f"unknown header stack {v[0]!r}")
            for member, fi in cs.htype.fields:
                if fi.name == v[1]:
                    nxt = f"{self.ptr}->{cs.next}"
                    return Lv(f"{self.ptr}->{cs.array}[{nxt} ? {nxt} - 1 : 0].{member}", self._ref(fi))
            self.unsupported(f"header stack {v[0]} has no field {v[1]!r}")
        if t == "expression":
            return self.lvalue(v)
        if node.get("op") == "access_field":
            hcode, htype = self.header(node["left"])
            off = node["right"]
            if not isinstance(off, int) or not 0 <= off < len(htype.fields):
                self.unsupported(f"field offset {off!r}")
            member, fi = htype.fields[off]
            return Lv(f"{hcode}.{member}", self._ref(fi))
        self.unsupported(f"cannot assign to {node!r}")

    @staticmethod
    def _ref(fi: FieldInfo) -> FieldRef:
        from .layout import storage
        _ctype, limbs = storage(fi.width, fi.signed)
        return FieldRef("", fi.width, fi.signed, limbs)

    def read(self, lv: Lv) -> V:
        ref = lv.ref
        lo, hi = self.field_range(ref)
        if ref.limbs:
            self.cg.need_bits(signed_bits(lo, hi))
            return V(f"w_load({lv.code}, {ref.limbs}, {int(ref.signed)})", "w", True, lo, hi)
        if ref.signed:
            return V(f"((int64_t){lv.code})", "i64", True, lo, hi)
        return V(f"((uint64_t){lv.code})", "u64", True, lo, hi)

    def pattern(self, lv: Lv) -> str:
        """C code of the field's bit pattern: uint64_t (<= 64 bits) or wide_t."""
        ref = lv.ref
        if ref.limbs:
            self.cg.need_bits(ref.width + 1)
            return f"w_trunc(w_load({lv.code}, {ref.limbs}, {int(ref.signed)}), {ref.width})"
        if ref.signed:
            return f"((uint64_t){lv.code} & {(1 << ref.width) - 1:#x}ULL)"
        return f"((uint64_t){lv.code})"

    # ---- stores ----------------------------------------------------------------------------
    def store(self, lv: Lv, node: Json) -> str:
        """C statement: write the value of `node` to the field, as BMv2 keeps it."""
        ref = lv.ref
        if ref.signed:  # BMv2 keeps some out-of-range values as they are: needs the exact value
            return self.store_value(lv, self.exact(node))
        return self.store_value(lv, self.gen(node, ref.width))

    def store_value(self, lv: Lv, v: V) -> str:
        ref = lv.ref
        w = ref.width
        if ref.limbs:
            if ref.signed:
                if not v.exact:
                    self.unsupported("internal: a signed store needs the exact value")
                self.cg.need_bits(w + 2)
                return f"w_store({lv.code}, {ref.limbs}, w_sstore({self.as_wide(v)}, {w}));"
            self.cg.need_bits(w)
            return f"w_store({lv.code}, {ref.limbs}, w_trunc({self.as_wide(v)}, {w}));"
        if ref.signed:
            lo, hi = self.field_range(ref)
            b = v.bounds()
            if b is not None and lo <= b[0] and b[1] <= hi:
                return f"{lv.code} = {self.convert(v, 'i64')};"
            if v.ct == "i64":
                return f"{lv.code} = rt_sstore_i({v.code}, {w});"
            if v.ct in ("u64", "bool") and v.exact:
                return f"{lv.code} = rt_sstore_u({self.as_u64(v)}, {w});"
            self.cg.need_bits(w + 2)
            return f"{lv.code} = (int64_t)w_lo(w_sstore({self.as_wide(v)}, {w}));"
        code = self.as_u64(v)
        b = v.bounds()
        if w < 64 and not (b is not None and b[0] >= 0 and b[1] < (1 << w)):
            code = f"({code} & {(1 << w) - 1:#x}ULL)"
        return f"{lv.code} = {code};"

    # ---- rvalues ---------------------------------------------------------------------------
    def gen(self, node: Json | None, need: int | None = None) -> V:
        """C value of `node`: exact (need None) or valid in at least its low `need` bits."""
        if node is None:
            self.unsupported("missing operand")
        t = node.get("type")
        v: Any = node.get("value")
        if t == "hexstr":
            return self.const(parse_hexstr(v))
        if t == "bool":
            return V("1" if v else "0", "bool", True, int(bool(v)), int(bool(v)))
        if t == "$c":  # a value the caller computed into a C variable
            return V(node["code"], node["ct"], True, node["lo"], node["hi"])
        if t in ("runtime_data", "local"):
            code, width, limbs = self.param(int(v))
            if limbs:
                self.cg.need_bits(width + 1)
                return V(f"w_load({code}, {limbs}, 0)", "w", True, 0, (1 << width) - 1)
            return V(code, "u64", True, 0, (1 << width) - 1)
        if t in ("field", "stack_field"):
            return self.read(self.lvalue(node))
        if t == "register":
            reg = self.register(v[0])
            idx = self.index_code(v[1])
            return self.register_value(reg, idx)
        if t == "expression":
            return self.op(v, need) if "op" in v else self.gen(v, need)
        if t in ("header", "header_stack"):
            self.unsupported(f"a {t} used as a value")
        if "op" in node:
            return self.op(node, need)
        self.unsupported(f"unsupported operand type {t!r}")

    def register_value(self, reg: RegisterInfo, idx_code: str) -> V:
        """The cell (0 when the index is out of range), as register_read and _reg_get give it."""
        cells = f"sw->regs[{self.cg.reg_index(reg.name)}].cells"
        lo, hi = 0, (1 << reg.width) - 1
        if reg.width > 64:
            limbs = (reg.width + 63) // 64
            self.cg.need_bits(reg.width + 1)
            return V(f"w_cell({cells}, {idx_code}, {reg.size}, {limbs})", "w", True, lo, hi)
        ctype = self.cg.cell_type(reg.width)
        return V(f"({idx_code} < {reg.size}ULL ? (uint64_t)(({ctype} *){cells})[{idx_code}] : 0)",
                 "u64", True, lo, hi)

    def op(self, e: Json, need: int | None) -> V:
        op = e.get("op")
        left: Any = e.get("left")     # None for unary operators
        right: Any = e.get("right")
        if op in RING:
            return self.ring(e, op, left, right, need)
        if op == "<<":
            return self.shl(e, left, right, need)
        if op == "~":
            return self.bitnot(e, right, need)
        if op == ">>":
            return self.shr(e, left, right)
        if op in ("/", "%"):
            return self.divmod(e, op, left, right)
        if op in COMPARE:
            a, b = self.exact(left), self.exact(right)
            ct = self.container(min(a.lo, b.lo), max(a.hi, b.hi))
            if ct == "w":
                return V(f"(w_cmp({self.as_wide(a)}, {self.as_wide(b)}) {op} 0)", "bool", True, 0, 1)
            return V(f"({self.convert(a, ct)} {op} {self.convert(b, ct)})", "bool", True, 0, 1)
        if op in ("and", "or"):
            return V(f"({self.cond(left)} {'&&' if op == 'and' else '||'} {self.cond(right)})", "bool", True, 0, 1)
        if op == "not":
            return V(f"(!{self.cond(right)})", "bool", True, 0, 1)
        if op == "d2b":
            return V(self.cond(right), "bool", True, 0, 1)
        if op == "b2d":
            return self.gen(right, need)
        if op == "valid":
            hcode, _ = self.header(right)
            return V(f"({hcode}.valid != 0)", "bool", True, 0, 1)
        if op == "?":
            return self.ternary(e, need)
        if op == "two_comp_mod":
            w = self.cast_width(right)
            x = self.gen(left, w)
            if w <= 64:
                return V(f"rt_sext({self.as_u64(x)}, {w})", "i64", True, -(1 << (w - 1)), (1 << (w - 1)) - 1)
            self.cg.need_bits(w + 1)
            return V(f"w_sext({self.as_wide(x)}, {w})", "w", True, -(1 << (w - 1)), (1 << (w - 1)) - 1)
        if op in ("sat_cast", "usat_cast"):
            w = self.cast_width(right)
            lo, hi = (0, (1 << w) - 1) if op == "usat_cast" else (-(1 << (w - 1)), (1 << (w - 1)) - 1)
            return self.clamp(self.exact(left), lo, hi)
        if op == "last_stack_index":
            cs = self.stack(right)
            return V(f"((int64_t){self.ptr}->{cs.next} - 1)", "i64", True, -1, cs.size - 1)
        if op == "size_stack":
            cs = self.stack(right)
            return V(f"((uint64_t){self.ptr}->{cs.next})", "u64", True, 0, cs.size)
        if op == "access_field":
            return self.read(self.lvalue(e))
        if op == "valid_union":
            self.unsupported("header unions are not supported")
        self.unsupported(f"unsupported expression operator {op!r}")

    def _mode(self, iv: Interval | None, need: int | None) -> tuple[str, int | None]:
        """-> ("64", None) or ("w", bits) for a ring operation's result."""
        if need is None:
            if iv is None:
                self.unsupported("an exact value of unbounded size")
            if fits_u64(*iv) or fits_i64(*iv):
                return "64", None
            bits = signed_bits(*iv)
        else:
            if need <= 64 or (iv is not None and (fits_u64(*iv) or fits_i64(*iv))):
                return "64", None
            bits = need
            if iv is not None:
                bits = max(bits, signed_bits(*iv)) if signed_bits(*iv) <= MAX_BITS else bits
        if bits > MAX_BITS:
            self.unsupported(f"a value needs {bits} bits")
        self.cg.need_bits(bits)
        return "w", bits

    def _result64(self, code: str, iv: Interval | None) -> V:
        if iv is not None and fits_u64(*iv):
            return V(code, "u64", True, *iv)
        if iv is not None and fits_i64(*iv):
            return V(f"((int64_t){code})", "i64", True, *iv)
        return V(code, "u64", False, *(iv or (None, None)))

    def _result_w(self, code: str, iv: Interval | None, bits: int, operands: tuple[V, ...]) -> V:
        if iv is not None and signed_bits(*iv) <= bits:
            if not all(o.exact for o in operands):
                code = f"w_sext({code}, {bits})"
            return V(code, "w", True, *iv)
        return V(code, "w", False, *(iv or (None, None)))

    def ring(self, e: Json, op: str, left: Json, right: Json, need: int | None) -> V:
        iv = self.iv(e)
        mode, bits = self._mode(iv, need)
        if mode == "64":
            a, b = self.gen(left, 64), self.gen(right, 64)
            return self._result64(f"({self.as_u64(a)} {op} {self.as_u64(b)})", iv)
        assert bits is not None     # ("w", bits) when not "64"
        a, b = self.gen(left, bits), self.gen(right, bits)
        return self._result_w(f"w_{RING[op]}({self.as_wide(a)}, {self.as_wide(b)})", iv, bits, (a, b))

    def bitnot(self, e: Json, right: Json, need: int | None) -> V:
        iv = self.iv(e)
        mode, bits = self._mode(iv, need)
        if mode == "64":
            a = self.gen(right, 64)
            return self._result64(f"(~{self.as_u64(a)})", iv)
        assert bits is not None     # ("w", bits) when not "64"
        a = self.gen(right, bits)
        return self._result_w(f"w_not({self.as_wide(a)})", iv, bits, (a,))

    def _bounded(self, iv: Interval | None) -> Interval:
        """The interval of a result of exact operands (which always has one)."""
        if iv is None:  # pragma: no cover - exact operands have intervals
            self.unsupported("internal: no bounds for a result of exact operands")
        return iv

    def _shift_amount(self, node: Json) -> ExactV:
        s = self.exact(node)
        if s.lo < 0:
            self.unsupported("a shift by a possibly negative amount")
        if s.hi > U64_MAX:
            self.unsupported("a shift amount wider than 64 bits")
        return s

    def shl(self, e: Json, left: Json, right: Json, need: int | None) -> V:
        s = self._shift_amount(right)
        iv = self.iv(e)
        mode, bits = self._mode(iv, need)
        if mode == "64":
            a = self.gen(left, 64)
            if s.hi < 64:
                code = f"({self.as_u64(a)} << {self.as_u64(s)})"
            else:
                code = f"rt_shl({self.as_u64(a)}, {self.as_u64(s)})"
            return self._result64(code, iv)
        assert bits is not None     # ("w", bits) when not "64"
        a = self.gen(left, bits)
        return self._result_w(f"w_shl({self.as_wide(a)}, {self.as_u64(s)})", iv, bits, (a,))

    def shr(self, e: Json, left: Json, right: Json) -> V:
        s = self._shift_amount(right)
        a = self.exact(left)
        iv = self._bounded(self.iv(e))
        if a.ct in ("u64", "bool"):
            if s.hi < 64:
                code = f"({self.as_u64(a)} >> {self.as_u64(s)})"
            else:
                code = f"rt_ushr({self.as_u64(a)}, {self.as_u64(s)})"
            return V(code, "u64", True, *iv)
        if a.ct == "i64":
            code = f"({a.code} >> {self.as_u64(s)})" if s.hi < 63 else f"rt_sshr({a.code}, {self.as_u64(s)})"
            return V(code, "i64", True, *iv)
        return V(f"w_shr({a.code}, {self.as_u64(s)})", "w", True, *iv)

    def divmod(self, e: Json, op: str, left: Json, right: Json) -> V:
        a, b = self.exact(left), self.exact(right)
        iv = self.iv(e)
        lo, hi = min(a.lo, b.lo), max(a.hi, b.hi)
        if fits_u64(lo, hi):  # both non-negative: floor division is C's
            fn = "rt_udiv" if op == "/" else "rt_umod"
            return V(f"{fn}({self.as_u64(a)}, {self.as_u64(b)})", "u64", True, *self._bounded(iv))
        if fits_i64(lo, hi) and iv is not None and fits_i64(*iv):
            fn = "rt_sdiv" if op == "/" else "rt_smod"
            return V(f"{fn}({self.convert(a, 'i64')}, {self.convert(b, 'i64')})", "i64", True, *iv)
        self.unsupported(f"division of values wider than 64 bits ({op})")

    def ternary(self, e: Json, need: int | None) -> V:
        c = self.cond(e["cond"])
        a, b = self.gen(e["left"], need), self.gen(e["right"], need)
        if a.ct == "bool" and b.ct == "bool":
            return V(f"({c} ? {a.code} : {b.code})", "bool", True, 0, 1)
        ab, bb = a.bounds(), b.bounds()
        if ab is not None and bb is not None:
            lo, hi = min(ab[0], bb[0]), max(ab[1], bb[1])
            ct = self.container(lo, hi)
            return V(f"({c} ? {self.convert(a, ct)} : {self.convert(b, ct)})", ct, True, lo, hi)
        if need is not None and need <= 64:
            return V(f"({c} ? {self.as_u64(a)} : {self.as_u64(b)})", "u64", False)
        return V(f"({c} ? {self.as_wide(a)} : {self.as_wide(b)})", "w", False)

    def clamp(self, a: ExactV, lo: int, hi: int) -> V:
        if lo <= a.lo and a.hi <= hi:
            return a
        rlo, rhi = min(max(a.lo, lo), hi), max(min(a.hi, hi), lo)
        ct = self.container(min(a.lo, lo), max(a.hi, hi))
        x = self.convert(a, ct)
        if ct == "w":
            code = f"w_clamp({x}, {self.wconst(lo)}, {self.wconst(hi)})"
        else:
            clo, chi = self.convert(self.const(lo), ct), self.convert(self.const(hi), ct)
            ctype = "int64_t" if ct == "i64" else "uint64_t"
            code = f"({{ {ctype} t_ = {x}; t_ < {clo} ? {clo} : (t_ > {chi} ? {chi} : t_); }})"
        out = V(code, ct, True, rlo, rhi)
        rct = self.container(rlo, rhi)
        if rct != ct:
            return V(self.convert(out, rct), rct, True, rlo, rhi)
        return out
