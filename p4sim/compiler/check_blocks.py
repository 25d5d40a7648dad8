"""Parsers, controls, their local instances (externs and sub-controls), and the V1Switch main package."""
from __future__ import annotations

import copy

from . import ast as A
from .check_base import CheckerBase
from .diagnostics import CompileError, Unsupported
from .externs import EXTERN_CTORS, UNSUPPORTED_EXTERNS
from .limits import MAX_SIZE
from .naming import full_name
from .symbols import Scope, Sym
from .types import BitsT, BoolT, EnumT, ExternT, ObjT, StructT


class BlockChecker(CheckerBase):
    """Checks parser and control blocks, extern instances, and the v1model main's signature."""

    def block_locals(self, decls: list[A.Node], scope: Scope, ctx: str, owner: A.ParserDecl | A.ControlDecl) -> None:
        owner.vars, owner.instances, owner.actions, owner.tables = [], [], [], []
        owner.subcontrols = []
        for d in decls:
            if isinstance(d, A.ConstDecl):
                self.const_decl(d, scope)
            elif isinstance(d, A.VarDecl):
                saved = self.locals_out
                self.locals_out = owner.vars
                self.stmt(d, scope, ctx)
                self.locals_out = saved
            elif isinstance(d, A.Instance):
                self.instance(d, scope, owner)
            elif isinstance(d, A.ActionDecl):
                assert isinstance(owner, A.ControlDecl)     # parsers declare no actions (grammar)
                scope.add(Sym("action", d.name, d, ObjT("action", d)), d.pos)
                self.action_decl(d, scope, owner)
                owner.actions.append(d)
            elif isinstance(d, A.TableDecl):
                assert isinstance(owner, A.ControlDecl)     # ... nor tables
                self.table_decl(d, scope, owner)
                scope.add(Sym("table", d.name, d, ObjT("table", d)), d.pos)
                owner.tables.append(d)
            else:
                raise Unsupported(f"{type(d).__name__} inside a {ctx}", d.pos)

    def instance(self, d: A.Instance, scope: Scope, owner: A.ParserDecl | A.ControlDecl) -> None:
        tr = d.tref
        if isinstance(tr, A.NamedTypeRef) and tr.name in UNSUPPORTED_EXTERNS:
            raise Unsupported(f"extern '{tr.name}'", d.pos)
        t = self.resolve_type(tr)
        if isinstance(t, ObjT) and t.kind == "control" and isinstance(owner, A.ControlDecl):
            self.subcontrol_instance(d, t.decl, scope, owner)
            return
        if not isinstance(t, ExternT) or t.name not in EXTERN_CTORS:
            if isinstance(t, ObjT) and t.kind == "parser":
                raise Unsupported("instantiating a parser inside another (sub-parsers)", d.pos)
            if isinstance(t, ObjT) and t.kind == "control":
                raise Unsupported("instantiating a control inside a parser", d.pos)
            raise CompileError(f"cannot instantiate '{getattr(t, 'name', t)}' here", d.pos)
        lo, hi = EXTERN_CTORS[t.name]
        if not lo <= len(d.args) <= hi:
            raise CompileError(f"{t.name} takes {lo} constructor argument{'s' if lo != 1 else ''}, "
                               f"{len(d.args)} given", d.pos)
        d.etype = t
        if t.name == "register":
            if not t.args:
                raise CompileError("register needs a type argument, e.g. register<bit<32>>(N)", d.pos)
            vt = t.args[0]
            if not isinstance(vt, BitsT):
                raise Unsupported(f"register of {vt} (only bit<N>/int<N>)", d.pos)
            d.size = self.object_size(d.args[0].expr, scope, "register size")
        elif t.name == "counter":
            d.size = self.object_size(d.args[0].expr, scope, "counter size")
            d.unit = self._counter_type(d.args[1].expr, scope)
        elif t.name == "direct_counter":
            d.unit = self._counter_type(d.args[0].expr, scope)
            d.bound_table = None
        sym = Sym("instance", d.name, d, t, owner=owner)
        scope.add(sym, d.pos)
        d.sym = sym
        owner.instances.append(d)

    def subcontrol_instance(self, d: A.Instance, template: A.ControlDecl, scope: Scope, owner: A.ControlDecl) -> None:
        """``Sub() inst;`` inside a control: a private copy of Sub's declaration, checked on its own
        and named ``<owner path>.inst`` (p4c inlines sub-controls and names their tables, actions
        and externs ``Top.inst.object``)."""
        if d.args:
            raise Unsupported(f"constructor arguments for control '{template.name}'", d.pos)
        if template.name in self.instantiating:
            raise CompileError(f"control '{template.name}' instantiates itself "
                               f"({' -> '.join([*self.instantiating, template.name])})", d.pos)
        inst = copy.deepcopy(self.control_templates[template.name])
        inst.path = full_name(d, owner)
        inst.instance = d
        self.instantiating.append(template.name)
        try:
            self.control_decl(inst)
        finally:
            self.instantiating.pop()
        sym = Sym("instance", d.name, d, ObjT("control_instance", inst), owner=owner)
        scope.add(sym, d.pos)
        d.sym = sym
        owner.subcontrols.append(inst)

    def object_size(self, x: A.Expr, scope: Scope, what: str) -> int:
        n = self.const_int(x, scope, what)
        if not 0 < n <= MAX_SIZE:
            raise CompileError(f"{what} {n} is out of range (1 to {MAX_SIZE}; v1model sizes are bit<32>)", x.pos)
        return n

    def _counter_type(self, x, scope):
        v = self.expr(x, scope)
        if not (isinstance(v, A.TypeMember) and v.tname == "CounterType"):
            raise CompileError("counter type must be CounterType.packets, .bytes or .packets_and_bytes", x.pos)
        return v.member

    def parser_decl(self, d: A.ParserDecl) -> None:
        scope = Scope(self.globals)
        self.params(d.params, scope, d)
        self.block_locals(d.locals, scope, "parser", d)
        names = {}
        for st in d.states:
            if st.name in names or st.name in ("accept", "reject"):
                raise CompileError(f"parser state '{st.name}' is declared twice", st.pos)
            names[st.name] = st
        if "start" not in names:
            raise CompileError(f"parser '{d.name}' has no 'start' state", d.pos)
        for st in d.states:
            s = Scope(scope)
            saved = self.locals_out
            self.locals_out = d.vars
            self.stmts(st.stmts, s, "parser")
            self.locals_out = saved
            tr = st.transition
            if tr is None:
                raise CompileError(f"state '{st.name}' has no transition", st.pos)
            if isinstance(tr, A.TransitionDirect):
                self._state_ref(tr.state, names, tr.pos)
            else:
                tr.keys = [self.expr(k, s) for k in tr.keys]
                for k in tr.keys:
                    if not isinstance(k.type, (BitsT, BoolT)) and not (isinstance(k.type, EnumT) and k.type.underlying):
                        raise CompileError(f"select key must be bit<N>, int<N> or bool, not {k.type}", k.pos)
                for c in tr.cases:
                    self._state_ref(c.state, names, c.pos)
                    if len(c.keyset) == 1 and isinstance(c.keyset[0], (A.Default, A.DontCare)):
                        c.keyset = [c.keyset[0]] * len(tr.keys)
                        continue
                    if len(c.keyset) != len(tr.keys):
                        raise CompileError(f"select case has {len(c.keyset)} value(s), select has "
                                           f"{len(tr.keys)} key(s)", c.pos)
                    c.keyset = [self.keyset_elem(x, k.type, s) for x, k in zip(c.keyset, tr.keys)]

    def _state_ref(self, name, names, pos):
        if name not in names and name not in ("accept", "reject"):
            raise CompileError(f"unknown parser state '{name}'", pos)
        if name == "reject":
            self.warn(pos, "explicit transition to reject is compiled as accept, as p4c-bm2-ss does "
                           "(BMv2 has no reject state; parser_error stays as it was)", "unsupported")

    def control_decl(self, d: A.ControlDecl, ctx: str = "control") -> None:
        scope = Scope(self.globals)
        self.params(d.params, scope, d)
        self.block_locals(d.locals, scope, ctx, d)
        saved = self.locals_out
        self.locals_out = d.vars
        self.stmt(d.body, Scope(scope), ctx)
        self.locals_out = saved

    def check_main(self, m: A.Instance) -> None:
        if not (isinstance(m.tref, A.NamedTypeRef) and m.tref.name == "V1Switch"):
            raise Unsupported(f"package '{getattr(m.tref, 'name', '?')}' (only the v1model V1Switch)", m.pos)
        if len(m.args) != 6:
            raise CompileError(f"V1Switch takes 6 arguments (parser, verifyChecksum, ingress, egress, "
                               f"computeChecksum, deparser), {len(m.args)} given", m.pos)
        roles = ["parser", "verify", "ingress", "egress", "compute", "deparser"]
        blocks = []
        for role, a in zip(roles, m.args):
            x = a.expr
            if not isinstance(x, A.CtorCall) or x.args:
                raise CompileError(f"V1Switch argument for the {role} must be an instantiation like P()", a.pos)
            t = self.prog.types.get(x.tname)
            want = "parser" if role == "parser" else "control"
            if not isinstance(t, ObjT) or t.kind != want:
                raise CompileError(f"'{x.tname}' is not a {want}", x.pos)
            blocks.append(t.decl)
        seen = set()
        for b in blocks:
            if id(b) in seen and not (isinstance(b, A.ControlDecl) and not b.body.stmts and not b.locals):
                raise Unsupported(f"using '{b.name}' twice in V1Switch (except an empty control)", m.pos)
            seen.add(id(b))
        self._check_signature(blocks)
        self.prog.parser = blocks[0]
        self.parser_decl(blocks[0])
        done = set()
        for role, b in zip(roles[1:], blocks[1:]):
            b.role = role
            if id(b) not in done:
                self.control_decl(b, "deparser" if role == "deparser" else "control")
                done.add(id(b))
            setattr(self.prog, role, b)
        self.prog.main = m

    def _check_signature(self, blocks):
        p = blocks[0]
        if len(p.params) != 4:
            raise CompileError("the v1model parser takes (packet_in, out headers, inout metadata, "
                               "inout standard_metadata_t)", p.pos)
        counts = [2, 3, 3, 2, 2]
        for b, n in zip(blocks[1:], counts):
            if len(b.params) != n:
                raise CompileError(f"control '{b.name}' has {len(b.params)} parameters; the v1model "
                                   f"position it is used in takes {n}", b.pos)
        pt = [self.resolve_type(x.tref) for x in p.params]
        hdr_t, meta_t = pt[1], pt[2]

        def want(prm, t, ok, what):
            if not ok:
                raise CompileError(f"parameter '{prm.name}' of '{prm_owner[id(prm)]}' must be {what}, "
                                   f"not {t}", prm.pos)
        prm_owner = {id(x): b.name for b in blocks for x in b.params}
        sm = self.prog.types.get("standard_metadata_t")
        want(p.params[0], pt[0], isinstance(pt[0], ExternT) and pt[0].name == "packet_in", "packet_in")
        want(p.params[1], hdr_t, isinstance(hdr_t, StructT) and p.params[1].direction == "out",
             "an 'out' struct of headers")
        want(p.params[2], meta_t, isinstance(meta_t, StructT), "a struct (the user metadata)")
        want(p.params[3], pt[3], pt[3] is sm, "standard_metadata_t")
        for b in blocks[1:]:
            ts = [self.resolve_type(x.tref) for x in b.params]
            if b is blocks[-1]:
                want(b.params[0], ts[0], isinstance(ts[0], ExternT) and ts[0].name == "packet_out", "packet_out")
                want(b.params[1], ts[1], ts[1] is hdr_t, f"the parser's headers type {hdr_t}")
                continue
            want(b.params[0], ts[0], ts[0] is hdr_t, f"the parser's headers type {hdr_t}")
            want(b.params[1], ts[1], ts[1] is meta_t, f"the parser's metadata type {meta_t}")
            if len(ts) == 3:
                want(b.params[2], ts[2], ts[2] is sm, "standard_metadata_t")
