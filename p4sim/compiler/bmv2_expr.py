"""Lowering checked P4 expressions to BMv2 JSON expression trees.

BMv2 evaluates on arbitrary-precision integers, so (as p4c does) results that can overflow are
wrapped explicitly: ``& mask`` for bit<W>, ``two_comp_mod`` for int<W>; saturating ops use
``usat_cast``/``sat_cast``. Booleans and data are distinct in BMv2: ``d2b``/``b2d`` convert.
"""
from __future__ import annotations

from typing import Any

from . import ast as A
from .bmv2_storage import FieldLoc, HdrLoc, Json, Loc, StackLoc, StackOp, Storage, StructLoc
from .diagnostics import CompileError, Pos, Unsupported
from .types import BitsT, BoolT, EnumT, ErrorT, IntT, StackT, Type


class LocRef(A.Expr):
    """An expression that reads a storage location directly (temps made by the lowering)."""
    _fields = ()

    def __init__(self, loc: Loc, type_: Type | None, pos: Pos | None = None) -> None:
        self.loc, self.type, self.pos, self.ref = loc, type_, pos, None


def has_cond(e: A.Node) -> bool:
    """Whether e contains a ?: (BMv2 targets commonly lack the '?:' operator; we branch instead)."""
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, A.Cond):
            return True
        for f in getattr(n, "_fields", ()):
            v = getattr(n, f, None)
            if isinstance(v, A.Node):
                stack.append(v)
            elif isinstance(v, list):
                stack.extend(x for x in v if isinstance(x, A.Node))
    return False


def hexstr(value: int, width: int | None = None) -> Json:
    if value < 0:
        return {"type": "hexstr", "value": "-0x" + format(-value, "x")}
    digits = 2 * ((width + 7) // 8) if width else 1     # p4c writes whole bytes: 8w1 is 0x01
    return {"type": "hexstr", "value": "0x" + format(value, f"0{digits}x")}


def op(name: str, left: Json | None, right: Json, **extra: Json) -> Json:
    v = {"op": name, "left": left, "right": right}
    v.update(extra)
    return {"type": "expression", "value": v}


def param(j: Json) -> Json:
    """A primitive/parser-op parameter: operator trees get the extra 'expression' wrapper."""
    if j.get("type") == "expression":
        return {"type": "expression", "value": j}
    return j


def b2d(j: Json) -> Json:
    if j.get("type") == "bool":
        return hexstr(1 if j["value"] else 0, 1)
    if j.get("type") == "expression" and j["value"]["op"] == "d2b":
        return j["value"]["right"]
    return op("b2d", None, j)


def d2b(j: Json) -> Json:
    if j.get("type") == "expression" and j["value"]["op"] == "b2d":
        return j["value"]["right"]
    return op("d2b", None, j)


def method_target(c: A.Call) -> A.Expr:
    """What a method call is made on (hdr in hdr.setValid()): the checker made func a Member."""
    assert isinstance(c.func, A.Member)
    return c.func.expr


def mask_of(w: int) -> int:
    return (1 << w) - 1


class ExprLowering:
    """Lowers expressions in one context (a control or the parser).

    ``subst`` maps action parameters (by id of the Param) to what they stand for: an int for
    runtime data, or ('expr', Expr) / ('loc', Loc) for inlined calls.
    """

    def __init__(self, storage: Storage, objects: dict[int, str]) -> None:
        self.st = storage
        self.objects = objects      # id(decl) -> BMv2 name for registers/counters
        self.subst: dict[int, tuple[str, Any]] = {}   # ("rt", index) | ("expr", Expr) | ("loc", Loc)

    # ---- l-values
    def loc(self, e: A.Expr) -> Loc | StackOp:
        if isinstance(e, LocRef):
            return e.loc
        if isinstance(e, A.Name):
            s = e.ref
            key = id(s.decl)
            if key in self.subst:
                v = self.subst[key]
                if v[0] == "loc":
                    return v[1]
                if v[0] == "expr":
                    return self.loc(v[1])
                raise CompileError(f"'{e.name}' is action data and has no storage", e.pos)
            if key not in self.st.locs:
                raise CompileError(f"'{e.name}' has no storage here", e.pos)
            return self.st.locs[key]
        if isinstance(e, A.Member):
            base = self.loc(e.expr)
            if isinstance(base, StructLoc):
                return base.members[e.member]
            if isinstance(base, HdrLoc):
                return FieldLoc(base.name, e.member, base.htype.field(e.member))
            if isinstance(base, StackLoc):
                if e.member in ("next", "last"):
                    return ("stack_" + e.member, base)
            raise Unsupported(f"member '{e.member}' here", e.pos)
        if isinstance(e, A.Index):
            base = self.loc(e.expr)
            if not isinstance(base, StackLoc):      # the checker allows indexing stacks only
                raise CompileError("expected a header stack", e.pos)
            return base.elems[e.index.value]
        raise CompileError("expected a field, header or variable", e.pos)

    def field_loc(self, e: A.Expr) -> Loc:
        l = self.loc(e)
        if isinstance(l, tuple):
            raise Unsupported(f"header stack '.{l[0][6:]}' outside a parser", e.pos)
        return l

    def scalar_loc(self, e: A.Expr) -> FieldLoc:
        """The field a bit/bool/enum-typed l-value lives in."""
        loc = self.field_loc(e)
        if not isinstance(loc, FieldLoc):
            raise CompileError("expected a field or variable", e.pos)
        return loc

    def header_loc(self, e: A.Expr) -> HdrLoc | StackLoc:
        """The header instance (or header stack) an expression names."""
        loc = self.field_loc(e)
        if not isinstance(loc, (HdrLoc, StackLoc)):
            raise CompileError("expected a header or header stack", e.pos)
        return loc

    # ---- r-values
    def bool(self, e: A.Expr) -> Json:
        """JSON for e in boolean context."""
        j = self.ex(e)
        if isinstance(e.type, BoolT):
            return j
        raise CompileError(f"expected a bool expression, got {e.type}", e.pos)

    def data(self, e: A.Expr) -> Json:
        """JSON for e in data context (bools become 0/1)."""
        j = self.ex(e)
        if isinstance(e.type, BoolT):
            return b2d(j)
        return j

    def ex(self, e: A.Expr) -> Json:
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise Unsupported(f"expression {type(e).__name__} in this position", e.pos)
        return m(e)

    def x_IntLit(self, e: A.IntLit) -> Json:
        return hexstr(e.value, e.width)

    def x_BoolLit(self, e: A.BoolLit) -> Json:
        return {"type": "bool", "value": e.value}

    def x_TypeMember(self, e: A.TypeMember) -> Json:
        if isinstance(e.type, ErrorT):
            return hexstr(e.ref)
        if isinstance(e.type, EnumT):
            w = e.type.underlying.width if e.type.underlying else 32
            return hexstr(e.ref, w)
        raise Unsupported("this constant", e.pos)

    def x_Name(self, e: A.Name) -> Json:
        s = e.ref
        key = id(s.decl)
        if key in self.subst:
            v = self.subst[key]
            if v[0] == "rt":
                j = {"type": "runtime_data", "value": v[1]}
                return d2b(j) if isinstance(e.type, BoolT) else j
            if v[0] == "expr":
                return self.ex(v[1])
            return self._field(v[1], e)
        return self._field(self.field_loc(e), e)

    def _field(self, loc: Loc, e: A.Expr) -> Json:
        if isinstance(loc, FieldLoc):
            j = loc.json()
            return d2b(j) if isinstance(loc.type, BoolT) else j
        if isinstance(loc, HdrLoc):
            return {"type": "header", "value": loc.name}
        if isinstance(loc, StackLoc):
            return {"type": "header_stack", "value": loc.name}
        raise Unsupported("a struct value in an expression", e.pos)

    def x_Member(self, e: A.Member) -> Json:
        if isinstance(e.expr.type, StackT) and e.member == "last":
            raise Unsupported("header stack '.last' outside a parser", e.pos)
        return self._field(self.field_loc(e), e)

    def x_Index(self, e: A.Index) -> Json:
        return self._field(self.field_loc(e), e)

    def x_Slice(self, e: A.Slice) -> Json:
        x = self.data(e.expr)
        if e.expr.type.signed:
            x = op("&", x, hexstr(mask_of(e.expr.type.width)))
        if e.lo:
            x = op(">>", x, hexstr(e.lo))
        return op("&", x, hexstr(mask_of(e.hi - e.lo + 1), e.hi - e.lo + 1))

    def wrap(self, j: Json, t: Type) -> Json:
        if isinstance(t, BitsT):
            if t.signed:
                return op("two_comp_mod", j, hexstr(t.width))
            return op("&", j, hexstr(mask_of(t.width), t.width))
        return j

    def x_Unary(self, e: A.Unary) -> Json:
        if e.op == "!":
            return op("not", None, self.bool(e.expr))
        x = self.data(e.expr)
        t = e.type
        if not t.signed:
            # keep intermediates non-negative: ~x = x ^ mask, -x = (2^W - x) & mask
            if e.op == "~":
                return op("^", x, hexstr(mask_of(t.width), t.width))
            return op("&", op("-", hexstr(1 << t.width), x), hexstr(mask_of(t.width), t.width))
        if e.op == "-":
            return self.wrap(op("-", hexstr(0), x), t)     # BMv2 has no unary minus
        return self.wrap(op("~", None, x), t)

    def x_Binary(self, e: A.Binary) -> Json:
        o, t = e.op, e.type
        if o in ("&&", "||"):
            return op("and" if o == "&&" else "or", self.bool(e.left), self.bool(e.right))
        if o in ("==", "!=", "<", "<=", ">", ">="):
            return op(o, self.data(e.left), self.data(e.right))
        l, r = self.data(e.left), self.data(e.right)
        if o == "-" and not t.signed:
            # a - b == (a + (2^W - b)) mod 2^W, without negative intermediates
            if e.right.type == t and isinstance(e.right, A.IntLit):
                r = hexstr(((1 << t.width) - e.right.value) & mask_of(t.width), t.width)
            else:
                r = op("-", hexstr(1 << t.width), r)
            return self.wrap(op("+", l, r), t)
        if o in ("+", "-", "*", "<<"):
            return self.wrap(op(o, l, r), t)
        if o in ("&", "|", "^", ">>"):
            return op(o, l, r)
        if o in ("|+|", "|-|"):
            inner = op("+" if o == "|+|" else "-", l, r)
            return op("sat_cast" if t.signed else "usat_cast", inner, hexstr(t.width))
        if o == "++":
            rw = e.right.type.width
            if e.right.type.signed:
                r = op("&", r, hexstr(mask_of(rw), rw))
            if e.left.type.signed:
                l = op("&", l, hexstr(mask_of(e.left.type.width)))
            j = op("|", op("<<", l, hexstr(rw)), r)
            return self.wrap(j, t) if t.signed else op("&", j, hexstr(mask_of(t.width), t.width))
        raise Unsupported(f"operator '{o}'", e.pos)

    def x_Cond(self, e: A.Cond) -> Json:
        if isinstance(e.type, BoolT):
            return op("?", self.bool(e.then), self.bool(e.els), cond=self.bool(e.cond))
        # BMv2's ternary operator is "?" (an unknown "?:" makes BMv2 refuse the whole program)
        return op("?", self.data(e.then), self.data(e.els), cond=self.bool(e.cond))

    def x_Cast(self, e: A.Cast) -> Json:
        t, st = e.type, e.expr.type
        if isinstance(t, BoolT):
            if isinstance(st, BoolT):
                return self.bool(e.expr)
            return d2b(self.data(e.expr))
        x = self.data(e.expr)
        if isinstance(t, EnumT):
            return x
        if isinstance(st, (BoolT, IntT)) or (isinstance(st, EnumT)):
            return x
        if isinstance(t, BitsT) and isinstance(st, BitsT):
            if t.signed:
                if st.signed and st.width <= t.width:
                    return x
                return op("two_comp_mod", x, hexstr(t.width))
            if st.signed or t.width < st.width:
                return op("&", x, hexstr(mask_of(t.width), t.width))
            return x
        return x

    def x_Call(self, e: A.Call) -> Json:
        k = e.kind
        if k[0] == "function":
            # inline: the parameters stand for the argument expressions (evaluated in the caller)
            saved = dict(self.subst)
            self.subst.update({id(p): ("expr", a.expr) for p, a in zip(k[1].params, e.args)})
            try:
                return self.ex(k[1].result)
            finally:
                self.subst = saved
        if k[0] == "header" and k[1] == "isValid":
            base = self.loc(method_target(e))
            if isinstance(base, tuple):
                raise Unsupported("isValid on header stack next/last", e.pos)
            assert isinstance(base, HdrLoc)     # the checker allows isValid() on headers only
            return d2b({"type": "field", "value": [base.name, "$valid$"]})
        raise Unsupported("this call inside an expression", e.pos)

    def x_LocRef(self, e: LocRef) -> Json:
        return self._field(e.loc, e)

    def x_StrLit(self, e: A.StrLit) -> Json:
        return {"type": "string", "value": e.value}
