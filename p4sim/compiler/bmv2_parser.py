"""Lowering the v1model parser and deparser to BMv2 parse states and the deparser order."""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import ast as A
from .bmv2_actions import PrimitiveLowering
from .bmv2_expr import ExprLowering, b2d, d2b, param
from .bmv2_storage import FieldLoc, HdrLoc, Json, StackLoc, StructLoc
from .diagnostics import CompileError, Unsupported
from .types import BitsT, BoolT, StackT

if TYPE_CHECKING:
    from .bmv2 import Backend


def range_to_masks(lo: int, hi: int, w: int) -> list[tuple[int, int]]:
    """Cover [lo, hi] with value/mask prefixes (BMv2 parsers match value&mask only)."""
    out = []
    while lo <= hi:
        size = 1
        while lo % (size * 2) == 0 and lo + size * 2 - 1 <= hi and size * 2 <= (1 << w):
            size *= 2
        mask = ((1 << w) - 1) & ~(size - 1)
        out.append((lo, mask))
        lo += size
    return out


class ParserBuilder:
    def __init__(self, backend: Backend, parser: A.ParserDecl) -> None:
        self.b = backend
        self.p = parser
        self.xl = ExprLowering(backend.storage, backend.objects)
        self.pl = PrimitiveLowering(backend, self.xl)

    def build(self) -> Json:
        states = []
        for i, st in enumerate(self.p.states):
            states.append(self.state(st, i))
        return {"name": "parser", "id": 0, "init_state": "start", "parse_states": states}

    @staticmethod
    def next_name(n: str) -> str | None:
        """BMv2 has no reject state: p4c-bm2-ss compiles 'transition reject' as accept (the
        checker warns), so parsing ends there with parser_error unchanged."""
        return None if n in ("accept", "reject") else n

    def state(self, st: A.ParserState, sid: int) -> Json:
        ops: list[dict] = []
        for s in st.stmts:
            self.stmt(s, ops)
        tr = st.transition
        keys, transitions = [], []
        if isinstance(tr, A.TransitionDirect):
            transitions.append({"type": "default", "value": None, "mask": None,
                                "next_state": self.next_name(tr.state)})
        else:
            widths = []
            for k in tr.keys:
                keys.append(self.select_key(k, ops))
                widths.append(1 if isinstance(k.type, BoolT) else k.type.width)
            for c in tr.cases:
                for value, mask in self.case_values(c, widths):
                    if mask is not None and all(m == 0 for m in mask):
                        transitions.append({"type": "default", "value": None, "mask": None,
                                            "next_state": self.next_name(c.state)})
                        continue
                    vs = "".join(format(v, f"0{2 * ((w + 7) // 8)}x") for v, w in zip(value, widths))
                    full = all(m == (1 << w) - 1 for m, w in zip(mask, widths))
                    ms = None if full else "0x" + "".join(
                        format(m, f"0{2 * ((w + 7) // 8)}x") for m, w in zip(mask, widths))
                    transitions.append({"type": "hexstr", "value": "0x" + vs, "mask": ms,
                                        "next_state": self.next_name(c.state)})
        return {"name": st.name, "id": sid, "parser_ops": ops, "transitions": transitions,
                "transition_key": keys}

    def case_values(self, c: A.SelectCase, widths: list[int]) -> list[tuple[list[int], list[int]]]:
        """Each case as a list of (values, masks) alternatives (ranges expand to several)."""
        alts: list[tuple[list[int], list[int]]] = [([], [])]
        for x, w in zip(c.keyset, widths):
            full = (1 << w) - 1
            if isinstance(x, (A.Default, A.DontCare)):
                opts = [(0, 0)]
            elif isinstance(x, A.Mask):
                m = self._v(x.mask) & full
                opts = [(self._v(x.value) & m, m)]
            elif isinstance(x, A.Range):
                opts = range_to_masks(self._v(x.lo) & full, self._v(x.hi) & full, w)
            else:
                opts = [(self._v(x) & full, full)]
            alts = [(vs + [v], ms + [m]) for vs, ms in alts for v, m in opts]
        return alts

    @staticmethod
    def _v(e):
        if isinstance(e, A.BoolLit):
            return int(e.value)
        if isinstance(e, A.TypeMember):
            return e.ref
        return e.value

    def select_key(self, k: A.Expr, ops: list[Json]) -> Json:
        if isinstance(k, A.Member) and isinstance(k.expr, A.Member) and k.expr.member == "last" \
                and isinstance(k.expr.expr.type, StackT):
            st = self.xl.header_loc(k.expr.expr)
            return {"type": "stack_field", "value": [st.name, k.member]}
        if isinstance(k, A.Member) and isinstance(k.expr, A.Call) and \
                k.expr.kind == ("method", "packet_in", "lookahead"):
            off = 0
            for n, ft, _ in k.expr.type.fields:
                if n == k.member:
                    break
                off += ft.width
            tmp = self.b.storage.add_scalar("tmp", k.type, k.pos)
            ops.append({"parameters": [tmp.json(), {"type": "lookahead", "value": [off, k.type.width]}],
                        "op": "set"})
            return tmp.json()
        if isinstance(k, A.Call) and k.kind == ("method", "packet_in", "lookahead"):
            if not isinstance(k.type, BitsT):
                raise Unsupported("lookahead of a whole header as a select key (select on its fields)", k.pos)
            tmp = self.b.storage.add_scalar("tmp", k.type, k.pos)
            ops.append({"parameters": [tmp.json(), {"type": "lookahead", "value": [0, k.type.width]}],
                        "op": "set"})
            return tmp.json()
        if isinstance(k, (A.Member, A.Name, A.Index)) and not isinstance(k.type, BoolT):
            loc = self.xl.loc(k)
            if isinstance(loc, FieldLoc):
                return loc.json()
        tmp = self.b.storage.add_scalar("tmp", k.type if not isinstance(k.type, BoolT) else BoolT(), k.pos)
        ops.append({"parameters": [tmp.json(), param(self.xl.data(k))], "op": "set"})
        return tmp.json()

    def stmt(self, s: A.Stmt, ops: list[Json]) -> None:
        if isinstance(s, A.Block):
            for x in s.stmts:
                self.stmt(x, ops)
        elif isinstance(s, A.Assign):
            r = s.rhs
            if isinstance(r, A.Call) and r.kind == ("method", "packet_in", "lookahead"):
                src = {"type": "lookahead", "value": [0, r.type.width]}
            else:
                src = None
            dst = self.xl.loc(s.lhs)
            if isinstance(s.lhs, A.Slice) or not isinstance(dst, FieldLoc):
                prims: list[dict] = []
                self.pl.assign(s.lhs, s.rhs, prims, s.pos)
                ops.extend({"parameters": [p], "op": "primitive"} for p in prims)
                return
            ops.append({"parameters": [dst.json(), src or param(self.xl.data(r))], "op": "set"})
        elif isinstance(s, A.VarDecl):
            if s.init is not None:
                dst = self.b.storage.locs[id(s)]
                if not isinstance(dst, FieldLoc):
                    raise Unsupported("initialising a non-scalar local in a parser", s.pos)
                r = s.init
                if isinstance(r, A.Call) and r.kind == ("method", "packet_in", "lookahead"):
                    src = {"type": "lookahead", "value": [0, r.type.width]}
                else:
                    src = param(self.xl.data(r))
                ops.append({"parameters": [dst.json(), src], "op": "set"})
        elif isinstance(s, A.CallStmt):
            c = s.call
            k = c.kind
            if k == ("method", "packet_in", "extract"):
                loc = self.xl.loc(c.args[0].expr)
                if isinstance(loc, tuple):
                    if loc[0] != "stack_next":
                        raise CompileError("extract into '.last' is not allowed; use '.next'", c.pos)
                    ops.append({"parameters": [{"type": "stack", "value": loc[1].name}], "op": "extract"})
                elif isinstance(loc, HdrLoc):
                    ops.append({"parameters": [{"type": "regular", "value": loc.name}], "op": "extract"})
                else:
                    raise CompileError("extract needs a header", c.pos)
            elif k == ("method", "packet_in", "advance"):
                ops.append({"parameters": [param(self.xl.data(c.args[0].expr))], "op": "advance"})
            elif k == ("extern", "verify"):
                # as p4c: the condition goes into a bool temp first; BMv2's verify takes a boolean
                # expression object, one level deep ({"type": "expression", "value": {"op": ...}})
                tmp = self.b.storage.add_scalar("tmp", BoolT(), s.pos)
                ops.append({"parameters": [tmp.json(), param(b2d(self.xl.bool(c.args[0].expr)))], "op": "set"})
                ops.append({"parameters": [d2b(tmp.json()), param(self.xl.data(c.args[1].expr))],
                            "op": "verify"})
            else:
                prims = []
                self.pl.call(c, prims)
                ops.extend({"parameters": [p], "op": "primitive"} for p in prims)
        elif isinstance(s, (A.Empty, A.ConstDecl)):
            pass
        elif isinstance(s, A.If):
            raise Unsupported("'if' inside a parser state (use select)", s.pos)
        else:
            raise Unsupported(f"{type(s).__name__} in a parser state", s.pos)


def deparser_order(backend: Backend, d: A.ControlDecl) -> list[str]:
    """Header instances in emit order, from the deparser's apply block (emit calls only)."""
    xl = ExprLowering(backend.storage, backend.objects)
    order = []

    def add(loc, pos):
        if isinstance(loc, HdrLoc):
            order.append(loc.name)
        elif isinstance(loc, StackLoc):
            order.extend(e.name for e in loc.elems)
        elif isinstance(loc, StructLoc):
            for sub in loc.members.values():
                if not isinstance(sub, FieldLoc):
                    add(sub, pos)
        else:
            raise CompileError("emit needs a header, a header stack or a struct of headers", pos)

    def walk(stmts):
        for s in stmts:
            if isinstance(s, A.Block):
                walk(s.stmts)
            elif isinstance(s, A.CallStmt) and s.call.kind == ("method", "packet_out", "emit"):
                add(xl.field_loc(s.call.args[0].expr), s.pos)
            elif isinstance(s, (A.Empty, A.ConstDecl)):
                pass
            else:
                raise Unsupported("statements other than emit in the deparser", s.pos)
    walk(d.body.stmts)
    return order
