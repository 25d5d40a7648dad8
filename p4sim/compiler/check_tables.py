"""Actions and tables: parameters, keys, action lists, entries and default actions."""
from __future__ import annotations

from . import ast as A
from . import constfold as F
from .check_base import CheckerBase
from .diagnostics import CompileError, Unsupported
from .limits import MAX_SIZE
from .symbols import Scope, Sym
from .types import BitsT, BoolT, EnumT, ErrorT, ExternT, Type, VoidT


class TableActionChecker(CheckerBase):
    """Checks action declarations and table properties against BMv2's table model."""

    def params(self, params: list[A.Param], scope: Scope, owner: A.Node) -> None:
        for p in params:
            p.ptype = self.resolve_type(p.tref)
            scope.add(Sym("param", p.name, p, p.ptype, owner=owner), p.pos)

    def action_decl(self, d: A.ActionDecl, scope: Scope, control: A.ControlDecl | None) -> None:
        s = Scope(scope)
        for p in d.params:
            p.ptype = self.resolve_type(p.tref)
            if p.direction is None and not isinstance(p.ptype, (BitsT, BoolT)) and \
                    not (isinstance(p.ptype, EnumT) and p.ptype.underlying):
                raise Unsupported(f"action data parameter of type {p.ptype}", p.pos)
            s.add(Sym("param", p.name, p, p.ptype, owner=d), p.pos)
        saved = self.locals_out
        self.locals_out = []
        self.stmt(d.body, s, "action")
        d.locals = self.locals_out
        self.locals_out = saved
        d.control = control

    def table_decl(self, t: A.TableDecl, scope: Scope, control: A.ControlDecl) -> None:
        t.keys, t.action_list, t.default, t.default_const = [], [], None, False
        t.size, t.counters, t.entries = None, None, None
        t.control = control
        seen = set()
        for p in t.props:
            if p.name in seen:
                raise CompileError(f"table '{t.name}' has more than one '{p.name}' property", p.pos)
            seen.add(p.name)
            if p.name == "key":
                for k in p.value:
                    k.expr = self.expr(k.expr, scope)
                    if k.match_kind not in self.match_kinds:
                        raise CompileError(f"unknown match kind '{k.match_kind}'", k.pos)
                    if k.match_kind == "selector":
                        raise Unsupported("match kind 'selector' (action selectors)", k.pos)
                    if not isinstance(k.expr.type, (BitsT, BoolT)) and not (
                            isinstance(k.expr.type, EnumT) and k.expr.type.underlying) \
                            and not isinstance(k.expr.type, ErrorT):
                        raise CompileError(f"table key must be a bit<N>, int<N> or bool value, "
                                           f"not {k.expr.type}", k.expr.pos)
                    t.keys.append(k)
            elif p.name == "actions":
                for r in p.value:
                    s = scope.lookup(r.name)
                    if s is None or s.kind != "action":
                        raise CompileError(f"'{r.name}' in table '{t.name}' is not an action", r.pos)
                    if r.args:
                        raise Unsupported("action arguments in a table's actions list", r.pos)
                    r.decl = s.decl
                    for prm in s.decl.params:
                        if prm.direction is not None:
                            raise CompileError(f"action '{r.name}' has directional parameter '{prm.name}' "
                                               f"and cannot be used in a table", r.pos)
                    t.action_list.append(r)
            elif p.name == "default_action":
                t.default, t.default_const = p.value, p.const
            elif p.name == "size":
                t.size = self.const_int(p.value, scope, "table size")
                if not 0 <= t.size <= MAX_SIZE:
                    raise CompileError(f"table size {t.size} is out of range (0 to {MAX_SIZE})", p.value.pos)
                t.size = t.size or None          # 0: the default size, as p4c
            elif p.name == "counters":
                c = self.expr(p.value, scope)
                if not (isinstance(c, A.Name) and isinstance(c.type, ExternT) and c.type.name == "direct_counter"):
                    raise CompileError("table 'counters' must name a direct_counter", p.value.pos)
                inst = c.ref.decl
                if getattr(inst, "bound_table", None) is not None:
                    raise CompileError(f"direct_counter '{c.name}' is already attached to a table", p.value.pos)
                inst.bound_table = t
                t.counters = inst
            elif p.name == "entries":
                t.entries = p.value
                if not p.const:
                    raise Unsupported("non-const table entries (use 'const entries')", p.pos)
            elif p.name in ("implementation", "meters"):
                raise Unsupported(f"table property '{p.name}'", p.pos)
            elif p.name == "support_timeout":
                v = self.expr(p.value, scope)
                if not isinstance(v, A.BoolLit):
                    raise CompileError("support_timeout must be true or false", p.value.pos)
                if v.value:
                    raise Unsupported("support_timeout = true", p.pos)
            else:
                raise CompileError(f"unknown table property '{p.name}'", p.pos)
        if not t.action_list:
            raise CompileError(f"table '{t.name}' has no 'actions' property", t.pos)
        names = {r.name: r for r in t.action_list}
        if t.default is not None:
            t.default = self._table_action_call(t, t.default, names, scope, "default_action")
        else:
            na = scope.lookup("NoAction")
            if na is None:
                raise CompileError(f"table '{t.name}' has no default_action and NoAction is not declared "
                                   "(include <core.p4>)", t.pos)
            if "NoAction" not in names:
                # as p4c: the implicit default NoAction joins the table's actions, default-only
                ref = A.ActionRef("NoAction", [], [A.Annotation("defaultonly", [], pos=t.pos)], pos=t.pos)
                ref.decl = na.decl
                t.action_list.append(ref)
            t.default = A.Call(A.Name("NoAction"), None, [], pos=t.pos)
            t.default.kind, t.default.type = ("action", na.decl), VoidT()
        if t.entries is not None:
            prios = []
            for en in t.entries:
                if len(en.keyset) != len(t.keys):
                    raise CompileError(f"entry has {len(en.keyset)} key value(s), table '{t.name}' has "
                                       f"{len(t.keys)} key(s)", en.pos)
                en.keyset = [self.keyset_elem(x, k.expr.type, scope, k.match_kind)
                             for x, k in zip(en.keyset, t.keys)]
                ref = en.action
                call = A.Call(A.Name(ref.name, pos=ref.pos), None, ref.args, pos=ref.pos)
                en.call = self._table_action_call(t, call, names, scope, "entry action")
                if en.priority is not None:
                    en.priority = self.const_int(en.priority, scope, "entry priority")
                    if not 0 <= en.priority < 1 << 31:
                        raise CompileError(f"entry priority {en.priority} is out of range (0 to 2147483647)", en.pos)
                prios.append(en.priority)
            if any(p is None for p in prios) and any(p is not None for p in prios):
                raise Unsupported("mixing const entries with and without 'priority ='", t.pos)

    def _table_action_call(self, t, v, names, scope, what):
        if isinstance(v, A.Name):
            v = A.Call(v, None, [], pos=v.pos)
        if not isinstance(v, A.Call) or not isinstance(v.func, A.Name):
            raise CompileError(f"{what} must be an action call", v.pos)
        if v.func.name not in names:
            raise CompileError(f"{what} '{v.func.name}' is not in the actions of table '{t.name}'", v.pos)
        decl = names[v.func.name].decl
        if len(v.args) != len(decl.params):
            raise CompileError(f"action '{decl.name}' takes {len(decl.params)} argument"
                               f"{'s' if len(decl.params) != 1 else ''}, {len(v.args)} given", v.pos)
        for a, p in zip(v.args, decl.params):
            a.expr = self.coerce(self.expr(a.expr, scope, p.ptype), p.ptype, a.pos)
            if not F.is_const(a.expr) and not isinstance(a.expr, A.TypeMember):
                raise CompileError(f"argument '{p.name}' of {what} must be a compile-time constant", a.pos)
        v.kind, v.type = ("action", decl), VoidT()
        return v

    def keyset_elem(self, x: A.Expr, t: Type, scope: Scope, match_kind: str | None = None) -> A.Expr:
        if isinstance(x, (A.Default, A.DontCare)):
            x.type = t
            return x
        if isinstance(x, A.Mask):
            x.value = self.coerce(self.expr(x.value, scope, t), t)
            x.mask = self.coerce(self.expr(x.mask, scope, t), t)
            for y in (x.value, x.mask):
                if not F.is_const(y):
                    raise CompileError("keyset values must be compile-time constants", y.pos)
            return x
        if isinstance(x, A.Range):
            x.lo = self.coerce(self.expr(x.lo, scope, t), t)
            x.hi = self.coerce(self.expr(x.hi, scope, t), t)
            for y in (x.lo, x.hi):
                if not F.is_const(y):
                    raise CompileError("keyset values must be compile-time constants", y.pos)
            return x
        v = self.expr(x, scope, t)
        if isinstance(t, ErrorT) or isinstance(t, EnumT):
            if v.type != t:
                raise CompileError(f"type mismatch: expected {t}, got {v.type}", x.pos)
            return v
        v = self.coerce(v, t, x.pos)
        if not F.is_const(v):
            raise CompileError("keyset values must be compile-time constants", x.pos)
        return v
