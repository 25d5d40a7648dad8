"""Expression typing: every expression gets a type, implicit casts and constant folding."""
from __future__ import annotations

from . import ast as A
from . import constfold as F
from .check_base import CheckerBase
from .diagnostics import CompileError, Pos, Unsupported
from .externs import EXTERN_FUNCS, EXTERN_METHODS, UNSUPPORTED_EXTERNS
from .limits import MAX_WIDTH
from .symbols import Scope
from .types import (
    BitsT,
    BoolT,
    EnumT,
    ErrorT,
    ExternT,
    HeaderT,
    IntT,
    ListT,
    ObjT,
    StackT,
    StringT,
    StructLikeT,
    StructT,
    Type,
    VoidT,
)


class ExprChecker(CheckerBase):
    """Types expressions (one ex_<Node> method per AST node), coerces and folds constants."""

    def coerce(self, e: A.Expr, t: Type | None, pos: Pos | None = None) -> A.Expr:
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

    def unify(self, l: A.Expr, r: A.Expr, op: str, pos: Pos | None) -> tuple[A.Expr, A.Expr]:
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

    def expr(self, e: A.Expr, scope: Scope, want: Type | None = None) -> A.Expr:
        m = getattr(self, "ex_" + type(e).__name__, None)
        if m is None:
            raise Unsupported(f"expression {type(e).__name__}", e.pos)
        return m(e, scope, want)

    def ex_IntLit(self, e: A.IntLit, scope: Scope, want: Type | None) -> A.Expr:
        if e.width is None:
            e.type = IntT()
        else:
            e.type = BitsT(e.width, e.signed)
            v = F.normalize(e.value, e.type)
            if v != e.value and not (e.signed and e.value == v + (1 << e.width)):
                self.warn(e.pos, f"{e.width}{'s' if e.signed else 'w'}{e.value}: value does not fit in "
                                 f"{e.width} bits; it is truncated to {v}")
            e.value = v
        return e

    def ex_BoolLit(self, e: A.BoolLit, scope: Scope, want: Type | None) -> A.Expr:
        e.type = BoolT()
        return e

    def ex_StrLit(self, e: A.StrLit, scope: Scope, want: Type | None) -> A.Expr:
        e.type = StringT()
        return e

    def ex_Name(self, e: A.Name, scope: Scope, want: Type | None) -> A.Expr:
        s = scope.lookup(e.name)
        if s is None:
            if e.name in self.prog.types:
                raise CompileError(f"'{e.name}' is a type, not a value", e.pos)
            if e.name in UNSUPPORTED_EXTERNS:
                raise Unsupported(f"extern '{UNSUPPORTED_EXTERNS[e.name]}'", e.pos)
            raise CompileError(f"undeclared name '{e.name}'", e.pos)
        s.used = True
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

    def ex_TypeMember(self, e: A.TypeMember, scope: Scope, want: Type | None) -> A.Expr:
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

    def ex_Member(self, e: A.Member, scope: Scope, want: Type | None) -> A.Expr:
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
            if bt.kind == "control_instance" and m == "apply":
                e.type = ObjT("control_apply", bt.decl)
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

    def ex_Index(self, e: A.Index, scope: Scope, want: Type | None) -> A.Expr:
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

    def ex_Slice(self, e: A.Slice, scope: Scope, want: Type | None) -> A.Expr:
        e.expr = self.expr(e.expr, scope)
        t = e.expr.type
        hi = self.const_int(e.hi, scope, "slice bound")
        lo = self.const_int(e.lo, scope, "slice bound")
        if not 0 <= lo <= hi or hi - lo + 1 > MAX_WIDTH:
            raise CompileError(f"slice [{hi}:{lo}] is out of range", e.pos)
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

    def ex_Unary(self, e: A.Unary, scope: Scope, want: Type | None) -> A.Expr:
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
        if v.bit_length() > MAX_WIDTH:
            raise CompileError(f"integer constant is wider than {MAX_WIDTH} bits", pos)
        lit = A.IntLit(v, None, False, pos=pos)
        lit.type = IntT()
        return lit

    def ex_Binary(self, e: A.Binary, scope: Scope, want: Type | None) -> A.Expr:
        op = e.op
        l = self.expr(e.left, scope, want)
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
                raise CompileError("shift amount must be unsigned", r.pos)
            if isinstance(r, A.IntLit) and r.value < 0:
                raise CompileError(f"shift amount {r.value} is negative", r.pos)
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
            if isinstance(r, A.IntLit) and isinstance(l.type, BitsT) and r.value >= l.type.width:
                self.warn(e.pos, f"shifting value with {l.type.width} bits by {r.value}")
            if isinstance(l, A.IntLit) and isinstance(r, A.IntLit):
                if isinstance(l.type, IntT):
                    if op == "<<" and l.value and l.value.bit_length() + r.value > MAX_WIDTH:
                        raise CompileError(f"{l.value} << {r.value} is wider than {MAX_WIDTH} bits", e.pos)
                    return self._intconst(l.value << r.value if op == "<<" else l.value >> r.value, e.pos)
                return F.fold_binary(op, l, r, l.type, e.pos)
            return e
        if op == "++":
            for x in (l, r):
                if not isinstance(x.type, BitsT):
                    raise CompileError(f"'++' needs operands with a known width, not {x.type}", x.pos)
            if l.type.width + r.type.width > MAX_WIDTH:
                raise CompileError(f"'++' makes a value wider than {MAX_WIDTH} bits", e.pos)
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

    def ex_Cond(self, e: A.Cond, scope: Scope, want: Type | None) -> A.Expr:
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

    def ex_Cast(self, e: A.Cast, scope: Scope, want: Type | None) -> A.Expr:
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
        if isinstance(x, A.IntLit) and isinstance(t, EnumT) and t.underlying is not None:  # (else not ok)
            c = F.int_lit(x.value, t.underlying, e.pos)
            e.type = t
            e.expr = c
            return e
        e.type = t
        return e

    def ex_ListExpr(self, e: A.ListExpr, scope: Scope, want: Type | None) -> A.Expr:
        wants = want.items if isinstance(want, ListT) and len(want.items) == len(e.items) else [None] * len(e.items)
        e.items = [self.expr(x, scope, w) for x, w in zip(e.items, wants)]
        e.type = ListT([x.type for x in e.items])
        return e

    def ex_DontCare(self, e: A.DontCare, scope: Scope, want: Type | None) -> A.Expr:
        e.type = ObjT("dontcare")
        return e

    def ex_CtorCall(self, e: A.CtorCall, scope: Scope, want: Type | None) -> A.Expr:
        raise Unsupported("constructor call in an expression", e.pos)

    def ex_Call(self, e: A.Call, scope: Scope, want: Type | None) -> A.Expr:
        f = e.func
        if isinstance(f, A.Member):
            m = f.member
            checked = self.ex_Member(f, scope, None)    # a stack's .size is folded to a literal
            e.func = checked
            if not isinstance(checked, A.Member) or not isinstance(checked.type, ObjT):
                raise CompileError(f"'{m}' is a {checked.type} field, not a method", e.pos)
            f = checked
            kind = f.type.kind
            base = f.expr
            if kind == "header_method":
                self._nargs(e, 0, 0, m)
                e.kind = ("header", m)
                e.type = BoolT() if m == "isValid" else VoidT()
                return e
            if kind == "stack_method":
                self._nargs(e, 1, 1, m)
                e.args[0].expr = self.const_arg(e.args[0].expr, scope, m + " count")
                e.kind = ("stack", m)
                e.type = VoidT()
                return e
            if kind == "table_apply":
                self._nargs(e, 0, 0, "apply")
                e.kind = ("apply", f.type.decl)
                e.type = ObjT("apply_result", f.type.decl)
                return e
            if kind == "control_apply":
                return self._control_apply_call(e, f.type.decl, scope)
            if kind == "extern_method":
                bt = base.type
                lo, hi = EXTERN_METHODS[(bt.name, m)]
                self._nargs(e, lo, hi, f"{bt.name}.{m}")
                e.kind = ("method", bt.name, m)
                return self._extern_method(e, bt, m, scope, want)
            raise CompileError(f"'{m}' cannot be called", e.pos)
        if isinstance(f, A.Name):
            s = scope.lookup(f.name)
            if s is None:
                if f.name in UNSUPPORTED_EXTERNS:
                    raise Unsupported(f"extern '{UNSUPPORTED_EXTERNS[f.name]}'", f.pos)
                raise CompileError(f"undeclared name '{f.name}'", f.pos)
            if s.kind == "action":
                return self._action_call(e, s.decl, scope)
            if s.kind == "function":
                return self._function_call(e, s.decl, scope)
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

    def const_arg(self, x: A.Expr, scope: Scope, what: str, t: Type | None = None) -> A.Expr:
        v = self.expr(x, scope, t)
        if not isinstance(v, A.IntLit):
            raise CompileError(f"{what} must be a compile-time constant", x.pos)
        return self.coerce(v, t) if t else v

    def lvalue(self, x: A.Expr, scope: Scope, what: str) -> A.Expr:
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

    def _bind_argument(self, a, p, scope):
        """Check one argument of an action call or a sub-control's apply against its parameter:
        out/inout take an l-value of exactly the parameter's type, in and directionless convert."""
        pt = p.ptype
        if p.direction in ("out", "inout"):
            a.expr = self.lvalue(a.expr, scope, f"argument for '{p.direction} {p.name}'")
            if a.expr.type != pt:
                raise CompileError(f"argument for '{p.name}' has type {a.expr.type}, expected {pt}", a.pos)
        else:
            a.expr = self.coerce(self.expr(a.expr, scope, pt), pt, a.pos)

    def _control_apply_call(self, e, inst, scope):
        """``inst.apply(args)`` of a sub-control: arguments checked against its parameters as for
        an action call (out/inout take l-values of the same type; in and directionless convert)."""
        what = f"'{inst.instance.name}.apply'"
        self._nargs(e, len(inst.params), len(inst.params), what)
        for a, p in zip(e.args, inst.params):
            self._bind_argument(a, p, scope)
        e.kind = ("control", inst)
        e.type = VoidT()
        return e

    def _function_call(self, e, decl, scope):
        self._nargs(e, len(decl.params), len(decl.params), f"function '{decl.name}'")
        for a, p in zip(e.args, decl.params):
            a.expr = self.coerce(self.expr(a.expr, scope, p.ptype), p.ptype, a.pos)
        e.kind = ("function", decl)
        e.type = decl.rtype
        return e

    def _action_call(self, e, decl, scope):
        params = decl.params
        if len(e.args) != len(params):
            raise CompileError(f"action '{decl.name}' takes {len(params)} argument"
                               f"{'s' if len(params) != 1 else ''}, {len(e.args)} given", e.pos)
        for a, p in zip(e.args, params):
            if a.name is not None:
                raise Unsupported("named arguments", a.pos)
            self._bind_argument(a, p, scope)
        e.kind = ("action", decl)
        e.type = VoidT()
        return e
