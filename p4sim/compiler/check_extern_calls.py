"""Calls to v1model externs: their argument rules differ per extern, so they live apart."""
from __future__ import annotations

from . import ast as A
from .check_base import CheckerBase
from .diagnostics import CompileError, Unsupported
from .symbols import Scope
from .types import BitsT, BoolT, ErrorT, HeaderT, IntT, StackT, StructT, VoidT


class ExternCallChecker(CheckerBase):
    """Checks extern method calls (register.read, counter.count...) and extern functions (hash...)."""

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
        def ex(i, t=None):
            return self.coerce(self.expr(a[i].expr, scope, t), t) if t else self.expr(a[i].expr, scope)
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
        elif name in ("verify_checksum", "update_checksum", "verify_checksum_with_payload",
                      "update_checksum_with_payload"):
            a[0].expr = ex(0)
            if not isinstance(a[0].expr.type, BoolT):
                raise CompileError(f"{name} condition must be bool", a[0].pos)
            a[1].expr = self.hash_data(a[1].expr, scope)
            a[2].expr = self.lvalue(a[2].expr, scope, "checksum field") if name.startswith("update") \
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

    def hash_data(self, x: A.Expr, scope: Scope, allow_struct: bool = False) -> A.Expr:
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
