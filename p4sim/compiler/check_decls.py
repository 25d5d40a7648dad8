"""Top-level declarations and type references: they fill the program's type table first."""
from __future__ import annotations

import copy

from . import ast as A
from . import constfold as F
from .check_base import CheckerBase
from .diagnostics import CompileError, Pos, Unsupported, Warning_
from .externs import EXTERN_CTORS, UNSUPPORTED_EXTERNS
from .limits import MAX_STACK_SIZE, MAX_WIDTH
from .symbols import Scope, Sym
from .types import BitsT, BoolT, EnumT, ErrorT, ExternT, HeaderT, IntT, ObjT, StackT, StringT, StructT, Type, VoidT


def _contains(t: Type, target: StructT) -> bool:
    """True if a value of type `t` holds a `target` somewhere inside (iteratively; each struct
    type is looked at once, so even a cyclic type table costs its size)."""
    stack, seen = [t], set()
    while stack:
        x = stack.pop()
        if x is target:
            return True
        if isinstance(x, StackT):
            stack.append(x.elem)
        elif isinstance(x, (StructT, HeaderT)) and id(x) not in seen:
            seen.add(id(x))
            stack.extend(ft for _, ft, _ in x.fields)
    return False


class DeclChecker(CheckerBase):
    """Headers, structs, enums, constants and externs at top level, and type-reference resolution."""

    def top_decl(self, d: A.Node) -> None:
        g = self.globals
        if isinstance(d, A.HeaderDecl):
            t = HeaderT(d.name, annos=d.annos)
            t.pos = d.pos
            self._declare_type(d.name, t, d.pos)
            self._unique_fields(d, "header")
            for f in d.fields:
                ft = self.resolve_type(f.tref)
                if isinstance(ft, BoolT):
                    ft = BoolT()
                elif not isinstance(ft, BitsT) and not (isinstance(ft, EnumT) and ft.underlying):
                    raise Unsupported(f"header field of type {ft}", f.pos)
                t.fields.append((f.name, ft, f.annos))
            self.prog.header_types.append(t)
        elif isinstance(d, A.StructDecl):
            st = StructT(d.name, annos=d.annos)
            self._declare_type(d.name, st, d.pos)
            self._unique_fields(d, "struct")
            for f in d.fields:
                ft = self.resolve_type(f.tref)
                if _contains(ft, st):
                    raise CompileError(f"struct '{d.name}' contains itself (field '{f.name}' of type {ft}); "
                                       f"P4 types cannot be recursive", f.pos)
                st.fields.append((f.name, ft, f.annos))
        elif isinstance(d, A.UnionDecl):
            raise Unsupported("header_union", d.pos)
        elif isinstance(d, A.TypedefDecl):
            self._declare_type(d.name, self.resolve_type(d.tref), d.pos)
        elif isinstance(d, A.EnumDecl):
            self.enum_decl(d)
        elif isinstance(d, A.ErrorDecl):
            for i, m in enumerate(d.members):
                if m in d.members[:i]:
                    raise CompileError(f"error '{m}' is declared twice", getattr(m, "pos", None) or d.pos)
                if m not in self.prog.errors:
                    self.prog.errors.append(m)
        elif isinstance(d, A.MatchKindDecl):
            self.match_kinds.update(d.members)
        elif isinstance(d, A.ConstDecl):
            self.const_decl(d, g)
        elif isinstance(d, A.ExternObj):
            if d.name not in EXTERN_CTORS and d.name not in ("packet_in", "packet_out"):
                self._declare_type(d.name, ExternT(d.name), d.pos)  # known only for a message later
            else:
                self._declare_type(d.name, ExternT(d.name), d.pos)
        elif isinstance(d, A.ExternFunc):
            if d.name not in g.syms:
                g.add(Sym("extern_func", d.name, d), d.pos)
        elif isinstance(d, A.FunctionDecl):
            self.function_decl(d)
        elif isinstance(d, A.ActionDecl):
            g.add(Sym("action", d.name, d, ObjT("action", d)), d.pos)
            self.action_decl(d, g, None)
            self.prog.actions_global[d.name] = d
        elif isinstance(d, A.TypeDecl):
            self._declare_type(d.name, ObjT(d.kind + "_type", d), d.pos)
        elif isinstance(d, A.ParserDecl):
            self._declare_type(d.name, ObjT("parser", d), d.pos)
        elif isinstance(d, A.ControlDecl):
            self._declare_type(d.name, ObjT("control", d), d.pos)
            if d.name in self.template_names:
                self.control_templates[d.name] = copy.deepcopy(d)
        elif isinstance(d, A.Instance):
            raise Unsupported("top-level instantiation other than 'main'", d.pos)
        else:
            raise Unsupported(type(d).__name__, d.pos)

    @staticmethod
    def _unique_fields(d, what):
        seen = set()
        for f in d.fields:
            if f.name in seen:
                raise CompileError(f"{what} '{d.name}' has two fields named '{f.name}'", f.pos)
            seen.add(f.name)

    def _declare_type(self, name, t, pos):
        if name in self.prog.types:
            raise CompileError(f"type '{name}' is already declared", pos)
        self.prog.types[name] = t

    def function_decl(self, d: A.FunctionDecl) -> None:
        """A function whose body is one ``return expr;``: inlined at each call (as p4c inlines
        functions), its parameters standing for the call's arguments."""
        d.rtype = self.resolve_type(d.ret)
        if not isinstance(d.rtype, (BitsT, BoolT)):
            raise Unsupported(f"function returning {d.rtype} (only bit<N>, int<N> or bool)", d.ret.pos)
        scope = Scope(self.globals)
        for p in d.params:
            if p.direction not in (None, "in"):
                raise Unsupported(f"'{p.direction}' parameter of a function (only 'in')", p.pos)
            p.ptype = self.resolve_type(p.tref)
            if not isinstance(p.ptype, (BitsT, BoolT)):
                raise Unsupported(f"function parameter of type {p.ptype} (only bit<N>, int<N> or bool)", p.pos)
            scope.add(Sym("param", p.name, p, p.ptype, owner=d), p.pos)
        body = [s for s in d.body.stmts if not isinstance(s, A.Empty)]
        if len(body) != 1 or not isinstance(body[0], A.Return) or body[0].expr is None:
            raise Unsupported("a function body other than one 'return <expression>;'", d.body.pos)
        e = self.coerce(self.expr(body[0].expr, scope, d.rtype), d.rtype, body[0].expr.pos)
        for node in A.walk(e):
            if isinstance(node, A.Cond):
                raise Unsupported("'?:' inside a function (use an if in the caller)", node.pos)
            if isinstance(node, A.Call) and node.kind[0] not in ("header", "function"):
                raise Unsupported("calls other than isValid() and functions inside a function", node.pos)
        d.result = e
        self.globals.add(Sym("function", d.name, d, ObjT("function", d)), d.pos)

    def enum_decl(self, d: A.EnumDecl) -> None:
        seen = set()
        for name, _, pos in d.members:
            if name in seen:
                raise CompileError(f"enum '{d.name}' declares '{name}' twice", pos)
            seen.add(name)
        if d.underlying is None:
            t = EnumT(d.name, [m[0] for m in d.members])
        else:
            ut = self.resolve_type(d.underlying)
            if not isinstance(ut, BitsT):
                raise CompileError(f"enum '{d.name}': underlying type must be bit<N> or int<N>", d.pos)
            values = {}
            for name, e, pos in d.members:
                assert e is not None        # the grammar gives serializable enum members a value
                v = self.expr(e, self.globals, ut)
                if not isinstance(v, A.IntLit):
                    raise CompileError(f"enum member '{name}' must be a compile-time constant", pos)
                values[name] = F.normalize(v.value, ut)
            t = EnumT(d.name, [m[0] for m in d.members], ut, values)
        self._declare_type(d.name, t, d.pos)
        self.prog.enums.append(t)

    def const_decl(self, d: A.ConstDecl, scope: Scope) -> None:
        t = self.resolve_type(d.tref)
        v = self.coerce(self.expr(d.value, scope, t), t, d.value.pos)
        if not F.is_const(v) and not isinstance(v, A.TypeMember):
            raise CompileError(f"constant '{d.name}' must have a compile-time constant value", d.value.pos)
        scope.add(Sym("const", d.name, d, t, v), d.pos)

    def resolve_type(self, tr: A.TypeRef) -> Type:
        if isinstance(tr, A.BitTypeRef):
            w = self.const_int(tr.width, self.globals, "bit width")
            if w <= 0:
                raise CompileError(f"bit width must be positive, got {w}", tr.pos)
            if w == 1 and tr.signed:
                raise CompileError("int<1>: Signed types cannot be 1-bit wide", tr.pos)
            if w > MAX_WIDTH:
                raise CompileError(f"{'int' if tr.signed else 'bit'}<{w}> is wider than {MAX_WIDTH} bits "
                                   f"(p4c's limit)", tr.pos)
            return BitsT(w, tr.signed)
        if isinstance(tr, A.BoolTypeRef):
            return BoolT()
        if isinstance(tr, A.ErrorTypeRef):
            return ErrorT()
        if isinstance(tr, A.StringTypeRef):
            return StringT()
        if isinstance(tr, A.VoidTypeRef):
            return VoidT()
        if isinstance(tr, A.InfIntTypeRef):
            return IntT()
        if isinstance(tr, A.VarbitTypeRef):
            raise Unsupported("varbit", tr.pos)
        if isinstance(tr, A.TupleTypeRef):
            raise Unsupported("tuple type", tr.pos)
        if isinstance(tr, A.StackTypeRef):
            elem = self.resolve_type(tr.elem)
            if not isinstance(elem, HeaderT):
                raise CompileError(f"header stack element type must be a header, not {elem}", tr.pos)
            n = self.const_int(tr.size, self.globals, "header stack size")
            if n <= 0:
                raise CompileError("header stack size must be positive", tr.size.pos)
            if n > MAX_STACK_SIZE:
                raise CompileError(f"header stack size {n} is larger than {MAX_STACK_SIZE} (BMv2 allocates "
                                   f"every element as a header)", tr.size.pos)
            return StackT(elem, n)
        if isinstance(tr, A.NamedTypeRef):
            if tr.name.startswith("Tp_"):
                return ObjT("type_param")
            t = self.prog.types.get(tr.name)
            if t is None:
                if tr.name in UNSUPPORTED_EXTERNS:
                    raise Unsupported(f"extern '{tr.name}'", tr.pos)
                raise CompileError(f"unknown type '{tr.name}'", tr.pos)
            if isinstance(t, ExternT):
                return ExternT(t.name, [self.resolve_type(a) for a in (tr.args or [])])
            if tr.args:
                raise Unsupported(f"type arguments on '{tr.name}'", tr.pos)
            return t
        raise Unsupported(f"type {type(tr).__name__}", tr.pos)

    def const_int(self, e: A.Expr, scope: Scope, what: str) -> int:
        v = self.expr(e, scope)
        if not isinstance(v, A.IntLit):
            raise CompileError(f"{what} must be a compile-time integer constant", e.pos)
        return v.value

    def warn(self, pos: Pos | None, msg: str, kind: str = "overflow") -> None:
        w = Warning_(kind, msg, pos)
        if all(x.key() != w.key() for x in self.prog.warnings):
            self.prog.warnings.append(w)
