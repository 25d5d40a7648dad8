"""Constant folding over checked literals, with P4 width rules and wraparound."""
from typing import Any

from . import ast as A
from .diagnostics import CompileError, Pos
from .types import BitsT, BoolT, Type


def normalize(value: int, t: Type) -> int:
    """Wrap ``value`` into the range of type ``t`` (two's complement for int<W>)."""
    if isinstance(t, BitsT):
        mask = (1 << t.width) - 1
        value &= mask
        if t.signed and value >> (t.width - 1):
            value -= 1 << t.width
    return value


def int_lit(value: int, t: Type, pos: Pos | None) -> A.IntLit:
    lit = A.IntLit(normalize(value, t), getattr(t, "width", None), getattr(t, "signed", False), pos=pos)
    lit.type = t
    return lit


def bool_lit(value: object, pos: Pos | None) -> A.BoolLit:
    lit = A.BoolLit(bool(value), pos=pos)
    lit.type = BoolT()
    return lit


def is_const(e: object) -> bool:
    return isinstance(e, (A.IntLit, A.BoolLit))


def _sat(v, t):
    if t.signed:
        lo, hi = -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
    else:
        lo, hi = 0, (1 << t.width) - 1
    return max(lo, min(hi, v))


def fold_binary(op: str, l: Any, r: Any, t: Type, pos: Pos | None) -> Any:
    """Fold ``l op r`` (both literals, already converted to operand type); t is the result type."""
    a, b = l.value, r.value
    if op in ("&&", "||"):
        return bool_lit((a and b) if op == "&&" else (a or b), pos)
    if op in ("==", "!="):
        return bool_lit((a == b) == (op == "=="), pos)
    if op in ("<", "<=", ">", ">="):
        return bool_lit({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op], pos)
    if op == "+":
        v = a + b
    elif op == "-":
        v = a - b
    elif op == "*":
        v = a * b
    elif op in ("/", "%"):
        if b == 0:
            raise CompileError("division by zero in constant expression", pos)
        if (a < 0 or b < 0):
            raise CompileError(f"'{op}' on negative values is not defined in P4", pos)
        v = a // b if op == "/" else a % b
    elif op == "&":
        v = a & b
    elif op == "|":
        v = a | b
    elif op == "^":
        v = a ^ b
    elif op == "<<":
        v = a << b if b < getattr(t, "width", 0) else 0      # never build a number wider than the type
    elif op == ">>":
        v = a >> b if b < getattr(t, "width", 0) else (-1 if a < 0 else 0)
    elif op == "|+|":
        return int_lit(_sat(a + b, t), t, pos)
    elif op == "|-|":
        return int_lit(_sat(a - b, t), t, pos)
    elif op == "++":
        v = ((a & ((1 << l.type.width) - 1)) << r.type.width) | (b & ((1 << r.type.width) - 1))
    else:
        raise CompileError(f"cannot fold operator {op}", pos)
    return int_lit(v, t, pos)
