"""Statements: assignments, if/switch, calls, and where tables may be applied."""
from __future__ import annotations

from . import ast as A
from .check_base import CheckerBase
from .diagnostics import CompileError, Unsupported
from .symbols import Scope, Sym
from .types import BoolT, ExternT, HeaderT, ObjT, StackT, StringT, StructLikeT, VoidT


class StmtChecker(CheckerBase):
    """Checks statements in action, parser-state and control bodies (``ctx`` says which)."""

    def stmts(self, stmts: list[A.Stmt], scope: Scope, ctx: str) -> None:
        for s in stmts:
            self.stmt(s, scope, ctx)

    def stmt(self, s: A.Stmt, scope: Scope, ctx: str) -> None:
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
            call = self.expr(s.call, scope)
            if not isinstance(call, A.Call):
                raise CompileError("this statement has no effect", s.pos)
            s.call = call
            if s.call.kind[0] == "function":
                raise CompileError(f"the result of function '{s.call.kind[1].name}' is not used", s.pos)
            if s.call.kind[0] == "apply" and ctx != "control":
                raise CompileError("tables can only be applied in a control's apply block", s.pos)
            if s.call.kind[0] == "apply":
                self._note_apply(s.call.kind[1], s.pos)
            if s.call.kind[0] == "control":
                if ctx != "control":
                    raise CompileError("controls can only be applied in a control's apply block", s.pos)
                self._note_control_apply(s.call.kind[1], s.pos)
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
        for node in A.walk(c):
            if isinstance(node, A.Call) and getattr(node, "kind", None) and node.kind[0] == "apply":
                if ctx != "control":
                    raise CompileError("tables can only be applied in a control's apply block", node.pos)
                self._note_apply(node.kind[1], node.pos)
        return c

    def _applies_in(self, e, ctx):
        for node in A.walk(e):
            if isinstance(node, A.Call) and getattr(node, "kind", None) and node.kind[0] == "apply":
                if ctx != "control":
                    raise CompileError("tables can only be applied in a control's apply block", node.pos)
                self._note_apply(node.kind[1], node.pos)

    def _note_control_apply(self, inst, pos):
        if getattr(inst, "applied_at", None) is not None:
            raise Unsupported(f"applying control instance '{inst.instance.name}' more than once (its tables "
                              f"would be applied twice; instantiate the control once per use)", pos)
        inst.applied_at = pos

    def _note_apply(self, table, pos):
        if getattr(table, "applied_at", None) is not None and table.applied_at is not pos:
            raise Unsupported(f"applying table '{table.name}' more than once (BMv2 tables have one "
                              f"successor per action)", pos)
        table.applied_at = pos
