"""The base of the code generator's emitters: the program, the output lines and unique names.

Each emitter (parser, deparser, pipeline, checksums) is a mixin over `Emitter`; codegen.CodeGen
composes them.
"""


class Emitter:
    """Shared state of one code generation run."""

    def __init__(self, prog, traced=False):
        self.prog = prog
        self.traced = traced
        self.lines = []
        self.used = set()
        self.structs = {}

    def w(self, line=""):
        self.lines.append(line)

    def ident(self, prefix, name):
        """A fresh Python identifier for a JSON object name (prefix + name with non-alnum as _)."""
        base = prefix + "".join(c if c.isalnum() else "_" for c in name)
        ident = base
        n = 0
        while ident in self.used:
            n += 1
            ident = f"{base}_{n}"
        self.used.add(ident)
        return ident
