"""p4sim-compile: a P4_16 (v1model subset) compiler emitting BMv2 JSON and P4Info.

Stages: preprocess (cpp), lexer + parse (lark LALR) + tree_to_ast (-> ast), checker (names,
types, widths, constant folding via constfold; split into check_* mixins over symbols),
bmv2* (JSON backend), p4info, cli.
"""
from .diagnostics import CompileError
from .driver import CompileResult, compile_file

__all__ = ["CompileError", "CompileResult", "compile_file"]
