"""The compile pipeline: preprocess -> parse -> check -> BMv2 JSON (+ P4Info on demand)."""
from . import bmv2
from .checker import check
from .parse import parse
from .preprocess import preprocess


class CompileResult:
    """BMv2 JSON document, warnings, and the P4Info message (built, with protobuf, when first used)."""

    def __init__(self, bmv2_json, prog, backend, warnings):
        self.bmv2 = bmv2_json
        self.warnings = warnings
        self._prog, self._backend, self._p4info = prog, backend, None

    @property
    def p4info(self):
        if self._p4info is None:
            from . import p4info
            self._p4info = p4info.build(self._prog, self._backend)
        return self._p4info


def compile_file(path, include_dirs=(), defines=(), undefines=()):
    """Compile one P4 source file; raises diagnostics.CompileError on bad input."""
    source = preprocess(path, include_dirs, defines, undefines)
    prog = check(parse(source))
    doc, backend = bmv2.to_json(prog, path)
    return CompileResult(doc, prog, backend, prog.warnings)
