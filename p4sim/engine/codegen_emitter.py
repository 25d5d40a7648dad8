"""The base of the code generator's emitters: the program, the output lines and unique names.

Each emitter (parser, deparser, pipeline, checksums) is a mixin over `Emitter`; codegen.CodeGen
composes them.
"""
from typing import Any

from .program import Program
from .tables import Table


class Emitter:
    """Shared state of one code generation run."""

    tables: dict[str, Table]                 # set by codegen.CodeGen

    def __init__(self, prog: Program, traced: bool = False) -> None:
        self.prog = prog
        self.traced = traced
        self.lines: list[str] = []
        self.used: set[str] = set()
        self.structs: dict[str, Any] = {}

    def prog_action_json(self, aid: int) -> dict:
        """The JSON of action `aid` (its primitives)."""
        cache = self.__dict__.setdefault("_action_json", None)
        if cache is None:
            cache = self._action_json = {a["id"]: a for a in self.prog.json.get("actions", [])}
        return cache[aid]

    def w(self, line: str = "") -> None:
        self.lines.append(line)

    def ident(self, prefix: str, name: str) -> str:
        """A fresh Python identifier for a JSON object name (prefix + name with non-alnum as _)."""
        base = prefix + "".join(c if c.isalnum() else "_" for c in name)
        ident = base
        n = 0
        while ident in self.used:
            n += 1
            ident = f"{base}_{n}"
        self.used.add(ident)
        return ident
