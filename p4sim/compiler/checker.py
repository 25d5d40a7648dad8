"""Name resolution, type checking, width inference and constant folding for the P4 subset.

The checker annotates the AST in place: every expression gets ``type``; names get ``ref`` (a Sym);
calls get ``kind``; constants are folded into literals. Anything outside the subset raises
diagnostics.Unsupported at the construct's position.
"""
from . import ast as A
from . import constfold as F
from .diagnostics import CompileError, Unsupported
from .externs import EXTERN_CTORS, EXTERN_FUNCS, EXTERN_METHODS, UNSUPPORTED_EXTERNS
from .types import (BitsT, BoolT, EnumT, ErrorT, ExternT, HeaderT, IntT, ListT, ObjT, StackT, StringT,
                    StructLikeT, StructT, VoidT)


class Sym:
    """A named thing in scope: kind is param, local, const, instance, action, table, state..."""

    __slots__ = ("kind", "name", "decl", "type", "value", "owner")

    def __init__(self, kind, name, decl, type_=None, value=None, owner=None):
        self.kind, self.name, self.decl, self.type, self.value, self.owner = kind, name, decl, type_, value, owner


class Scope:
    def __init__(self, parent=None):
        self.parent, self.syms = parent, {}

    def add(self, sym, pos):
        if sym.name in self.syms:
            raise CompileError(f"'{sym.name}' is already declared in this scope", pos)
        self.syms[sym.name] = sym

    def lookup(self, name):
        s = self
        while s is not None:
            if name in s.syms:
                return s.syms[name]
            s = s.parent
        return None


def anno(annos, name):
    """The first annotation called ``name`` in a list, or None."""
    for a in annos or ():
        if a.name == name:
            return a
    return None


def anno_str(annos, name):
    a = anno(annos, name)
    if a is None or not a.args or not isinstance(a.args[0], A.StrLit):
        return None
    return a.args[0].value


class Program:
    """The checked program: what the backends consume."""

    def __init__(self):
        self.types = {}
        self.header_types = []        # HeaderT in declaration order
        self.errors = []              # error member names, in declaration order
        self.enums = []               # EnumT
        self.parser = self.verify = self.ingress = self.egress = self.compute = self.deparser = None
        self.actions_global = {}
        self.warnings = []


class Checker:
    def __init__(self):
        self.prog = Program()
        self.globals = Scope()
        self.match_kinds = set()

    # ------------------------------------------------------------------ program
    def check(self, ast_prog):
        main = None
        for d in ast_prog.decls:
            if isinstance(d, A.Instance) and d.name == "main":
                main = d
            else:
                self.top_decl(d)
        if main is None:
            raise CompileError("the program has no 'main' instance (expected: V1Switch(...) main;)")
        self.check_main(main)
        return self.prog

    def top_decl(self, d):
        g = self.globals
        if isinstance(d, A.HeaderDecl):
            t = HeaderT(d.name, annos=d.annos)
            t.pos = d.pos
            self._declare_type(d.name, t, d.pos)
            for f in d.fields:
                ft = self.resolve_type(f.tref)
                if isinstance(ft, BoolT):
                    ft = BoolT()
                elif not isinstance(ft, BitsT) and not (isinstance(ft, EnumT) and ft.underlying):
                    raise Unsupported(f"header field of type {ft}", f.pos)
                t.fields.append((f.name, ft, f.annos))
            self.prog.header_types.append(t)
        elif isinstance(d, A.StructDecl):
            t = StructT(d.name, annos=d.annos)
            self._declare_type(d.name, t, d.pos)
            for f in d.fields:
                t.fields.append((f.name, self.resolve_type(f.tref), f.annos))
        elif isinstance(d, A.UnionDecl):
            raise Unsupported("header_union", d.pos)
        elif isinstance(d, A.TypedefDecl):
            self._declare_type(d.name, self.resolve_type(d.tref), d.pos)
        elif isinstance(d, A.EnumDecl):
            self.enum_decl(d)
        elif isinstance(d, A.ErrorDecl):
            for m in d.members:
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
        elif isinstance(d, A.Instance):
            raise Unsupported("top-level instantiation other than 'main'", d.pos)
        else:
            raise Unsupported(type(d).__name__, d.pos)

    def _declare_type(self, name, t, pos):
        if name in self.prog.types:
            raise CompileError(f"type '{name}' is already declared", pos)
        self.prog.types[name] = t

    def enum_decl(self, d):
        if d.underlying is None:
            t = EnumT(d.name, [m[0] for m in d.members])
        else:
            ut = self.resolve_type(d.underlying)
            if not isinstance(ut, BitsT):
                raise CompileError(f"enum '{d.name}': underlying type must be bit<N> or int<N>", d.pos)
            values = {}
            for name, e, pos in d.members:
                v = self.expr(e, self.globals, ut)
                if not isinstance(v, A.IntLit):
                    raise CompileError(f"enum member '{name}' must be a compile-time constant", pos)
                values[name] = F.normalize(v.value, ut)
            t = EnumT(d.name, [m[0] for m in d.members], ut, values)
        self._declare_type(d.name, t, d.pos)
        self.prog.enums.append(t)

    def const_decl(self, d, scope):
        t = self.resolve_type(d.tref)
        v = self.coerce(self.expr(d.value, scope, t), t, d.value.pos)
        if not F.is_const(v) and not isinstance(v, A.TypeMember):
            raise CompileError(f"constant '{d.name}' must have a compile-time constant value", d.value.pos)
        scope.add(Sym("const", d.name, d, t, v), d.pos)

    # ------------------------------------------------------------------ types
    def resolve_type(self, tr):
        if isinstance(tr, A.BitTypeRef):
            w = self.const_int(tr.width, self.globals, "bit width")
            if w <= 0:
                raise CompileError(f"bit width must be positive, got {w}", tr.pos)
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

    def const_int(self, e, scope, what):
        v = self.expr(e, scope)
        if not isinstance(v, A.IntLit):
            raise CompileError(f"{what} must be a compile-time integer constant", e.pos)
        return v.value

    def warn(self, pos, msg):
        w = f"{pos.file}:{pos.line}:{pos.col}: warning: {msg}" if pos else f"warning: {msg}"
        if w not in self.prog.warnings:
            self.prog.warnings.append(w)

    # ------------------------------------------------------------------ coercion
    def coerce(self, e, t, pos=None):
        """Convert expression ``e`` to type ``t`` where P4 allows it implicitly; error otherwise."""
        pos = pos or e.pos
        if t is None or isinstance(t, ObjT) or e.type == t:
            return e
        if isinstance(e.type, IntT):
            if isinstance(t, BitsT):
                if isinstance(e, A.IntLit):
                    # unsigned targets also take small negative constants (-1 is all ones)
                    lo = -(1 << (t.width - 1)) if t.signed else -((1 << t.width) - 1)
                    hi = (1 << (t.width - 1)) - 1 if t.signed else (1 << t.width) - 1
                    if not lo <= e.value <= hi:
                        self.warn(e.pos, f"value {e.value} does not fit in {t}; it is truncated to "
                                         f"{F.normalize(e.value, t)}")
                    return F.int_lit(e.value, t, e.pos)
                e.type = t
                return e
            if isinstance(t, IntT):
                return e
        if isinstance(t, ListT) and isinstance(e, A.ListExpr) and len(t.items) == len(e.items):
            e.items = [self.coerce(x, xt) for x, xt in zip(e.items, t.items)]
            e.type = t
            return e
        raise CompileError(f"type mismatch: expected {t}, got {e.type}", pos)

    def unify(self, l, r, op, pos):
        """Bring two operands to a common type (int literals take the other side's width)."""
        lt, rt = l.type, r.type
        if isinstance(lt, IntT) and isinstance(rt, BitsT):
            l = self.coerce(l, rt)
        elif isinstance(rt, IntT) and isinstance(lt, BitsT):
            r = self.coerce(r, lt)
        elif lt != rt:
            raise CompileError(f"operands of '{op}' have different types: {lt} and {rt}"
                               f" (cast one of them)", pos)
        return l, r

    # ------------------------------------------------------------------ expressions
    def expr(self, e, scope, want=None):
        m = getattr(self, "ex_" + type(e).__name__, None)
        if m is None:
            raise Unsupported(f"expression {type(e).__name__}", e.pos)
        return m(e, scope, want)

    def ex_IntLit(self, e, scope, want):
        if e.width is None:
            e.type = IntT()
        else:
            e.type = BitsT(e.width, e.signed)
            e.value = F.normalize(e.value, e.type)
        return e

    def ex_BoolLit(self, e, scope, want):
        e.type = BoolT()
        return e

    def ex_StrLit(self, e, scope, want):
        e.type = StringT()
        return e

    def ex_Name(self, e, scope, want):
        s = scope.lookup(e.name)
        if s is None:
            if e.name in self.prog.types:
                raise CompileError(f"'{e.name}' is a type, not a value", e.pos)
            if e.name in UNSUPPORTED_EXTERNS:
                raise Unsupported(f"extern '{UNSUPPORTED_EXTERNS[e.name]}'", e.pos)
            raise CompileError(f"undeclared name '{e.name}'", e.pos)
        if s.kind == "const":
            v = s.value
            if isinstance(v, A.IntLit):
                return F.int_lit(v.value, v.type, e.pos)
            if isinstance(v, A.BoolLit):
                return F.bool_lit(v.value, e.pos)
            c = A.TypeMember(v.tname, v.member, pos=e.pos)
            c.type, c.ref = v.type, v.ref
            return c
        e.ref = s
        e.type = s.type if s.type is not None else ObjT(s.kind, s.decl)
        return e

    def ex_TypeMember(self, e, scope, want):
        if e.tname == "error":
            if e.member not in self.prog.errors:
                raise CompileError(f"unknown error 'error.{e.member}'", e.pos)
            e.type, e.ref = ErrorT(), self.prog.errors.index(e.member)
            return e
        t = self.prog.types.get(e.tname)
        if isinstance(t, EnumT):
            if e.member not in t.members:
                raise CompileError(f"enum '{t.name}' has no member '{e.member}'", e.pos)
            e.type = t
            e.ref = t.values.get(e.member, t.members.index(e.member))
            return e
        raise CompileError(f"'{e.tname}.{e.member}': '{e.tname}' is not an enum", e.pos)

    def ex_Member(self, e, scope, want):
        base = self.expr(e.expr, scope)
        e.expr = base
        bt = base.type
        m = e.member
        if isinstance(bt, StructLikeT):
            ft = bt.field(m)
            if ft is not None:
                e.type = ft
                return e
            if isinstance(bt, HeaderT) and m in ("isValid", "setValid", "setInvalid"):
                e.type = ObjT("header_method")
                return e
            raise CompileError(f"{'header' if isinstance(bt, HeaderT) else 'struct'} type '{bt.name}'"
                               f" has no field '{m}'", e.pos)
        if isinstance(bt, StackT):
            if m in ("next", "last"):
                e.type = bt.elem
                return e
            if m == "size":
                return F.int_lit(bt.size, BitsT(32), e.pos)
            if m in ("push_front", "pop_front"):
                e.type = ObjT("stack_method")
                return e
            if m == "lastIndex":
                raise Unsupported("header stack 'lastIndex'", e.pos)
            raise CompileError(f"header stack has no member '{m}'", e.pos)
        if isinstance(bt, ExternT):
            if (bt.name, m) not in EXTERN_METHODS:
                raise CompileError(f"extern '{bt.name}' has no method '{m}'", e.pos)
            e.type = ObjT("extern_method")
            return e
        if isinstance(bt, ObjT):
            if bt.kind == "table" and m == "apply":
                e.type = ObjT("table_apply", bt.decl)
                return e
            if bt.kind == "apply_result":
                if m in ("hit", "miss"):
                    e.type = BoolT()
                    return e
                if m == "action_run":
                    e.type = ObjT("action_run", bt.decl)
                    return e
            raise CompileError(f"{bt.kind} has no member '{m}'", e.pos)
        raise CompileError(f"cannot access member '{m}' of a value of type {bt}", e.pos)

    def ex_Index(self, e, scope, want):
        e.expr = self.expr(e.expr, scope)
        if not isinstance(e.expr.type, StackT):
            raise CompileError(f"indexing needs a header stack, not {e.expr.type}", e.pos)
        idx = self.expr(e.index, scope)
        if not isinstance(idx, A.IntLit):
            raise Unsupported("header stack index that is not a compile-time constant", e.index.pos)
        if not 0 <= idx.value < e.expr.type.size:
            raise CompileError(f"header stack index {idx.value} out of bounds (size {e.expr.type.size})",
                               e.index.pos)
        e.index = idx
        e.type = e.expr.type.elem
        return e

    def ex_Slice(self, e, scope, want):
        e.expr = self.expr(e.expr, scope)
        t = e.expr.type
        hi = self.const_int(e.hi, scope, "slice bound")
        lo = self.const_int(e.lo, scope, "slice bound")
        if isinstance(t, IntT) and isinstance(e.expr, A.IntLit):
            return F.int_lit(e.expr.value >> lo, BitsT(hi - lo + 1), e.pos)
        if not isinstance(t, BitsT):
            raise CompileError(f"slice needs a bit<N> or int<N> value, not {t}", e.pos)
        if not (0 <= lo <= hi < t.width):
            raise CompileError(f"slice [{hi}:{lo}] is out of range for {t}", e.pos)
        e.hi, e.lo = hi, lo
        e.type = BitsT(hi - lo + 1)
        if isinstance(e.expr, A.IntLit):
            return F.int_lit(e.expr.value >> lo, e.type, e.pos)
        return e

    def ex_Unary(self, e, scope, want):
        x = self.expr(e.expr, scope, want)
        e.expr = x
        if e.op == "!":
            if not isinstance(x.type, BoolT):
                raise CompileError(f"'!' needs a bool operand, not {x.type}", e.pos)
            if isinstance(x, A.BoolLit):
                return F.bool_lit(not x.value, e.pos)
            e.type = BoolT()
            return e
        if not isinstance(x.type, (BitsT, IntT)):
            raise CompileError(f"'{e.op}' needs a numeric operand, not {x.type}", e.pos)
        if e.op == "~" and isinstance(x.type, IntT):
            raise CompileError("'~' needs an operand with a known width (e.g. 8w5)", e.pos)
        if isinstance(x, A.IntLit):
            v = -x.value if e.op == "-" else ~x.value
            return F.int_lit(v, x.type, e.pos) if isinstance(x.type, BitsT) else self._intconst(v, e.pos)
        e.type = x.type
        return e

    def _intconst(self, v, pos):
        lit = A.IntLit(v, None, False, pos=pos)
        lit.type = IntT()
        return lit

    def ex_Binary(self, e, scope, want):
        op = e.op
        l = self.expr(e.left, scope, want if op not in ("<<", ">>") else want)
        r = self.expr(e.right, scope)
        if op in ("&&", "||"):
            for x in (l, r):
                if not isinstance(x.type, BoolT):
                    raise CompileError(f"'{op}' needs bool operands, not {x.type}", x.pos)
            e.left, e.right, e.type = l, r, BoolT()
            if F.is_const(l) and F.is_const(r):
                return F.fold_binary(op, l, r, BoolT(), e.pos)
            return e
        if op in ("<<", ">>"):
            if isinstance(r.type, BitsT) and r.type.signed:
                raise CompileError(f"shift amount must be unsigned", r.pos)
            if not isinstance(r.type, (BitsT, IntT)):
                raise CompileError(f"shift amount must be a number, not {r.type}", r.pos)
            if isinstance(l.type, IntT) and isinstance(want, BitsT) and not isinstance(r, A.IntLit):
                l = self.coerce(l, want)
            if isinstance(l.type, IntT) and not isinstance(r, A.IntLit):
                raise CompileError("shifting an unsized integer by a non-constant amount: give the "
                                   "left operand a width (e.g. 8w1)", e.pos)
            if not isinstance(l.type, (BitsT, IntT)):
                raise CompileError(f"'{op}' needs a numeric left operand, not {l.type}", l.pos)
            e.left, e.right, e.type = l, r, l.type
            if isinstance(l, A.IntLit) and isinstance(r, A.IntLit):
                if isinstance(l.type, IntT):
                    return self._intconst(l.value << r.value if op == "<<" else l.value >> r.value, e.pos)
                return F.fold_binary(op, l, r, l.type, e.pos)
            return e
        if op == "++":
            for x in (l, r):
                if not isinstance(x.type, BitsT):
                    raise CompileError(f"'++' needs operands with a known width, not {x.type}", x.pos)
            t = BitsT(l.type.width + r.type.width, l.type.signed)
            e.left, e.right, e.type = l, r, t
            if isinstance(l, A.IntLit) and isinstance(r, A.IntLit):
                return F.fold_binary(op, l, r, t, e.pos)
            return e
        if op in ("==", "!="):
            if isinstance(l.type, (BoolT, ErrorT, EnumT)) or isinstance(r.type, (BoolT, ErrorT, EnumT)):
                if l.type != r.type:
                    raise CompileError(f"cannot compare {l.type} with {r.type}", e.pos)
                e.left, e.right, e.type = l, r, BoolT()
                if F.is_const(l) and F.is_const(r):
                    return F.fold_binary(op, l, r, BoolT(), e.pos)
                return e
            if isinstance(l.type, (HeaderT, StructT, StackT)):
                raise Unsupported(f"comparison of {l.type} values", e.pos)
        for x in (l, r):
            if not isinstance(x.type, (BitsT, IntT)):
                raise CompileError(f"'{op}' needs numeric operands, not {x.type}", x.pos)
        l, r = self.unify(l, r, op, e.pos)
        t = l.type
        if op in ("/", "%") and isinstance(t, BitsT) and not (isinstance(r, A.IntLit) and isinstance(l, A.IntLit)):
            raise Unsupported(f"'{op}' on non-constant values (BMv2 has no division)", e.pos)
        if op in ("|+|", "|-|") and isinstance(t, IntT):
            raise CompileError(f"'{op}' needs operands with a known width", e.pos)
        rt = BoolT() if op in ("==", "!=", "<", "<=", ">", ">=") else t
        e.left, e.right, e.type = l, r, rt
        if isinstance(l, A.IntLit) and isinstance(r, A.IntLit):
            if isinstance(t, IntT) and not isinstance(rt, BoolT):
                f = F.fold_binary(op, l, r, BitsT(1 << 16), e.pos)
                return self._intconst({"+": l.value + r.value, "-": l.value - r.value,
                                       "*": l.value * r.value, "&": l.value & r.value,
                                       "|": l.value | r.value, "^": l.value ^ r.value}.get(op, f.value), e.pos)
            return F.fold_binary(op, l, r, rt, e.pos)
        return e

    def ex_Cond(self, e, scope, want):
        c = self.expr(e.cond, scope)
        if not isinstance(c.type, BoolT):
            raise CompileError(f"condition of '?:' must be bool, not {c.type}", c.pos)
        a = self.expr(e.then, scope, want)
        b = self.expr(e.els, scope, want)
        if isinstance(a.type, IntT) and isinstance(b.type, IntT) and isinstance(want, BitsT):
            a, b = self.coerce(a, want), self.coerce(b, want)
        a, b = self.unify(a, b, "?:", e.pos) if not (a.type == b.type) else (a, b)
        if isinstance(c, A.BoolLit):
            return a if c.value else b
        e.cond, e.then, e.els, e.type = c, a, b, a.type
        return e

    def ex_Cast(self, e, scope, want):
        t = self.resolve_type(e.tref)
        x = self.expr(e.expr, scope, t)
        e.expr = x
        st = x.type
        ok = False
        if isinstance(t, BitsT):
            ok = isinstance(st, (BitsT, IntT)) or (isinstance(st, BoolT) and t.width == 1 and not t.signed) \
                or (isinstance(st, EnumT) and st.underlying is not None)
            if isinstance(st, BitsT) and st.signed != t.signed and st.width != t.width:
                ok = False
        elif isinstance(t, BoolT):
            ok = isinstance(st, BoolT) or (isinstance(st, BitsT) and st.width == 1 and not st.signed) \
                or isinstance(st, IntT)
        elif isinstance(t, EnumT) and t.underlying is not None:
            ok = isinstance(st, (BitsT, IntT)) or st == t
        elif t == st:
            ok = True
        if not ok:
            raise CompileError(f"cannot cast {st} to {t}", e.pos)
        if isinstance(x, A.IntLit) and isinstance(t, BitsT):
            return F.int_lit(x.value, t, e.pos)
        if isinstance(x, A.IntLit) and isinstance(t, BoolT):
            if x.value not in (0, 1):
                raise CompileError(f"cannot cast {x.value} to bool", e.pos)
            return F.bool_lit(x.value, e.pos)
        if isinstance(x, A.BoolLit) and isinstance(t, BitsT):
            return F.int_lit(int(x.value), t, e.pos)
        if isinstance(x, A.IntLit) and isinstance(t, EnumT):
            c = F.int_lit(x.value, t.underlying, e.pos)
            e.type = t
            e.expr = c
            return e
        e.type = t
        return e

    def ex_ListExpr(self, e, scope, want):
        wants = want.items if isinstance(want, ListT) and len(want.items) == len(e.items) else [None] * len(e.items)
        e.items = [self.expr(x, scope, w) for x, w in zip(e.items, wants)]
        e.type = ListT([x.type for x in e.items])
        return e

    def ex_DontCare(self, e, scope, want):
        e.type = ObjT("dontcare")
        return e

    def ex_CtorCall(self, e, scope, want):
        raise Unsupported("constructor call in an expression", e.pos)

    def ex_Call(self, e, scope, want):
        f = e.func
        if isinstance(f, A.Member):
            f = self.ex_Member(f, scope, None)
            e.func = f
            if not isinstance(f.type, ObjT):
                raise CompileError(f"'{f.member}' is a {f.type} field, not a method", e.pos)
            kind = f.type.kind
            base = f.expr
            if kind == "header_method":
                self._nargs(e, 0, 0, f.member)
                e.kind = ("header", f.member)
                e.type = BoolT() if f.member == "isValid" else VoidT()
                return e
            if kind == "stack_method":
                self._nargs(e, 1, 1, f.member)
                e.args[0].expr = self.const_arg(e.args[0].expr, scope, f.member + " count")
                e.kind = ("stack", f.member)
                e.type = VoidT()
                return e
            if kind == "table_apply":
                self._nargs(e, 0, 0, "apply")
                e.kind = ("apply", f.type.decl)
                e.type = ObjT("apply_result", f.type.decl)
                return e
            if kind == "extern_method":
                bt = base.type
                lo, hi = EXTERN_METHODS[(bt.name, f.member)]
                self._nargs(e, lo, hi, f"{bt.name}.{f.member}")
                e.kind = ("method", bt.name, f.member)
                return self._extern_method(e, bt, f.member, scope, want)
            raise CompileError(f"'{f.member}' cannot be called", e.pos)
        if isinstance(f, A.Name):
            s = scope.lookup(f.name)
            if s is None:
                if f.name in UNSUPPORTED_EXTERNS:
                    raise Unsupported(f"extern '{UNSUPPORTED_EXTERNS[f.name]}'", f.pos)
                raise CompileError(f"undeclared name '{f.name}'", f.pos)
            if s.kind == "action":
                return self._action_call(e, s.decl, scope)
            if s.kind == "extern_func":
                if f.name not in EXTERN_FUNCS:
                    raise Unsupported(f"extern function '{f.name}'", f.pos)
                lo, hi = EXTERN_FUNCS[f.name]
                self._nargs(e, lo, hi, f.name)
                e.kind = ("extern", f.name)
                return self._extern_func(e, f.name, scope)
            raise CompileError(f"'{f.name}' is not a function or action", f.pos)
        raise CompileError("this expression cannot be called", e.pos)

    def _nargs(self, e, lo, hi, what):
        for a in e.args:
            if a.name is not None:
                raise Unsupported(f"named argument '{a.name}' in a call to {what}", a.pos)
        n = len(e.args)
        if not lo <= n <= hi:
            exp = str(lo) if lo == hi else f"{lo} to {hi}"
            raise CompileError(f"{what} takes {exp} argument{'s' if hi != 1 else ''}, {n} given", e.pos)

    def const_arg(self, x, scope, what, t=None):
        v = self.expr(x, scope, t)
        if not isinstance(v, A.IntLit):
            raise CompileError(f"{what} must be a compile-time constant", x.pos)
        return self.coerce(v, t) if t else v

    def lvalue(self, x, scope, what):
        v = self.expr(x, scope)
        root = v
        while isinstance(root, (A.Member, A.Index, A.Slice)):
            root = root.expr
        if not isinstance(root, A.Name) or root.ref is None or root.ref.kind not in ("param", "local"):
            raise CompileError(f"{what} must be a variable, field or header (an l-value)", x.pos)
        p = root.ref.decl
        if root.ref.kind == "param" and isinstance(p, A.Param) and p.direction == "in":
            raise CompileError(f"cannot write to '{p.name}': it is an 'in' parameter", x.pos)
        if root.ref.kind == "param" and isinstance(p, A.Param) and p.direction is None and \
                isinstance(root.ref.owner, A.ActionDecl):
            raise CompileError(f"cannot write to action data parameter '{p.name}'", x.pos)
        return v

    def _extern_method(self, e, bt, m, scope, want):
        a = e.args
        e.type = VoidT()
        if bt.name == "register":
            vt, it = (bt.args + (None, None))[:2]
            it = it or BitsT(32)
            if m == "read":
                a[0].expr = self.lvalue(a[0].expr, scope, "register read destination")
                if vt is not None and a[0].expr.type != vt:
                    raise CompileError(f"register holds {vt}, destination is {a[0].expr.type}", a[0].pos)
                a[1].expr = self.coerce(self.expr(a[1].expr, scope, it), it)
            else:
                a[0].expr = self.coerce(self.expr(a[0].expr, scope, it), it)
                a[1].expr = self.coerce(self.expr(a[1].expr, scope, vt), vt)
        elif bt.name == "counter":
            it = bt.args[0] if bt.args else BitsT(32)
            a[0].expr = self.coerce(self.expr(a[0].expr, scope, it), it)
        elif bt.name == "packet_in":
            if m == "extract":
                x = self.lvalue(a[0].expr, scope, "extract target")
                if not isinstance(x.type, HeaderT):
                    raise CompileError(f"extract needs a header, not {x.type}", a[0].pos)
                a[0].expr = x
            elif m == "lookahead":
                if not e.type_args or len(e.type_args) != 1:
                    raise CompileError("lookahead needs one type argument, e.g. lookahead<bit<8>>()", e.pos)
                t = self.resolve_type(e.type_args[0])
                if not isinstance(t, (BitsT, HeaderT)):
                    raise Unsupported(f"lookahead of {t} (only bit<N> or a header type)", e.pos)
                e.type = t
            else:
                a[0].expr = self.coerce(self.expr(a[0].expr, scope, BitsT(32)), BitsT(32))
        elif bt.name == "packet_out":
            x = self.expr(a[0].expr, scope)
            if not isinstance(x.type, (HeaderT, StackT, StructT)):
                raise CompileError(f"emit needs a header, header stack or struct of headers, not {x.type}",
                                   a[0].pos)
            a[0].expr = x
        return e

    def _extern_func(self, e, name, scope):
        a = e.args
        e.type = VoidT()
        ex = lambda i, t=None: self.coerce(self.expr(a[i].expr, scope, t), t) if t else self.expr(a[i].expr, scope)
        if name == "mark_to_drop":
            a[0].expr = self.lvalue(a[0].expr, scope, "mark_to_drop argument")
        elif name == "hash":
            a[0].expr = self.lvalue(a[0].expr, scope, "hash result")
            rt = a[0].expr.type
            if not isinstance(rt, BitsT):
                raise CompileError(f"hash result must be bit<N>, not {rt}", a[0].pos)
            algo = self.expr(a[1].expr, scope)
            if not (isinstance(algo, A.TypeMember) and algo.tname == "HashAlgorithm"):
                raise CompileError("hash algorithm must be a HashAlgorithm constant", a[1].pos)
            a[1].expr = algo
            a[2].expr = self.expr(a[2].expr, scope, rt)
            if not isinstance(a[2].expr.type, (BitsT, IntT)):
                raise CompileError("hash base must be a number", a[2].pos)
            a[3].expr = self.hash_data(a[3].expr, scope)
            a[4].expr = self.expr(a[4].expr, scope, rt)
            if not isinstance(a[4].expr.type, (BitsT, IntT)):
                raise CompileError("hash max must be a number", a[4].pos)
        elif name == "random":
            a[0].expr = self.lvalue(a[0].expr, scope, "random result")
            t = a[0].expr.type
            a[1].expr, a[2].expr = ex(1, t), ex(2, t)
        elif name == "digest":
            a[0].expr = self.const_arg(a[0].expr, scope, "digest receiver", BitsT(32))
            a[1].expr = self.hash_data(a[1].expr, scope, allow_struct=True)
            if e.type_args:
                st = self.resolve_type(e.type_args[0])
                d = a[1].expr
                if isinstance(d, A.ListExpr) and isinstance(st, StructT):
                    if len(d.items) != len(st.fields):
                        raise CompileError(f"digest data has {len(d.items)} fields, struct {st.name} has "
                                           f"{len(st.fields)}", a[1].pos)
                    d.items = [self.coerce(x, ft, x.pos) for x, (_, ft, _) in zip(d.items, st.fields)]
                    d.struct_type = st
                elif st != d.type:
                    raise CompileError(f"digest data has type {d.type}, expected {st}", a[1].pos)
        elif name == "verify":
            a[0].expr = ex(0)
            if not isinstance(a[0].expr.type, BoolT):
                raise CompileError("verify condition must be bool", a[0].pos)
            a[1].expr = ex(1)
            if not isinstance(a[1].expr.type, ErrorT):
                raise CompileError("verify needs an error value, e.g. error.NoMatch", a[1].pos)
        elif name in ("clone", "clone_preserving_field_list"):
            ct = self.expr(a[0].expr, scope)
            if not (isinstance(ct, A.TypeMember) and ct.tname == "CloneType"):
                raise CompileError("clone type must be CloneType.I2E or CloneType.E2E", a[0].pos)
            a[0].expr = ct
            a[1].expr = ex(1, BitsT(32))
            if name == "clone_preserving_field_list":
                a[2].expr = self.const_arg(a[2].expr, scope, "field list index", BitsT(8))
        elif name in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
            a[0].expr = self.const_arg(a[0].expr, scope, "field list index", BitsT(8))
        elif name == "truncate":
            a[0].expr = ex(0, BitsT(32))
        elif name in ("assert", "assume"):
            a[0].expr = ex(0)
            if not isinstance(a[0].expr.type, BoolT):
                raise CompileError(f"{name} needs a bool condition", a[0].pos)
        elif name == "log_msg":
            a[0].expr = ex(0)
            if not isinstance(a[0].expr, A.StrLit):
                raise CompileError("log_msg needs a string literal", a[0].pos)
            if len(a) > 1:
                d = self.expr(a[1].expr, scope)
                if not isinstance(d, A.ListExpr):
                    raise CompileError("log_msg data must be a list {a, b, ...}", a[1].pos)
                a[1].expr = d
        elif name in ("verify_checksum", "update_checksum"):
            a[0].expr = ex(0)
            if not isinstance(a[0].expr.type, BoolT):
                raise CompileError(f"{name} condition must be bool", a[0].pos)
            a[1].expr = self.hash_data(a[1].expr, scope)
            a[2].expr = self.lvalue(a[2].expr, scope, "checksum field") if name == "update_checksum" \
                else self.expr(a[2].expr, scope)
            if not isinstance(a[2].expr.type, BitsT) or not isinstance(a[2].expr, A.Member):
                raise CompileError("checksum must be a header or metadata field", a[2].pos)
            algo = self.expr(a[3].expr, scope)
            if not (isinstance(algo, A.TypeMember) and algo.tname == "HashAlgorithm"):
                raise CompileError("checksum algorithm must be a HashAlgorithm constant", a[3].pos)
            if algo.member != "csum16":
                raise Unsupported(f"checksum algorithm HashAlgorithm.{algo.member} (only csum16)", a[3].pos)
            a[3].expr = algo
        return e

    def hash_data(self, x, scope, allow_struct=False):
        """A field list: {f1, f2, ...} of fields/constants (or a struct, for digests)."""
        v = self.expr(x, scope)
        if isinstance(v, A.ListExpr):
            for it in v.items:
                if not isinstance(it.type, (BitsT, BoolT)) and not isinstance(it.type, IntT):
                    raise CompileError(f"field list element must be a bit<N> value, not {it.type}", it.pos)
                if isinstance(it.type, IntT):
                    raise CompileError("field list constants need a width (e.g. 8w0)", it.pos)
            return v
        if allow_struct and isinstance(v.type, StructT):
            return v
        if isinstance(v.type, (BitsT, HeaderT)):
            return v
        raise CompileError("expected a list of fields {a, b, ...}", x.pos)

    def _action_call(self, e, decl, scope):
        params = decl.params
        if len(e.args) != len(params):
            raise CompileError(f"action '{decl.name}' takes {len(params)} argument"
                               f"{'s' if len(params) != 1 else ''}, {len(e.args)} given", e.pos)
        for a, p in zip(e.args, params):
            if a.name is not None:
                raise Unsupported("named arguments", a.pos)
            pt = p.ptype
            if p.direction in ("out", "inout"):
                a.expr = self.lvalue(a.expr, scope, f"argument for '{p.direction} {p.name}'")
                if a.expr.type != pt:
                    raise CompileError(f"argument for '{p.name}' has type {a.expr.type}, expected {pt}", a.pos)
            else:
                a.expr = self.coerce(self.expr(a.expr, scope, pt), pt, a.pos)
        e.kind = ("action", decl)
        e.type = VoidT()
        return e

    # ------------------------------------------------------------------ statements
    def stmts(self, stmts, scope, ctx):
        for s in stmts:
            self.stmt(s, scope, ctx)

    def stmt(self, s, scope, ctx):
        if isinstance(s, A.Block):
            self.stmts(s.stmts, Scope(scope), ctx)
        elif isinstance(s, A.Assign):
            s.lhs = self.lvalue(s.lhs, scope, "left side of '='")
            if isinstance(s.lhs.type, (HeaderT, StackT)) and not isinstance(s.rhs, A.ListExpr):
                s.rhs = self.expr(s.rhs, scope)
                if s.rhs.type != s.lhs.type:
                    raise CompileError(f"type mismatch: expected {s.lhs.type}, got {s.rhs.type}", s.rhs.pos)
                return
            if isinstance(s.lhs.type, StructLikeT) or isinstance(s.rhs, A.ListExpr):
                raise Unsupported("assignment of whole structs/headers or lists", s.pos)
            s.rhs = self.coerce(self.expr(s.rhs, scope, s.lhs.type), s.lhs.type, s.rhs.pos)
            self._applies_in(s.rhs, ctx)
        elif isinstance(s, A.CallStmt):
            s.call = self.expr(s.call, scope)
            if not isinstance(s.call, A.Call):
                raise CompileError("this statement has no effect", s.pos)
            if s.call.kind[0] == "apply" and ctx != "control":
                raise CompileError("tables can only be applied in a control's apply block", s.pos)
            if s.call.kind[0] == "apply":
                self._note_apply(s.call.kind[1], s.pos)
            if s.call.kind[0] == "method" and s.call.kind[1] in ("packet_in",) and ctx != "parser":
                raise CompileError(f"packet_in.{s.call.kind[2]} can only be called in a parser", s.pos)
            if s.call.kind[0] == "method" and s.call.kind[1] == "packet_out" and ctx != "deparser":
                raise CompileError("emit can only be called in a deparser", s.pos)
            if s.call.kind[0] == "method" and s.call.kind[2] == "lookahead":
                raise CompileError("the result of lookahead must be used", s.pos)
        elif isinstance(s, A.If):
            s.cond = self._cond(s.cond, scope, ctx)
            self.stmt(s.then, Scope(scope), ctx)
            if s.els is not None:
                self.stmt(s.els, Scope(scope), ctx)
        elif isinstance(s, A.VarDecl):
            t = self.resolve_type(s.tref)
            if isinstance(t, (ExternT, ObjT, VoidT, StringT)):
                raise CompileError(f"cannot declare a variable of type {t}", s.pos)
            if isinstance(t, StackT):
                raise Unsupported("local header stack variable", s.pos)
            if s.init is not None:
                s.init = self.coerce(self.expr(s.init, scope, t), t, s.init.pos)
                self._applies_in(s.init, ctx)
            s.vtype = t
            scope.add(Sym("local", s.name, s, t), s.pos)
            self.locals_out.append(s)
        elif isinstance(s, A.ConstDecl):
            self.const_decl(s, scope)
        elif isinstance(s, A.Exit):
            if ctx == "parser":
                raise CompileError("'exit' is not allowed in a parser", s.pos)
        elif isinstance(s, A.Return):
            if s.expr is not None:
                raise CompileError("'return' with a value is only allowed in functions", s.pos)
            if ctx in ("parser",):
                raise CompileError("'return' is not allowed in a parser", s.pos)
            if ctx == "action":
                raise Unsupported("'return' inside an action", s.pos)
        elif isinstance(s, A.Switch):
            if ctx != "control":
                raise CompileError("switch is only allowed in a control's apply block", s.pos)
            x = self.expr(s.expr, scope)
            if not (isinstance(x.type, ObjT) and x.type.kind == "action_run"):
                raise Unsupported("switch on anything but table.apply().action_run", s.expr.pos)
            s.expr = x
            table = x.type.decl
            self._note_apply(table, s.pos)
            names = {r.name for r in table.action_list}
            seen = set()
            for c in s.cases:
                if c.label is not None:
                    if c.label not in names:
                        raise CompileError(f"'{c.label}' is not an action of table '{table.name}'", c.pos)
                    if c.label in seen:
                        raise CompileError(f"duplicate switch label '{c.label}'", c.pos)
                    seen.add(c.label)
                if c.body is not None:
                    self.stmt(c.body, Scope(scope), ctx)
        elif isinstance(s, A.Empty):
            pass
        else:
            raise Unsupported(f"statement {type(s).__name__}", s.pos)

    def _cond(self, e, scope, ctx):
        c = self.expr(e, scope)
        if not isinstance(c.type, BoolT):
            raise CompileError(f"condition must be bool, not {c.type}", e.pos)
        # table.apply().hit used in an if condition counts as applying the table
        for node in _walk(c):
            if isinstance(node, A.Call) and getattr(node, "kind", None) and node.kind[0] == "apply":
                if ctx != "control":
                    raise CompileError("tables can only be applied in a control's apply block", node.pos)
                self._note_apply(node.kind[1], node.pos)
        return c

    def _applies_in(self, e, ctx):
        for node in _walk(e):
            if isinstance(node, A.Call) and getattr(node, "kind", None) and node.kind[0] == "apply":
                if ctx != "control":
                    raise CompileError("tables can only be applied in a control's apply block", node.pos)
                self._note_apply(node.kind[1], node.pos)

    def _note_apply(self, table, pos):
        if getattr(table, "applied_at", None) is not None and table.applied_at is not pos:
            raise Unsupported(f"applying table '{table.name}' more than once (BMv2 tables have one "
                              f"successor per action)", pos)
        table.applied_at = pos

    # ------------------------------------------------------------------ actions and tables
    def params(self, params, scope, owner):
        for p in params:
            p.ptype = self.resolve_type(p.tref)
            scope.add(Sym("param", p.name, p, p.ptype, owner=owner), p.pos)

    def action_decl(self, d, scope, control):
        s = Scope(scope)
        for p in d.params:
            p.ptype = self.resolve_type(p.tref)
            if p.direction is None and not isinstance(p.ptype, (BitsT, BoolT)) and \
                    not (isinstance(p.ptype, EnumT) and p.ptype.underlying):
                raise Unsupported(f"action data parameter of type {p.ptype}", p.pos)
            s.add(Sym("param", p.name, p, p.ptype, owner=d), p.pos)
        saved = getattr(self, "locals_out", None)
        self.locals_out = []
        self.stmt(d.body, s, "action")
        d.locals = self.locals_out
        self.locals_out = saved
        d.control = control

    def table_decl(self, t, scope, control):
        t.keys, t.action_list, t.default, t.default_const = [], [], None, False
        t.size, t.counters, t.entries, t.entries_const = None, None, None, False
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
            elif p.name == "counters":
                s = self.expr(p.value, scope)
                if not (isinstance(s, A.Name) and isinstance(s.type, ExternT) and s.type.name == "direct_counter"):
                    raise CompileError("table 'counters' must name a direct_counter", p.value.pos)
                inst = s.ref.decl
                if getattr(inst, "bound_table", None) is not None:
                    raise CompileError(f"direct_counter '{s.name}' is already attached to a table", p.value.pos)
                inst.bound_table = t
                t.counters = inst
            elif p.name == "entries":
                t.entries, t.entries_const = p.value, p.const
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
            if "NoAction" not in names:
                # as p4c: the implicit default NoAction joins the table's actions, default-only
                ref = A.ActionRef("NoAction", [], [A.Annotation("defaultonly", [], pos=t.pos)], pos=t.pos)
                ref.decl = na.decl
                t.action_list.append(ref)
            t.default = A.Call(A.Name("NoAction"), None, [], pos=t.pos)
            t.default.kind, t.default.type = ("action", na.decl), VoidT()
            t.default.implicit = True
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
                    if en.priority < 0:
                        raise CompileError("entry priority must not be negative", en.pos)
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

    def keyset_elem(self, x, t, scope, match_kind=None):
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

    # ------------------------------------------------------------------ parsers and controls
    def block_locals(self, decls, scope, ctx, owner):
        owner.vars, owner.instances, owner.actions, owner.tables = [], [], [], []
        for d in decls:
            if isinstance(d, A.ConstDecl):
                self.const_decl(d, scope)
            elif isinstance(d, A.VarDecl):
                saved = getattr(self, "locals_out", None)
                self.locals_out = owner.vars
                self.stmt(d, scope, ctx)
                self.locals_out = saved
            elif isinstance(d, A.Instance):
                self.instance(d, scope, owner)
            elif isinstance(d, A.ActionDecl):
                scope.add(Sym("action", d.name, d, ObjT("action", d)), d.pos)
                self.action_decl(d, scope, owner)
                owner.actions.append(d)
            elif isinstance(d, A.TableDecl):
                self.table_decl(d, scope, owner)
                scope.add(Sym("table", d.name, d, ObjT("table", d)), d.pos)
                owner.tables.append(d)
            else:
                raise Unsupported(f"{type(d).__name__} inside a {ctx}", d.pos)

    def instance(self, d, scope, owner):
        tr = d.tref
        if isinstance(tr, A.NamedTypeRef) and tr.name in UNSUPPORTED_EXTERNS:
            raise Unsupported(f"extern '{tr.name}'", d.pos)
        t = self.resolve_type(tr)
        if not isinstance(t, ExternT) or t.name not in EXTERN_CTORS:
            if isinstance(t, ObjT) and t.kind in ("parser", "control"):
                raise Unsupported(f"instantiating a {t.kind} inside another (sub-{t.kind}s)", d.pos)
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
            d.size = self.const_int(d.args[0].expr, scope, "register size")
        elif t.name == "counter":
            d.size = self.const_int(d.args[0].expr, scope, "counter size")
            d.unit = self._counter_type(d.args[1].expr, scope)
        elif t.name == "direct_counter":
            d.unit = self._counter_type(d.args[0].expr, scope)
            d.bound_table = None
        sym = Sym("instance", d.name, d, t, owner=owner)
        scope.add(sym, d.pos)
        d.sym = sym
        owner.instances.append(d)

    def _counter_type(self, x, scope):
        v = self.expr(x, scope)
        if not (isinstance(v, A.TypeMember) and v.tname == "CounterType"):
            raise CompileError("counter type must be CounterType.packets, .bytes or .packets_and_bytes", x.pos)
        return v.member

    def parser_decl(self, d):
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
            saved = getattr(self, "locals_out", None)
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
                        c.is_default = True
                        continue
                    c.is_default = False
                    if len(c.keyset) != len(tr.keys):
                        raise CompileError(f"select case has {len(c.keyset)} value(s), select has "
                                           f"{len(tr.keys)} key(s)", c.pos)
                    c.keyset = [self.keyset_elem(x, k.type, s) for x, k in zip(c.keyset, tr.keys)]
        self.prog.parser_states = names

    def _state_ref(self, name, names, pos):
        if name not in names and name not in ("accept", "reject"):
            raise CompileError(f"unknown parser state '{name}'", pos)

    def control_decl(self, d, ctx="control"):
        scope = Scope(self.globals)
        self.params(d.params, scope, d)
        self.block_locals(d.locals, scope, ctx, d)
        saved = getattr(self, "locals_out", None)
        self.locals_out = d.vars
        self.stmt(d.body, Scope(scope), ctx)
        self.locals_out = saved

    def check_main(self, m):
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


def _walk(e):
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        for f in getattr(n, "_fields", ()):
            v = getattr(n, f, None)
            if isinstance(v, A.Node):
                stack.append(v)
            elif isinstance(v, list):
                stack.extend(x for x in v if isinstance(x, A.Node))


def check(ast_prog):
    return Checker().check(ast_prog)
