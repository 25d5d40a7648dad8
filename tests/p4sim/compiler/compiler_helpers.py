"""Helpers for compiler tests: compile P4 text from a temp file, find things in the BMv2 JSON."""
import pathlib
import textwrap

from p4sim.compiler import CompileError, compile_file

V1_PRELUDE = "#include <core.p4>\n#include <v1model.p4>\n"

# A minimal v1model program; tests substitute pieces of it.
TEMPLATE = V1_PRELUDE + """\
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
%(decls)s
struct headers_t { ethernet_t eth; %(hdr_fields)s }
struct meta_t { bit<8> a; bit<8> b; bit<32> c; %(meta_fields)s }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
%(parser)s
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { %(verify)s } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
%(ingress)s
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { %(compute)s } }
control D(packet_out pkt, in headers_t hdr) { apply { %(deparser)s } }
V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;
"""

DEFAULTS = {
    "decls": "",
    "hdr_fields": "",
    "meta_fields": "",
    "parser": "state start { pkt.extract(hdr.eth); transition accept; }",
    "verify": "",
    "ingress": "apply { }",
    "compute": "",
    "deparser": "pkt.emit(hdr.eth);",
}


def program(**parts):
    d = dict(DEFAULTS)
    d.update(parts)
    return TEMPLATE % d


def write(tmp_path, text, name="prog.p4"):
    p = pathlib.Path(tmp_path) / name
    p.write_text(textwrap.dedent(text) if not text.startswith("#include") else text)
    return p


def compile_text(tmp_path, text, name="prog.p4"):
    return compile_file(str(write(tmp_path, text, name)))


def compile_error(tmp_path, text, name="prog.p4"):
    """The rendered diagnostic for a program that must fail to compile."""
    p = write(tmp_path, text, name)
    try:
        compile_file(str(p))
    except CompileError as e:
        return e.render().replace(str(p), name)
    raise AssertionError("program compiled but an error was expected")


def line_of(text, needle, nth=0):
    """1-based line and column of the nth occurrence of needle in text."""
    idx = -1
    for _ in range(nth + 1):
        idx = text.index(needle, idx + 1)
    line = text.count("\n", 0, idx) + 1
    col = idx - (text.rfind("\n", 0, idx) + 1) + 1
    return line, col


def by_name(items, name):
    for x in items:
        if x["name"] == name:
            return x
    raise KeyError(name)


def pipeline(doc, name="ingress"):
    return by_name(doc["pipelines"], name)


def action_by_name(doc, name):
    return [a for a in doc["actions"] if a["name"] == name]


def ops(action):
    return [p["op"] for p in action["primitives"]]


def strip_source_info(o):
    if isinstance(o, dict):
        return {k: strip_source_info(v) for k, v in o.items() if k != "source_info"}
    if isinstance(o, list):
        return [strip_source_info(x) for x in o]
    return o
