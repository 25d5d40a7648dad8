"""Name resolution, type checking, width inference and constant folding for the P4 subset.

The checker annotates the AST in place: every expression gets ``type``; names get ``ref`` (a Sym);
calls get ``kind``; constants are folded into literals. Anything outside the subset raises
diagnostics.Unsupported at the construct's position.
"""
from collections.abc import Iterator
from typing import Any

from . import ast as A
from .check_blocks import BlockChecker
from .check_decls import DeclChecker
from .check_expr import ExprChecker
from .check_extern_calls import ExternCallChecker
from .check_stmts import StmtChecker
from .check_tables import TableActionChecker
from .diagnostics import CompileError, Warning_
from .preprocess import INCLUDE_DIR
from .symbols import Scope
from .types import EnumT, HeaderT, Type


class Program:
    """The checked program: what the backends consume."""

    # the V1Switch blocks, bound by the checker's check_main (a Program is only handed on checked)
    parser: A.ParserDecl
    verify: A.ControlDecl
    ingress: A.ControlDecl
    egress: A.ControlDecl
    compute: A.ControlDecl
    deparser: A.ControlDecl

    def __init__(self) -> None:
        self.types: dict[str, Type] = {}
        self.header_types: list[HeaderT] = []     # in declaration order
        self.errors: list[str] = []               # error member names, in declaration order
        self.enums: list[EnumT] = []
        self.actions_global: dict[str, A.ActionDecl] = {}
        self.warnings: list[Warning_] = []
        self.main: A.Instance | None = None

    def blocks(self, *roles: str) -> Iterator[Any]:
        """The V1Switch blocks of the given roles (all six by default), each followed by the
        sub-controls it instantiates (depth first), each block once."""
        roles = roles or ("parser", "verify", "ingress", "egress", "compute", "deparser")
        seen = set()

        def walk(b):
            if id(b) in seen:
                return
            seen.add(id(b))
            yield b
            for sub in getattr(b, "subcontrols", ()):
                yield from walk(sub)
        for role in roles:
            yield from walk(getattr(self, role))


class Checker(DeclChecker, ExprChecker, ExternCallChecker, StmtChecker, TableActionChecker, BlockChecker):
    """The whole checker: one mixin per concern, sharing the program, globals and match kinds."""

    def __init__(self):
        self.prog = Program()
        self.globals = Scope()
        self.match_kinds = set()
        self.control_templates = {}   # control name -> unchecked copy, instantiated as sub-controls
        self.template_names = set()
        self.instantiating = []       # control names being instantiated (a cycle is an error)
        self.locals_out = []          # where the declarations of the block being checked go

    def check(self, ast_prog: A.Program) -> Program:
        # controls instantiated inside controls: their unchecked declarations are kept as templates
        self.template_names = {x.tref.name for d in ast_prog.decls if isinstance(d, A.ControlDecl)
                               for x in d.locals if isinstance(x, A.Instance) and isinstance(x.tref, A.NamedTypeRef)}
        main = None
        for d in ast_prog.decls:
            if isinstance(d, A.Instance) and d.name == "main":
                main = d
            else:
                self.top_decl(d)
        if main is None:
            raise CompileError("the program has no 'main' instance (expected: V1Switch(...) main;)", ast_prog.pos)
        self.check_main(main)
        self.warn_unused()
        return self.prog

    def warn_unused(self) -> None:
        """p4c's unused-declaration warnings: constants, extern and control instances, tables
        (which the backends leave out, as p4c removes them). Declarations of the system includes
        (core.p4, v1model.p4) are not the user's."""
        for s in self.globals.declared:
            if s.used or s.pos is None or s.pos.file.startswith(INCLUDE_DIR):
                continue
            if s.kind == "const":
                self.warn(s.pos, f"'{s.name}' is unused", "unused")
            elif s.kind == "instance":
                self.warn(s.pos, f"'{s.name}': unused instance", "unused")
            elif s.kind == "table":
                self.warn(s.pos, f"Table {s.name} is not used; removing", "unused")


def check(ast_prog: A.Program) -> Program:
    """Check a parsed program and return the annotated Program the backends consume."""
    return Checker().check(ast_prog)
