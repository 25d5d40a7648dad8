"""Symbols and nested scopes: how the checker binds a P4 name to what it declares."""
from __future__ import annotations

from typing import Any

from .diagnostics import CompileError, Pos
from .types import Type


class Sym:
    """A named thing in scope: kind is param, local, const, instance, action, table, state...
    `used` is set when an expression names it (unused declarations are warned about)."""

    __slots__ = ("decl", "kind", "name", "owner", "pos", "type", "used", "value")

    def __init__(self, kind: str, name: str, decl: Any, type_: Type | None = None, value: Any = None,
                 owner: Any = None) -> None:
        """decl: the declaring AST node (or a Type for type names); value: a constant's folded
        expression; owner: the block, action or function declaring it."""
        self.kind, self.name, self.decl, self.type, self.value, self.owner = kind, name, decl, type_, value, owner
        self.used = False
        self.pos: Pos | None = None


class Scope:
    """One level of name bindings; lookups fall back to the enclosing scope. Every symbol added
    to a scope tree is also listed in `declared` (shared by the whole tree), in order."""

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.syms: dict[str, Sym] = {}
        self.declared: list[Sym] = parent.declared if parent is not None else []

    def add(self, sym: Sym, pos: Pos | None) -> None:
        if sym.name in self.syms:
            raise CompileError(f"'{sym.name}' is already declared in this scope", pos)
        self.syms[sym.name] = sym
        sym.pos = pos
        self.declared.append(sym)

    def lookup(self, name: str) -> Sym | None:
        s: Scope | None = self
        while s is not None:
            if name in s.syms:
                return s.syms[name]
            s = s.parent
        return None
