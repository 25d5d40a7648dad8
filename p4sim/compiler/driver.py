"""The compile pipeline: preprocess -> parse -> check -> BMv2 JSON + P4Info."""
from . import bmv2, p4info
from .checker import check
from .parse import parse
from .preprocess import preprocess


class CompileResult:
    def __init__(self, bmv2_json, p4info_msg, warnings):
        self.bmv2 = bmv2_json
        self.p4info = p4info_msg
        self.warnings = warnings


def compile_file(path, include_dirs=(), defines=(), undefines=()):
    """Compile one P4 source file; raises diagnostics.CompileError on bad input."""
    source = preprocess(path, include_dirs, defines, undefines)
    prog = check(parse(source))
    doc, backend = bmv2.to_json(prog, path)
    info = p4info.build(prog, backend)
    return CompileResult(doc, info, prog.warnings)
