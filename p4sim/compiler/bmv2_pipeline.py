"""Turning a control's apply block into a BMv2 pipeline: tables, conditionals and the next graph.

Statements that are not table applications or branches are grouped into synthesized actions run
by keyless ``tbl_*`` tables (as p4c does); ``if`` becomes a conditional node; ``t.apply().hit``,
``.miss`` and ``switch (t.apply().action_run)`` become the table's next_tables.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import ast as A
from .annotations import anno_str
from .bmv2_actions import PrimitiveLowering
from .bmv2_expr import ExprLowering, LocRef, has_cond, hexstr, method_target
from .bmv2_storage import FieldLoc, HdrLoc, Json, StackLoc, StructLoc
from .diagnostics import CompileError, Unsupported
from .types import BoolT, HeaderT, StackT, StructT

if TYPE_CHECKING:
    from .bmv2 import Backend


def expr_text(e: A.Expr) -> str:
    """Source-like text of a key expression (p4c names match fields this way)."""
    if isinstance(e, A.Name):
        return e.name
    if isinstance(e, A.Member):
        return f"{expr_text(e.expr)}.{e.member}"
    if isinstance(e, A.Index):
        return f"{expr_text(e.expr)}[{e.index.value}]"
    if isinstance(e, A.Slice):
        return f"{expr_text(e.expr)}[{e.hi}:{e.lo}]"
    if isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.member == "isValid":
        return f"{expr_text(e.func.expr)}.$valid$"      # p4c's name for an isValid() key
    if isinstance(e, A.Call):
        return f"{expr_text(e.func)}()"
    return "key"


def _simple(s):
    if isinstance(s, A.Assign):
        return not _has_apply(s.rhs)
    if isinstance(s, A.VarDecl):
        return s.init is None or not _has_apply(s.init)
    if isinstance(s, (A.ConstDecl, A.Empty, A.Exit)):
        return True
    if isinstance(s, A.CallStmt):
        return s.call.kind[0] not in ("apply", "action", "control")
    return False


def _apply_of(e):
    """(table, 'hit'|'miss', negated) if e is [!]t.apply().hit/miss, else None."""
    neg = False
    while isinstance(e, A.Unary) and e.op == "!":
        neg = not neg
        e = e.expr
    if isinstance(e, A.Member) and e.member in ("hit", "miss") and isinstance(e.expr, A.Call) \
            and e.expr.kind[0] == "apply":
        return e.expr.kind[1], e.member, neg
    return None


def _has_apply(e):
    return any(isinstance(n, A.Call) and getattr(n, "kind", None) and n.kind[0] == "apply" for n in A.walk(e))


class PipelineBuilder:
    def __init__(self, backend: Backend, control: A.ControlDecl, pipe_name: str) -> None:
        self.b = backend
        self.control = control
        self.name = pipe_name
        self.tables: list[Json] = []
        self.conditionals: list[Json] = []
        self.ret_target: str | None = None      # where 'return' goes: the end of the pipeline, or after a sub-control
        self.xl = ExprLowering(backend.storage, backend.objects)
        self.pl = PrimitiveLowering(backend, self.xl)

    def build(self) -> Json:
        entry = self.gen(self.control.body.stmts, None)
        return {"name": self.name, "id": self.b.next_id("pipeline"),
                "source_info": self.b.src(self.control.pos, self.control.name),
                "init_table": entry, "tables": self.tables, "action_profiles": [],
                "conditionals": self.conditionals}

    # ---- graph construction (backwards, from the continuation)
    def gen(self, stmts: list[A.Stmt], nxt: str | None) -> str | None:
        flat: list[A.Stmt] = []
        self._flatten(stmts, flat)
        seq = []
        for s in flat:
            seq.append(s)
            if isinstance(s, (A.Return, A.Exit)):
                break
        cur = nxt
        group: list[A.Stmt] = []
        for s in reversed(seq):
            if isinstance(s, A.Return):
                cur = self.ret_target
                continue
            if _simple(s):
                if isinstance(s, A.Exit):
                    cur = None
                group.insert(0, s)
                continue
            cur = self.flush(group, cur)
            group = []
            cur = self.node(s, cur)
        return self.flush(group, cur)

    def _flatten(self, stmts, out):
        for s in stmts:
            if isinstance(s, A.Block):
                self._flatten(s.stmts, out)
            else:
                out.append(s)

    def flush(self, group: list[A.Stmt], nxt: str | None) -> str | None:
        if not any(not isinstance(s, (A.Empty, A.ConstDecl)) and
                   not (isinstance(s, A.VarDecl) and s.init is None) for s in group):
            return nxt
        first = next(s for s in group if not isinstance(s, (A.Empty, A.ConstDecl, A.VarDecl)) or
                     (isinstance(s, A.VarDecl) and s.init is not None))
        single = [s for s in group if not isinstance(s, (A.Empty, A.ConstDecl))]
        prims = self.pl.lower(group)
        if len(single) == 1 and isinstance(single[0], A.CallStmt) and single[0].call.kind[0] == "action":
            decl = single[0].call.kind[1]
            aname = self.b.action_full_name(decl)
            if id(decl) in self.b.table_action_ids:
                # keep the table's action the only one with its name (the control plane's view)
                aname = self.b.unique_action_name(aname)
            tname = self.b.unique_table_name("tbl_" + decl.name)
            self.b.direct_called.add(id(decl))
        else:
            assert first.pos is not None    # statements always carry their position
            aname = self.b.unique_action_name(f"{self.b.prog_base}{first.pos.line}")
            tname = self.b.unique_table_name("tbl_" + aname)
        aid = self.b.add_action(aname, [], prims, first.pos)
        t = self._table_json(tname, first.pos, [], "exact", 1024, False, [aid], [aname], nxt,
                             {aname: nxt}, {"action_id": aid, "action_const": True, "action_data": [],
                                            "action_entry_const": True})
        self.tables.append(t)
        return tname

    def _table_json(self, name, pos, key, mt, size, counters, ids, names, base_next, next_tables, default):
        return {"name": name, "id": self.b.next_id("table"), "source_info": self.b.src(pos, name),
                "key": key, "match_type": mt, "type": "simple", "max_size": size,
                "with_counters": counters, "support_timeout": False, "direct_meters": None,
                "action_ids": ids, "actions": names, "base_default_next": base_next,
                "next_tables": next_tables, "default_entry": default}

    def node(self, s: A.Stmt, nxt: str | None) -> str | None:
        if isinstance(s, A.CallStmt) and s.call.kind[0] == "action":
            return self.flush([s], nxt)
        if isinstance(s, (A.Assign, A.VarDecl)):
            # x = [!]t.apply().hit/miss: the table's hit/miss successors assign true/false
            lhs = s.lhs if isinstance(s, A.Assign) else A.Name(s.name, pos=s.pos)
            rhs = s.rhs if isinstance(s, A.Assign) else s.init
            assert rhs is not None          # a declaration without initializer is _simple
            ap = _apply_of(rhs)
            if ap is None:
                raise Unsupported("a table apply inside a complex expression (assign "
                                  "'t.apply().hit' on its own, or use it in an 'if')", rhs.pos)
            table, what, neg = ap
            val = (what == "hit") != neg
            outs = []
            for v in (val, not val):
                lit = A.BoolLit(v, pos=rhs.pos)
                lit.type = rhs.type
                st: A.Assign | A.VarDecl = A.Assign(lhs, lit, pos=s.pos)
                if isinstance(s, A.VarDecl):
                    st = A.VarDecl(s.tref, s.name, lit, pos=s.pos)
                    st.vtype = s.vtype
                    self.b.storage.locs[id(st)] = self.b.storage.locs[id(s)]
                outs.append(self.flush([st], nxt))
            return self.table(table, {"__HIT__": outs[0], "__MISS__": outs[1]}, None, hitmiss=True)
        if isinstance(s, A.CallStmt) and s.call.kind[0] == "control":
            return self.subcontrol(s.call, nxt)
        if isinstance(s, A.CallStmt):
            t = s.call.kind[1]
            return self.table(t, {r.name: nxt for r in t.action_list}, nxt)
        if isinstance(s, A.If):
            ap = _apply_of(s.cond)
            tnext = self.gen([s.then], nxt)
            fnext = self.gen([s.els], nxt) if s.els is not None else nxt
            if ap is not None:
                table, what, neg = ap
                hit_first = (what == "hit") != neg
                hit, miss = (tnext, fnext) if hit_first else (fnext, tnext)
                return self.table(table, {"__HIT__": hit, "__MISS__": miss}, None, hitmiss=True)
            if has_cond(s.cond):
                # compute the condition (with its ?:) into a temp first, then branch on the temp
                tmp = self.b.storage.add_scalar("tmp", s.cond.type, s.cond.pos)
                cond = LocRef(tmp, s.cond.type, s.cond.pos)
                pre = A.Assign(cond, s.cond, pos=s.cond.pos)
                name = f"node_{self.b.next_id('node_name')}"
                c = {"name": name, "id": self.b.next_id("conditional"),
                     "source_info": self.b.src(s.cond.pos, None),
                     "expression": self.xl.bool(cond), "true_next": tnext, "false_next": fnext}
                self.conditionals.append(c)
                return self.flush([pre], name)
            if _has_apply(s.cond):
                raise Unsupported("a table apply inside a complex condition (use "
                                  "'if (t.apply().hit)' or a switch on action_run)", s.cond.pos)
            name = f"node_{self.b.next_id('node_name')}"
            self.conditionals.append({"name": name, "id": self.b.next_id("conditional"),
                                      "source_info": self.b.src(s.cond.pos, None),
                                      "expression": self.xl.bool(s.cond), "true_next": tnext,
                                      "false_next": fnext})
            return name
        if isinstance(s, A.Switch):
            table = s.expr.type.decl
            default_next = nxt
            bodies = {}
            pending = []
            for case in s.cases:
                if case.body is None:
                    pending.append(case.label)
                    continue
                entry = self.gen([case.body], nxt)
                for lab in pending + [case.label]:
                    if lab is None:
                        default_next = entry
                    else:
                        bodies[lab] = entry
                pending = []
            nt = {}
            for r in table.action_list:
                nt[r.name] = bodies.get(r.name, default_next)
            return self.table(table, nt, default_next)
        raise Unsupported(f"{type(s).__name__} in an apply block", s.pos)

    # ---- sub-controls
    def subcontrol(self, call: A.Call, nxt: str | None) -> str | None:
        """Inline ``inst.apply(args)`` as p4c does: out/inout parameters (and in parameters of header
        or struct type, which the callee cannot write) stand for their arguments; in parameters of
        scalar type are copied in first, so the callee sees the values at the call. A 'return' in
        the sub-control continues after the call."""
        inst = call.kind[1]
        st = self.b.storage
        copies: list[A.Stmt] = []
        bound = []
        for a, p in zip(call.args, inst.params):
            if p.direction in ("out", "inout") or isinstance(p.ptype, (HeaderT, StructT, StackT)):
                loc = self.xl.loc(a.expr)
                if isinstance(loc, tuple):
                    raise Unsupported("header stack '.next'/'.last' as a control argument", a.pos)
                bound.append((loc, a.expr))
                st.locs[id(p)] = loc
            else:
                tmp = st.add_scalar(p.name, p.ptype, a.pos)
                st.locs[id(p)] = tmp
                copies.append(A.Assign(LocRef(tmp, p.ptype, a.pos), a.expr, pos=a.pos))
        self._check_aliasing(bound, call)
        saved = self.ret_target
        self.ret_target = nxt
        try:
            entry = self.gen(inst.body.stmts, nxt)
        finally:
            self.ret_target = saved
        return self.flush(copies, entry)

    @staticmethod
    def _check_aliasing(bound, call):
        """Arguments bound by reference must not overlap: the inlined body would write through both
        names at once, where P4's copy-in/copy-out semantics keep them apart."""
        def parts(loc):
            if isinstance(loc, FieldLoc):
                return {(loc.header, loc.field)}
            if isinstance(loc, HdrLoc):
                return {(loc.name, None)}
            if isinstance(loc, StackLoc):
                return {(e.name, None) for e in loc.elems}
            if isinstance(loc, StructLoc):
                return set().union(set(), *(parts(m) for m in loc.members.values()))
            return set()

        def overlap(x, y):
            return any(h1 == h2 and (f1 is None or f2 is None or f1 == f2) for h1, f1 in x for h2, f2 in y)
        done: list[set] = []
        for loc, expr in bound:
            mine = parts(loc)
            for other in done:
                if overlap(mine, other):
                    raise Unsupported(f"passing overlapping storage to two parameters of "
                                      f"'{call.kind[1].instance.name}.apply'", expr.pos)
            done.append(mine)

    # ---- user tables
    def table(self, t: A.TableDecl, next_by_action: dict[str, str | None], base_next: str | None,
              hitmiss: bool = False) -> str:
        b = self.b
        name = b.full_name(t, t.control)
        keys = []
        kinds = set()
        for k in t.keys:
            kj = self.key(k)
            keys.append(kj)
            kinds.add(k.match_kind)
        if "range" in kinds:
            mt = "range"
        elif kinds & {"ternary", "optional"}:
            mt = "ternary"
        elif "lpm" in kinds:
            mt = "lpm"
        else:
            mt = "exact"
        ids, names = [], []
        for r in t.action_list:
            ids.append(b.table_action(r.decl))
            names.append(b.action_full_name(r.decl))
        if hitmiss:
            nt = next_by_action
        else:
            nt = {b.action_full_name(r.decl): next_by_action[r.name] for r in t.action_list}
        d = t.default
        assert d is not None        # the checker makes NoAction the default when none is given
        ddecl = d.kind[1]
        default = {"action_id": b.table_action(ddecl), "action_const": bool(t.default_const),
                   "action_data": [self._arg_hex(a.expr) for a in d.args],
                   "action_entry_const": bool(t.default_const)}
        # p4c sizes a table of const entries without a 'size' to its entries (the P4Info keeps 1024)
        size = t.size if t.size is not None else len(t.entries) if t.entries else 1024
        tj = self._table_json(name, t.pos, keys, mt, size, t.counters is not None, ids, names,
                              base_next, nt, default)
        if t.entries is not None:
            tj["entries"] = self.entries(t, mt)
        self.tables.append(tj)
        b.table_info.append((t, t.control, name))
        return name

    def _arg_hex(self, e):
        if isinstance(e, A.BoolLit):
            return "0x1" if e.value else "0x0"
        v = e.value if not isinstance(e, A.TypeMember) else e.ref
        w = getattr(e.type, "width", 32)
        return hexstr(v & ((1 << w) - 1), w)["value"]

    def key(self, k: A.KeyElem) -> Json:
        e = k.expr
        mask = None
        name = anno_str(k.annos, "name") or expr_text(e)
        if isinstance(e, A.Call) and e.kind == ("header", "isValid"):
            h = self.xl.header_loc(method_target(e))
            target = [h.name, "$valid$"]
        else:
            base = e
            if isinstance(e, A.Slice):
                base = e.expr
                mask = hexstr(((1 << (e.hi - e.lo + 1)) - 1) << e.lo, base.type.width)["value"]
            loc = self.xl.field_loc(base) if isinstance(base, (A.Member, A.Name, A.Index)) else None
            if not isinstance(loc, FieldLoc):
                raise Unsupported("a table key that is not a field, a slice of a field or isValid()", e.pos)
            target = [loc.header, loc.field]
        # BMv2 has no 'optional' match type: p4c emits optional keys as ternary (the P4Info keeps
        # OPTIONAL, and the control plane writes value/all-ones or a wildcard)
        mk = "ternary" if k.match_kind == "optional" else k.match_kind
        return {"match_type": mk, "name": name, "target": target, "mask": mask}

    def entries(self, t: A.TableDecl, mt: str) -> list[Json]:
        assert t.entries is not None
        out = []
        explicit = [en.priority for en in t.entries if en.priority is not None]
        top = max(explicit) if explicit else 0
        for i, en in enumerate(t.entries):
            mk = []
            for x, k in zip(en.keyset, t.keys):
                w = getattr(k.expr.type, "width", 1) if not isinstance(k.expr.type, BoolT) else 1
                if isinstance(k.expr, A.Slice):
                    w = k.expr.hi - k.expr.lo + 1
                mk.append(self.entry_key(x, k.match_kind, w))
            a = en.call
            ej: Json = {"source_info": self.b.src(en.pos, None), "match_key": mk,
                  "action_entry": {"action_id": self.b.table_action(a.kind[1]),
                                   "action_data": [self._arg_hex(x.expr) for x in a.args]}}
            if mt in ("ternary", "range", "lpm") or explicit:
                # BMv2: a smaller value wins; P4: the first entry (or the largest priority) wins
                ej["priority"] = (top - en.priority + 1) if en.priority is not None else i + 1
            out.append(ej)
        return out

    def entry_key(self, x: A.Expr, mk: str, w: int) -> Json:
        full = (1 << w) - 1

        def hx(v):
            return hexstr(v & full, w)["value"]

        def val(e):
            if isinstance(e, A.BoolLit):
                return int(e.value)
            if isinstance(e, A.TypeMember):
                return e.ref
            return e.value
        if isinstance(x, (A.Default, A.DontCare)):
            if mk == "exact":
                raise CompileError("'_'/default is not allowed for an exact key", x.pos)
            if mk == "lpm":
                return {"match_type": "lpm", "key": hx(0), "prefix_length": 0}
            if mk == "range":
                return {"match_type": "range", "start": hx(0), "end": hx(full)}
            return {"match_type": "ternary", "key": hx(0), "mask": hx(0)}
        if isinstance(x, A.Mask):
            v, m = val(x.value), val(x.mask)
            if mk == "lpm":
                plen = bin(m & full).count("1")
                if (m & full) != ((full >> (w - plen)) << (w - plen) if plen else 0):
                    raise CompileError("lpm mask must be a prefix mask", x.pos)
                return {"match_type": "lpm", "key": hx(v & m), "prefix_length": plen}
            if mk not in ("ternary", "optional"):
                raise CompileError(f"'&&&' is not allowed for a {mk} key", x.pos)
            return {"match_type": "ternary", "key": hx(v & m), "mask": hx(m)}
        if isinstance(x, A.Range):
            if mk != "range":
                raise CompileError(f"'..' is only allowed for a range key, not {mk}", x.pos)
            return {"match_type": "range", "start": hx(val(x.lo)), "end": hx(val(x.hi))}
        v = val(x)
        if mk == "lpm":
            return {"match_type": "lpm", "key": hx(v), "prefix_length": w}
        if mk in ("ternary", "optional"):
            return {"match_type": "ternary", "key": hx(v), "mask": hx(full)}
        if mk == "range":
            return {"match_type": "range", "start": hx(v), "end": hx(v)}
        return {"match_type": "exact", "key": hx(v)}
