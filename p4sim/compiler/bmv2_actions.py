"""Lowering statements inside actions (and apply-block statement groups) to BMv2 primitives.

Action calls are inlined (their parameters substituted), ``if`` becomes ``_jump_if_zero``/``_jump``
as p4c does, and v1model extern calls map to BMv2 primitives.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import ast as A
from .bmv2_expr import ExprLowering, LocRef, b2d, has_cond, hexstr, mask_of, method_target, op, param
from .bmv2_storage import STANDARD_METADATA, FieldLoc, HdrLoc, Json, Loc, StackLoc, StructLoc
from .diagnostics import CompileError, Pos, Unsupported
from .externs import HASH_ALGOS
from .types import BoolT, HeaderT, Type

if TYPE_CHECKING:
    from .bmv2 import Backend


def prim(name: str, params: list[Json], pos: Pos | None = None,
         src: Callable[[Pos, str | None], Json | None] | None = None) -> Json:
    p: Json = {"op": name, "parameters": params}
    if pos is not None and src is not None:
        p["source_info"] = src(pos, None)
    return p


class PrimitiveLowering:
    def __init__(self, backend: Backend, xl: ExprLowering) -> None:
        self.b = backend
        self.xl = xl

    def lower(self, stmts: list[A.Stmt]) -> list[Json]:
        out: list[dict[str, Any]] = []
        self.stmts(stmts, out)
        return out

    def stmts(self, stmts: list[A.Stmt], out: list[Json]) -> None:
        for s in stmts:
            self.stmt(s, out)
            if isinstance(s, A.Exit):
                break

    def stmt(self, s: A.Stmt, out: list[Json]) -> None:
        if isinstance(s, A.Block):
            self.stmts(s.stmts, out)
        elif isinstance(s, A.Assign):
            self.assign(s.lhs, s.rhs, out, s.pos)
        elif isinstance(s, A.VarDecl):
            if s.init is not None:
                self.assign(A.Name(s.name, pos=s.pos), s.init, out, s.pos, loc=self.b.storage.locs[id(s)])
        elif isinstance(s, A.CallStmt):
            self.call(s.call, out)
        elif isinstance(s, A.If):
            cond = b2d(self.xl.bool(self.hoist(s.cond, out)))
            jz: dict[str, Any] = {"op": "_jump_if_zero", "parameters": [param(cond), None]}
            out.append(jz)
            self.stmt(s.then, out)
            if s.els is not None:
                j: dict[str, Any] = {"op": "_jump", "parameters": [None]}
                out.append(j)
                jz["parameters"][1] = hexstr(len(out))
                self.stmt(s.els, out)
                j["parameters"][0] = hexstr(len(out))
            else:
                jz["parameters"][1] = hexstr(len(out))
        elif isinstance(s, A.Exit):
            out.append(prim("exit", []))
        elif isinstance(s, (A.ConstDecl, A.Empty)):
            pass
        else:
            raise Unsupported(f"{type(s).__name__} statement inside an action", s.pos)

    # ---- ?: lowering: evaluate conditionals into temps with jumps, as p4c does in actions
    def hoist(self, e: A.Expr, out: list[Json]) -> A.Expr:
        """Return e with every ?: replaced by a temp computed (lazily, by branching) into ``out``."""
        if not has_cond(e):
            return e
        if isinstance(e, A.Cond):
            c = self.hoist(e.cond, out)
            tmp = self.b.storage.add_scalar("tmp", e.type, e.pos)
            jz: dict[str, Any] = {"op": "_jump_if_zero", "parameters": [param(b2d(self.xl.bool(c))), None]}
            out.append(jz)
            a = self.hoist(e.then, out)
            out.append(prim("assign", [tmp.json(), param(self.xl.data(a))]))
            j: dict[str, Any] = {"op": "_jump", "parameters": [None]}
            out.append(j)
            jz["parameters"][1] = hexstr(len(out))
            b = self.hoist(e.els, out)
            out.append(prim("assign", [tmp.json(), param(self.xl.data(b))]))
            j["parameters"][0] = hexstr(len(out))
            return LocRef(tmp, e.type, e.pos)
        if isinstance(e, A.Binary) and e.op in ("&&", "||") and has_cond(e.right):
            # keep short-circuit order: compute the right side only when needed
            tmp = self.b.storage.add_scalar("tmp", e.type, e.pos)
            l = self.hoist(e.left, out)
            out.append(prim("assign", [tmp.json(), param(self.xl.data(l))]))
            lj = b2d(self.xl.bool(l))
            if e.op == "||":
                lj = op("^", lj, hexstr(1, 1))
            jz = {"op": "_jump_if_zero", "parameters": [param(lj), None]}
            out.append(jz)
            r = self.hoist(e.right, out)
            out.append(prim("assign", [tmp.json(), param(self.xl.data(r))]))
            jz["parameters"][1] = hexstr(len(out))
            return LocRef(tmp, e.type, e.pos)
        n = copy.copy(e)
        for f in n._fields:
            v = getattr(n, f, None)
            if isinstance(v, A.Expr):
                setattr(n, f, self.hoist(v, out))
            elif isinstance(v, list):
                setattr(n, f, [self.hoist(x, out) if isinstance(x, A.Expr) else
                               (self._hoist_arg(x, out) if isinstance(x, A.Arg) else x) for x in v])
        return n

    def _hoist_arg(self, a: A.Arg, out: list[Json]) -> A.Arg:
        b = copy.copy(a)
        b.expr = self.hoist(a.expr, out)
        return b

    # ---- assignment
    def assign(self, lhs: A.Expr, rhs: A.Expr, out: list[Json], pos: Pos | None, loc: Loc | None = None) -> None:
        xl = self.xl
        rhs = self.hoist(rhs, out)
        if isinstance(lhs, A.Slice):
            base = xl.scalar_loc(lhs.expr)
            w = lhs.expr.type.width
            m = mask_of(lhs.hi - lhs.lo + 1) << lhs.lo
            keep = op("&", base.json(), hexstr(mask_of(w) ^ m, w))
            new = op("&", op("<<", xl.data(rhs), hexstr(lhs.lo)), hexstr(m, w))
            out.append(prim("assign", [base.json(), param(op("|", keep, new))]))
            return
        dst = loc or xl.field_loc(lhs)
        if isinstance(dst, FieldLoc):
            out.append(prim("assign", [dst.json(), param(xl.data(rhs))]))
        elif isinstance(dst, HdrLoc):
            src = xl.header_loc(rhs)
            out.append(prim("assign_header", [{"type": "header", "value": dst.name},
                                              {"type": "header", "value": src.name}]))
        elif isinstance(dst, StackLoc):
            src = xl.header_loc(rhs)
            out.append(prim("assign_header_stack", [{"type": "header_stack", "value": dst.name},
                                                    {"type": "header_stack", "value": src.name}]))
        else:
            raise Unsupported("assignment of a whole struct", pos)

    def temp(self, e: A.Expr, out: list[Json]) -> FieldLoc:
        """Copy the value of e into a fresh scalar and return its FieldLoc."""
        t = e.type if not isinstance(e.type, BoolT) else BoolT()
        loc = self.b.storage.add_scalar("tmp", t, e.pos)
        out.append(prim("assign", [loc.json(), param(self.xl.data(e))]))
        return loc

    def field_or_temp(self, e: A.Expr, out: list[Json]) -> Json:
        if isinstance(e, (A.Member, A.Index)) or (isinstance(e, A.Name) and e.ref.kind in ("local", "param")
                                                  and id(e.ref.decl) not in self.xl.subst):
            loc = self.xl.field_loc(e)
            if isinstance(loc, FieldLoc):
                return loc.json()
        if isinstance(e, A.IntLit):
            j = hexstr(e.value, e.width)
            j["bitwidth"] = e.width
            return j
        return self.temp(e, out).json()

    # ---- calls
    def call(self, c: A.Call, out: list[Json]) -> None:
        if any(has_cond(a.expr) for a in c.args):
            c = copy.copy(c)
            c.args = [self._hoist_arg(a, out) for a in c.args]
        k = c.kind
        xl = self.xl
        a = [x.expr for x in c.args]
        if k[0] == "action":
            self.inline(k[1], a, out)
        elif k[0] == "header":
            h = xl.header_loc(method_target(c))
            if k[1] == "isValid":
                return
            out.append(prim("add_header" if k[1] == "setValid" else "remove_header",
                            [{"type": "header", "value": h.name}]))
        elif k[0] == "stack":
            s = xl.header_loc(method_target(c))
            count = a[0]
            assert isinstance(count, A.IntLit)      # the checker folded it (const_arg)
            out.append(prim("push" if k[1] == "push_front" else "pop",
                            [{"type": "header_stack", "value": s.name}, hexstr(count.value)]))
        elif k[0] == "method":
            self.method(c, k[1], k[2], a, out)
        elif k[0] == "extern":
            self.extern(c, k[1], a, out)
        elif k[0] == "apply":
            raise CompileError("tables cannot be applied inside an action", c.pos)
        else:
            raise Unsupported("this call", c.pos)

    def inline(self, decl: A.ActionDecl, args: list[A.Expr], out: list[Json]) -> None:
        xl = self.xl
        saved = dict(xl.subst)
        new: dict[int, tuple[str, Any]] = {}
        for p, arg in zip(decl.params, args):
            if p.direction in ("out", "inout"):
                new[id(p)] = ("loc", xl.field_loc(arg))
            elif isinstance(arg, (A.IntLit, A.BoolLit, A.TypeMember)):
                new[id(p)] = ("expr", arg)
            elif isinstance(arg, A.Name) and id(arg.ref.decl) in xl.subst and xl.subst[id(arg.ref.decl)][0] == "rt":
                new[id(p)] = xl.subst[id(arg.ref.decl)]
            else:
                new[id(p)] = ("loc", self.temp(arg, out))
        xl.subst.update(new)
        try:
            self.stmt(decl.body, out)
        finally:
            xl.subst = saved

    def method(self, c: A.Call, typ: str, m: str, a: list[A.Expr], out: list[Json]) -> None:
        xl = self.xl
        inst = method_target(c)
        if typ == "register":
            name = self.b.object_name(inst)
            if m == "read":
                out.append(prim("register_read", [xl.scalar_loc(a[0]).json(),
                                                  {"type": "register_array", "value": name},
                                                  param(xl.data(a[1]))]))
            else:
                out.append(prim("register_write", [{"type": "register_array", "value": name},
                                                   param(xl.data(a[0])), param(xl.data(a[1]))]))
        elif typ == "counter":
            out.append(prim("count", [{"type": "counter_array", "value": self.b.object_name(inst)},
                                      param(xl.data(a[0]))]))
        elif typ == "direct_counter":
            pass    # BMv2 counts direct counters when the table is applied
        else:
            raise CompileError(f"{typ}.{m} cannot be called here", c.pos)

    def extern(self, c: A.Call, name: str, a: list[Any], out: list[Json]) -> None:
        xl = self.xl
        if name == "mark_to_drop":
            out.append(prim("mark_to_drop", [{"type": "header", "value": STANDARD_METADATA}]))
        elif name == "hash":
            inputs = self.field_list(a[3], out)
            algo = HASH_ALGOS.get(a[1].member)
            if algo is None:
                raise Unsupported(f"hash algorithm HashAlgorithm.{a[1].member}", a[1].pos)
            calc = self.b.calculation(algo, inputs)
            out.append(prim("modify_field_with_hash_based_offset", [
                xl.scalar_loc(a[0]).json(), param(xl.data(a[2])), {"type": "calculation", "value": calc},
                param(xl.data(a[4]))]))
        elif name == "random":
            out.append(prim("modify_field_rng_uniform", [xl.scalar_loc(a[0]).json(),
                                                          param(xl.data(a[1])), param(xl.data(a[2]))]))
        elif name in ("clone", "clone_preserving_field_list"):
            fl = self.b.empty_field_list_id() if name == "clone" else self.b.field_list_id(a[2].value, c.pos)
            p = "clone_ingress_pkt_to_egress" if a[0].member == "I2E" else "clone_egress_pkt_to_egress"
            out.append(prim(p, [param(xl.data(a[1])), hexstr(fl)]))
        elif name == "resubmit_preserving_field_list":
            out.append(prim("resubmit", [hexstr(self.b.field_list_id(a[0].value, c.pos))]))
        elif name == "recirculate_preserving_field_list":
            out.append(prim("recirculate", [hexstr(self.b.field_list_id(a[0].value, c.pos))]))
        elif name == "truncate":
            out.append(prim("truncate", [param(xl.data(a[0]))]))
        elif name in ("assert", "assume"):
            out.append(prim(name, [param(b2d(xl.bool(a[0])))]))
        elif name == "log_msg":
            vals = [param(xl.data(x)) for x in (a[1].items if len(a) > 1 else [])]
            out.append(prim("log_msg", [{"type": "string", "value": a[0].value},
                                        {"type": "parameters_vector", "value": vals}]))
        elif name == "digest":
            elems = self.digest_fields(a[1], out)
            lid = self.b.learn_list(a[1], elems)
            out.append(prim("generate_digest", [param(xl.data(a[0])), hexstr(lid)]))
        elif name in ("verify_checksum", "update_checksum", "verify_checksum_with_payload",
                      "update_checksum_with_payload"):
            raise CompileError(f"{name} can only be called in the verifyChecksum/computeChecksum "
                               f"controls", c.pos)
        elif name == "verify":
            raise CompileError("verify can only be called in a parser", c.pos)
        else:
            raise Unsupported(f"extern '{name}' here", c.pos)

    def field_list(self, data: A.Expr, out: list[Json]) -> list[Json]:
        items = data.items if isinstance(data, A.ListExpr) else [data]
        res = []
        for it in items:
            if isinstance(it.type, HeaderT):
                h = self.xl.header_loc(it)
                res.append({"type": "header", "value": h.name})
            else:
                res.append(self.field_or_temp(it, out))
        return res

    def digest_fields(self, data: A.Expr, out: list[Json]) -> list[tuple[str | None, Json, Type | None]]:
        if isinstance(data, A.ListExpr):
            return [(None, self.field_or_temp(it, out), it.type) for it in data.items]
        loc = self.xl.field_loc(data)
        res: list[tuple[str | None, Json, Type | None]] = []

        def walk(l: Loc, prefix: list[str]) -> None:
            if isinstance(l, StructLoc):
                for n, sub in l.members.items():
                    walk(sub, prefix + [n])
            elif isinstance(l, FieldLoc):
                res.append((".".join(prefix), l.json(), l.type))
            else:
                raise Unsupported("headers inside a digest struct", data.pos)
        walk(loc, [])
        return res
