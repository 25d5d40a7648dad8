"""Translate BMv2 JSON expressions and lvalues into Python source over the packet-state list `f`.

Values follow BMv2: arithmetic is infinite precision (Python ints), a signed field reads as its
two's-complement value, and writing to a field keeps the low `width` bits.
"""
from collections.abc import Callable
from typing import Any, ClassVar, NoReturn

from .errors import ProgramError
from .program import HeaderInfo, Json, Program, StackInfo
from .program_loader import parse_hexstr

INT, BOOL, HEADER, STACK = "int", "bool", "header", "stack"


class Lvalue:
    """A field to write: `slot` is Python source for its slot index."""
    __slots__ = ("signed", "slot", "static", "width")

    def __init__(self, slot: str, width: int, signed: bool, static: bool) -> None:
        self.slot, self.width, self.signed, self.static = slot, width, signed, static


class ExprGen:
    """Generates Python expression source for one program.

    `params` renders action parameter i (runtime_data / local) as Python source.
    """

    def __init__(self, prog: Program, params: Callable[[int], str] | None = None, where: str = "expression") -> None:
        self.prog = prog
        self.params: Callable[[int], str] = params or (lambda i: f"p[{i}]")
        self.where = where

    # ---- helpers -----------------------------------------------------------------------------
    def err(self, msg: str) -> NoReturn:
        raise ProgramError(f"{self.where}: {msg}")

    def field_info(self, header: str, name: str) -> Lvalue:
        prog = self.prog
        if name == "$valid$":
            if header not in prog.headers:
                self.err(f"unknown header {header!r}")
            return Lvalue(str(prog.headers[header].vslot), 1, False, True)
        fi = prog.fields.get((header, name))
        if fi is None:
            self.err(f"unknown field {header}.{name}")
        return Lvalue(str(fi.slot), fi.width, fi.signed, True)

    @staticmethod
    def read(lv: Lvalue) -> str:
        # A signed field's slot holds BMv2's arithmetic value (see signed_store), not the pattern.
        return f"f[{lv.slot}]"

    @staticmethod
    def pattern(lv: Lvalue) -> str:
        """Source for the field's bit pattern (keys, checksums, deparsing)."""
        if lv.signed:
            return f"(f[{lv.slot}] & {(1 << lv.width) - 1})"
        return f"f[{lv.slot}]"

    @staticmethod
    def as_int(code: str, kind: str) -> str:
        if kind == BOOL:
            return f"(1 if {code} else 0)"
        return code

    @staticmethod
    def as_bool(code: str, kind: str) -> str:
        if kind == BOOL:
            return code
        return f"({code} != 0)"

    # ---- headers -----------------------------------------------------------------------------
    def header(self, node: Json) -> tuple[str, HeaderInfo]:
        """-> (source of the header's validity slot, HeaderInfo of its type layout)."""
        t = node.get("type")
        v: Any = node.get("value")
        if t == "header":
            h = self.prog.headers.get(v)
            if h is None:
                self.err(f"unknown header {v!r}")
            return str(h.vslot), h
        if t == "expression":
            return self.header(v)
        if node.get("op") == "dereference_header_stack":
            st = self.stack(node["left"])
            idx, kind = self.rv(node["right"])
            first = self.prog.headers[st.headers[0]]
            return f"_stk_elem({st.base}, {st.stride}, {st.size}, {self.as_int(idx, kind)})", first
        if t == "stack_field":
            self.err("stack_field is not a header")
        self.err(f"expected a header, got {node!r}")

    def stack(self, node: Json) -> StackInfo:
        t = node.get("type")
        v: Any = node.get("value")
        if t == "header_stack" and v in self.prog.stacks:
            return self.prog.stacks[v]
        self.err(f"expected a header stack, got {node!r}")

    # ---- lvalues -----------------------------------------------------------------------------
    def lvalue(self, node: Json) -> Lvalue:
        t = node.get("type")
        v: Any = node.get("value")
        if t == "field":
            return self.field_info(v[0], v[1])
        if t == "stack_field":
            st = self.prog.stacks.get(v[0])
            if st is None:
                self.err(f"unknown header stack {v[0]!r}")
            first = self.prog.headers[st.headers[0]]
            off = self._field_offset(first, v[1])
            fi = first.fields[off]
            slot = f"(_stk_last({st.base}, {st.stride}, f[{st.next_slot}]) + {off + 1})"
            return Lvalue(slot, fi.width, fi.signed, False)
        if t == "expression":
            return self.lvalue(v)
        if node.get("op") == "access_field":
            hslot, h = self.header(node["left"])
            off = node["right"]
            fi = h.fields[off]
            return Lvalue(f"({hslot} + {off + 1})", fi.width, fi.signed, False)
        self.err(f"cannot assign to {node!r}")

    def _field_offset(self, h: HeaderInfo, name: str) -> int:
        for i, fi in enumerate(h.fields):
            if fi.name == name:
                return i
        self.err(f"header {h.name} has no field {name!r}")

    # ---- rvalues -----------------------------------------------------------------------------
    def rv(self, node: Json | None) -> tuple[str, str]:
        """-> (python source, kind)."""
        if node is None:
            self.err("missing operand")
        t = node.get("type")
        v: Any = node.get("value")
        if t == "hexstr":
            return str(parse_hexstr(v)), INT
        if t == "bool":
            return ("True" if v else "False"), BOOL
        if t in ("runtime_data", "local"):
            return self.params(int(v)), INT
        if t in ("field", "stack_field"):
            return self.read(self.lvalue(node)), INT
        if t == "header":
            slot, _ = self.header(node)
            return slot, HEADER
        if t == "header_stack":
            return repr(v), STACK
        if t == "expression":
            return self.op(v) if "op" in v else self.rv(v)
        if t == "register":
            reg = self.prog.registers.get(v[0])
            if reg is None:
                self.err(f"unknown register {v[0]!r}")
            idx, kind = self.rv(v[1])
            return f"_reg_get(R_{reg.id}, {self.as_int(idx, kind)})", INT
        if "op" in node:
            return self.op(node)
        self.err(f"unsupported operand type {t!r}")

    def op(self, e: Json) -> tuple[str, str]:
        op = e.get("op")
        left: Any = e.get("left")     # None for unary operators
        right: Any = e.get("right")
        if op in ("+", "-", "*", "<<", ">>", "&", "|", "^", "/", "%"):
            a, ka = self.rv(left)
            b, kb = self.rv(right)
            a, b = self.as_int(a, ka), self.as_int(b, kb)
            pyop = {"/": "//"}.get(op, op)
            if op in ("/", "%"):
                return f"_div({a}, {b}, {op!r})", INT
            return f"({a} {pyop} {b})", INT
        if op in ("==", "!=", "<", "<=", ">", ">="):
            a, ka = self.rv(left)
            b, kb = self.rv(right)
            if ka == BOOL and kb == BOOL:
                return f"({a} {op} {b})", BOOL
            return f"({self.as_int(a, ka)} {op} {self.as_int(b, kb)})", BOOL
        if op in ("and", "or"):
            a, ka = self.rv(left)
            b, kb = self.rv(right)
            return f"({self.as_bool(a, ka)} {op} {self.as_bool(b, kb)})", BOOL
        if op == "not":
            a, ka = self.rv(right)
            return f"(not {self.as_bool(a, ka)})", BOOL
        if op == "~":
            a, ka = self.rv(right)
            return f"(~{self.as_int(a, ka)})", INT
        if op == "d2b":
            a, ka = self.rv(right)
            return self.as_bool(a, ka), BOOL
        if op == "b2d":
            a, ka = self.rv(right)
            return self.as_int(a, ka), INT
        if op == "valid":
            slot, _ = self.header(right)
            return f"(f[{slot}] != 0)", BOOL
        if op == "?":
            c, kc = self.rv(e.get("cond"))
            a, ka = self.rv(left)
            b, kb = self.rv(right)
            if ka != kb:
                a, b, ka = self.as_int(a, ka), self.as_int(b, kb), INT
            return f"({a} if {self.as_bool(c, kc)} else {b})", ka
        if op in ("two_comp_mod", "sat_cast", "usat_cast"):
            a, ka = self.rv(left)
            a = self.as_int(a, ka)
            w, _kw = self.rv(right)
            try:
                width = int(w)
            except ValueError:
                return f"_{op}({a}, {w})", INT
            m = (1 << width) - 1
            if op == "usat_cast":
                return self.clamp_code(a, 0, m), INT
            s = 1 << (width - 1)
            if op == "two_comp_mod":
                return f"((({a}) + {s} & {m}) - {s})", INT
            return self.clamp_code(a, -s, s - 1), INT
        if op == "last_stack_index":
            st = self.stack(right)
            return f"(f[{st.next_slot}] - 1)", INT
        if op == "size_stack":
            st = self.stack(right)
            return f"f[{st.next_slot}]", INT
        if op == "access_field":
            return self.read(self.lvalue(e)), INT
        if op == "dereference_header_stack":
            slot, _ = self.header(e)
            return slot, HEADER
        if op == "valid_union":
            self.err("header unions are not supported")
        self.err(f"unsupported expression operator {op!r}")

    _temps: ClassVar[list[int]] = [0]

    def clamp_code(self, a: str, lo: int | str, hi: int | str) -> str:
        """Inline saturation (no function call): lo if a < lo else hi if a > hi else a."""
        self._temps[0] += 1
        t = f"_t{self._temps[0]}"
        return f"({lo} if ({t} := {a}) < {lo} else ({hi} if {t} > {hi} else {t}))"

    def value_range(self, node: Json) -> tuple[int, int] | None:
        """(lo, hi) bounds of an rvalue when cheaply known (saturating casts, registers), else None."""
        if node.get("type") == "expression":
            v = node["value"]
            v = v if "op" in v else v.get("value", {})
            op = v.get("op")
            if op in ("sat_cast", "usat_cast") and v.get("right", {}).get("type") == "hexstr":
                w = parse_hexstr(v["right"]["value"])
                if op == "usat_cast":
                    return 0, (1 << w) - 1
                return -(1 << (w - 1)), (1 << (w - 1)) - 1
        return None

    def cond(self, node: Json) -> str:
        code, kind = self.rv(node)
        return self.as_bool(code, kind)

    def int_expr(self, node: Json) -> str:
        code, kind = self.rv(node)
        if kind in (HEADER, STACK):
            self.err(f"expected a value, got a {kind}")
        return self.as_int(code, kind)


def signed_store(v: int, lo: int, mask: int) -> int:
    """The value BMv2 keeps in a signed field after a write (Field::export_bytes).

    Values outside [min, mask] wrap into [min, max]; values in (max, mask] are kept as they are,
    so e.g. an int<32> field loaded from a bit<32> register cell 0x8000000a computes as
    2147483658, not as a negative number (observed on simple_switch).
    """
    if v < lo or v > mask:
        v &= mask
        if v > -lo - 1:
            v -= mask + 1
    return v


def clamp(x: int, lo: int, hi: int) -> int:
    return lo if x < lo else hi if x > hi else x


def div(a: int, b: int, op: str) -> int:
    if b == 0:
        return 0
    return a // b if op == "/" else a % b


def stk_elem(base: int, stride: int, size: int, idx: int) -> int:
    if not 0 <= idx < size:
        raise IndexError(f"header stack index {idx} out of bounds (size {size})")
    return base + idx * stride


def stk_last(base: int, stride: int, nxt: int) -> int:
    return base + max(nxt - 1, 0) * stride


RUNTIME_HELPERS = {
    "_clamp": clamp,
    "_sstore": signed_store,
    "_div": div,
    "_stk_elem": stk_elem,
    "_stk_last": stk_last,
    "_sat_cast": lambda a, w: clamp(a, -(1 << (w - 1)), (1 << (w - 1)) - 1),
    "_usat_cast": lambda a, w: clamp(a, 0, (1 << w) - 1),
    "_two_comp_mod": lambda a, w: ((a + (1 << (w - 1))) & ((1 << w) - 1)) - (1 << (w - 1)),
}
