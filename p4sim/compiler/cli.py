"""Command line of p4sim-compile, compatible with p4c-bm2-ss for the options p4reduce uses.

    p4sim-compile [--p4v 16] [--std p4-16] [-I DIR]... [-D NAME[=VALUE]]... [-o OUT.json]
                  [--p4runtime-files FILE[,FILE...]] SOURCE.p4

Errors are printed as ``file:line:col: error: message``; the exit status is 0 on success, 1 on a
compile error, 2 on a bad command line.
"""
import argparse
import json
import os
import sys
from typing import Any

from .diagnostics import CompileError
from .driver import compile_file, run_deep

VERSION = "p4sim-compile 0.1.0 (P4_16 v1model subset; command-line compatible with p4c-bm2-ss)"


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write(f"p4sim-compile: error: {message}\n")
        sys.exit(2)


def _depth(doc: Any) -> int:
    """Nesting depth of a JSON document (iteratively)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        x, d = stack.pop()
        deepest = max(deepest, d)
        if isinstance(x, dict):
            stack.extend((v, d + 1) for v in x.values())
        elif isinstance(x, list):
            stack.extend((v, d + 1) for v in x)
    return deepest


def _level(args: argparse.Namespace, kind: str) -> str:
    """What p4c's -W options make of a warning of `kind`: the last option naming the kind wins;
    otherwise the options for all kinds, where a disabled warning is not an error either
    (--Wdisable --Werror reports nothing) unless a later --Wwarn brings it back."""
    specific = [lvl for lvl, value in args.warning_options if value == kind]
    if specific:
        return specific[-1]
    general = [lvl for lvl, value in args.warning_options if value == "all"]
    if not general:
        return "warn"
    if "disable" in general and general[-1] != "warn":
        return "disable"
    return general[-1]


class _WarningOption(argparse.Action):
    """--Werror/--Wdisable/--Wwarn[=DIAG], remembered in command-line order."""

    def __call__(self, parser, namespace, values, option_string=None):
        level = {"--Werror": "error", "--Wdisable": "disable", "--Wwarn": "warn"}[option_string]
        namespace.warning_options = [*getattr(namespace, "warning_options", []), (level, values or "all")]


def make_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="p4sim-compile", description="Compile a P4_16 v1model program to BMv2 JSON and P4Info "
                "(a stand-in for p4c-bm2-ss).")
    p.add_argument("source", nargs="?", help="P4_16 source file")
    p.add_argument("-o", dest="output", help="BMv2 JSON output file (default: SOURCE basename + .json)")
    p.add_argument("--p4v", default="16", help="P4 language version (only 16)")
    p.add_argument("--std", default="p4-16", help="language standard (p4-16)")
    p.add_argument("-I", dest="includes", action="append", default=[], metavar="DIR",
                   help="add DIR to the preprocessor include path")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="define a preprocessor macro")
    p.add_argument("-U", dest="undefines", action="append", default=[], metavar="NAME",
                   help="undefine a preprocessor macro")
    p.add_argument("--p4runtime-files", dest="p4runtime_files", default=None, metavar="FILES",
                   help="comma-separated P4Info outputs; format from extension: .txt/.txtpb text, "
                        ".bin binary, .json JSON")
    p.add_argument("--p4runtime-file", dest="p4runtime_file", default=None, help=argparse.SUPPRESS)
    p.add_argument("--p4runtime-format", dest="p4runtime_format", default=None,
                   choices=["text", "binary", "json"], help=argparse.SUPPRESS)
    p.add_argument("--target", default="bmv2", help="target (bmv2)")
    p.add_argument("--arch", default="v1model", help="architecture (v1model)")
    p.set_defaults(warning_options=[])
    p.add_argument("--Werror", nargs="?", const="all", metavar="DIAG", action=_WarningOption,
                   help="treat warnings (of kind DIAG: unused, overflow, unsupported; default all) as errors")
    p.add_argument("--Wdisable", nargs="?", const="all", metavar="DIAG", action=_WarningOption,
                   help="silence warnings (of kind DIAG; default all)")
    p.add_argument("--Wwarn", nargs="?", const="all", metavar="DIAG", action=_WarningOption,
                   help="report warnings of kind DIAG (default all) as warnings again")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    if args.version:
        print(VERSION)
        return 0
    if not args.source:
        sys.stderr.write("p4sim-compile: error: no source file given\n")
        return 2
    if args.p4v not in ("16", "p4-16"):
        sys.stderr.write(f"p4sim-compile: error: --p4v {args.p4v}: only P4_16 (--p4v 16) is supported\n")
        return 2
    if args.std.lower().replace("_", "-") not in ("p4-16", "16"):
        sys.stderr.write(f"p4sim-compile: error: --std {args.std}: only p4-16 is supported\n")
        return 2
    if args.target != "bmv2" or args.arch != "v1model":
        sys.stderr.write("p4sim-compile: error: only --target bmv2 --arch v1model is supported\n")
        return 2
    p4info_outs = []
    if args.p4runtime_files:
        p4info_outs += [f for f in args.p4runtime_files.split(",") if f]
    if args.p4runtime_file:
        # legacy spelling: the format comes from --p4runtime-format (p4c's default: binary)
        p4info_outs.append((args.p4runtime_file, args.p4runtime_format or "binary"))
    for f in p4info_outs:
        if isinstance(f, str) and not f.endswith((".txt", ".txtpb", ".bin", ".json")):
            sys.stderr.write(f"p4sim-compile: error: --p4runtime-files {f}: unknown format "
                             f"(use .txtpb, .txt, .bin or .json)\n")
            return 2
    defines = list(args.defines)
    output = args.output or os.path.splitext(os.path.basename(args.source))[0] + ".json"
    try:
        result = compile_file(args.source, include_dirs=args.includes, defines=defines,
                              undefines=args.undefines)
        info = result.p4info if p4info_outs else None
    except CompileError as e:
        sys.stderr.write(e.render() + "\n")
        return 1
    except RecursionError:
        sys.stderr.write(f"{args.source}: error: program is nested too deeply\n")
        return 1
    except Exception as e:  # a bug in p4sim-compile: report it, never a traceback
        if os.environ.get("P4SIM_COMPILE_DEBUG"):
            raise
        sys.stderr.write(f"{args.source}: error: internal compiler error: {type(e).__name__}: {e}\n"
                         "please report this with the source file that triggers it\n")
        return 3
    errors = 0
    for w in result.diagnostics:
        level = _level(args, w.kind)
        if level == "disable":
            continue
        sys.stderr.write(w.render(as_error=level == "error") + "\n")
        errors += level == "error"
    if errors:
        return 1
    try:
        if info is not None:
            from .p4info import serialize
        # indented as p4c writes it, unless so deep that indentation would make the file quadratic
        indent = 2 if _depth(result.bmv2) <= 64 else None
        text = run_deep(lambda: json.dumps(result.bmv2, indent=indent))
        with open(output, "w") as f:
            f.write(text + "\n")
        for out in p4info_outs if info is not None else ():
            if isinstance(out, tuple):
                path, fmt = out
                data = serialize(info, {"text": ".txt", "binary": ".bin", "json": ".json"}[fmt])
            else:
                path, data = out, serialize(info, out)
            with open(path, "wb") as f:
                f.write(data or b"")
    except OSError as e:
        sys.stderr.write(f"p4sim-compile: error: cannot write {e.filename}: {e.strerror}\n")
        return 1
    return 0
