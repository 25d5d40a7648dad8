"""p4sim-compile: a P4_16 (v1model subset) compiler emitting BMv2 JSON and P4Info.

Stages, one module each: preprocess (cpp), lexer + parse (lark LALR -> ast), checker (names,
types, widths, constant folding via constfold), bmv2* (JSON backend), p4info, cli.
"""
from .diagnostics import CompileError
from .driver import compile_file, CompileResult

__all__ = ["compile_file", "CompileResult", "CompileError"]
