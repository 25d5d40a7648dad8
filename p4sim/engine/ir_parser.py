"""The parser's states, decoded and checked once for both code generators: codegen_parser.py
emits them as Python, native/cparser.py as C.

A state is its operations in order, then its transition: unconditional (no select key, or only
a default case), or a select over keys -- fields and lookaheads, each padded to whole bytes and
concatenated, first key most significant -- whose cases are tried in order up to the first
default; without a matching case parsing ends (accept).  A value-set case compares the keys
packed at their own widths instead (BMv2's "compressed" form, `packed_shifts`, `compress`).
"""
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import ProgramError
from .program import Program
from .program_loader import parse_hexstr

Error = Callable[[str], Exception]


@dataclass(frozen=True)
class Extract:
    """extract into header `header`, or into the next element of header stack `stack`."""
    header: str | None = None
    stack: str | None = None


@dataclass(frozen=True)
class SetField:
    """target = source (a JSON expression), or = `lookahead` (bit offset, bits) past the offset."""
    target: Any
    source: Any = None
    lookahead: tuple[int, int] | None = None


@dataclass(frozen=True)
class Verify:
    """if not `cond`: the parser error whose code `error` (a JSON expression) gives."""
    cond: Any
    error: Any


@dataclass(frozen=True)
class Advance:
    """skip `amount` (a JSON expression) bits, or bytes when `in_bytes` (the "shift" op)."""
    amount: Any
    in_bytes: bool


@dataclass(frozen=True)
class Primitive:
    call: Any


Op = Extract | SetField | Verify | Advance | Primitive


@dataclass(frozen=True)
class SelectKey:
    """A field (`node`, its JSON) or `lookahead` (bit offset, bits) past the current offset."""
    node: Any = None
    lookahead: tuple[int, int] | None = None


@dataclass(frozen=True)
class Case:
    """kind "value": key & mask == value & mask (mask None: key == value); "vset": the keys,
    packed, match a member of value set `vset` under `mask` (None: every bit), a mask in the
    padded form of the key as the JSON gives it; "default": always."""
    kind: str
    next_state: str | None
    value: int = 0
    mask: int | None = None
    vset: str | None = None


@dataclass(frozen=True)
class State:
    name: str
    ops: tuple[Op, ...]
    keys: tuple[SelectKey, ...]   # empty: the transition is cases[0], unconditional
    cases: tuple[Case, ...]       # tried in order; none matching: accept
    lookahead_bytes: int          # bytes past the offset the select key reads

    @property
    def where(self) -> str:
        return f"parser state {self.name}"


@dataclass(frozen=True)
class Parser:
    states: dict[str, State]      # in JSON order
    init: str
    # a terminating parse visits each state at most once per byte it consumes or per stack
    # element it fills, plus this slack: a parser that visits more than bytes + slack states is
    # looping without consuming input (both engines drop the packet)
    slack: int


def parser(prog: Program, error: Error = ProgramError) -> Parser | None:
    """The program's parser (None if it has none); `error` builds the exception for what
    neither engine runs (the native generator passes NativeUnsupported)."""
    parsers = prog.json.get("parsers", [])
    if not parsers:
        return None
    raw = {s["name"]: s for s in parsers[0].get("parse_states", [])}
    states = {name: _state(prog, name, st, raw, error) for name, st in raw.items()}
    init = parsers[0].get("init_state")
    if init not in states:
        raise error(f"parser: init_state {init!r} is not a parse state")
    return Parser(states, init, 256 + len(states) + sum(st.size for st in prog.stacks.values()))


def _state(prog, name, st, states, error):
    where = f"parser state {name}"
    ops = tuple(_op(prog, op, where, error) for op in st.get("parser_ops", []))
    raw_keys = st.get("transition_key", [])
    trans = st.get("transitions", [])
    if not raw_keys or all(tt.get("type") == "default" for tt in trans):
        default: dict[str, Any] = next((tt for tt in trans if tt.get("type") == "default"), {})
        return State(name, ops, (), (Case("default", _next(default, states, where, error)),), 0)
    keys = []
    required = 0
    for k in raw_keys:
        kt = k.get("type")
        if kt in ("field", "stack_field"):
            keys.append(SelectKey(node=k))
        elif kt == "lookahead":
            bo, bw = k["value"]
            keys.append(SelectKey(lookahead=(bo, bw)))
            required = max(required, bo // 8 + (bo % 8 + bw + 7) // 8)
        else:
            raise error(f"{where}: unsupported transition key type {kt!r}")
    cases = []
    for tt in trans:
        ttype = tt.get("type")
        nxt = _next(tt, states, where, error)
        if ttype == "default":
            cases.append(Case("default", nxt))
            break
        mask = parse_hexstr(tt["mask"]) if tt.get("mask") else None
        if ttype == "hexstr":
            cases.append(Case("value", nxt, parse_hexstr(tt["value"]), mask))
        elif ttype == "parse_vset":
            if tt["value"] not in prog.parse_vsets:
                raise error(f"{where}: unknown parse value set {tt['value']!r}")
            cases.append(Case("vset", nxt, mask=mask, vset=tt["value"]))
        else:
            raise error(f"{where}: unsupported transition type {ttype!r}")
    return State(name, ops, tuple(keys), tuple(cases), required)


def _next(tt, states, where, error):
    nxt = tt.get("next_state")
    if nxt is not None and nxt not in states:
        raise error(f"{where}: transition to unknown state {nxt!r}")
    return nxt


def _op(prog, op, where, error) -> Op:
    kind = op.get("op")
    ps = op.get("parameters", [])
    if kind == "extract":
        t, v = ps[0].get("type"), ps[0].get("value")
        if t == "regular":
            if v not in prog.headers:
                raise error(f"{where}: extract of unknown header {v!r}")
            return Extract(header=v)
        if t == "stack":
            if v not in prog.stacks:
                raise error(f"{where}: extract to unknown header stack {v!r}")
            return Extract(stack=v)
        raise error(f"{where}: unsupported extract target type {t!r}")
    if kind == "set":
        src = ps[1]
        if src.get("type") == "lookahead":
            bo, bw = src["value"]
            return SetField(ps[0], lookahead=(bo, bw))
        return SetField(ps[0], src)
    if kind == "verify":
        return Verify(ps[0], ps[1])
    if kind in ("advance", "shift"):
        return Advance(ps[0], kind == "shift")
    if kind == "primitive":
        return Primitive(ps[0])
    raise error(f"{where}: unsupported parser operation {kind!r}")


def padded_shifts(widths: list[int]) -> tuple[int, list[int]]:
    """The select key: (its bits, the left shift of each key) with each key padded to whole
    bytes, first key most significant."""
    total = sum((w + 7) // 8 * 8 for w in widths)
    shift, shifts = total, []
    for w in widths:
        shift -= (w + 7) // 8 * 8
        shifts.append(shift)
    return total, shifts


def packed_shifts(widths: list[int]) -> list[int]:
    """The left shift of each key when packed at their own widths (value-set members)."""
    shift, shifts = sum(widths), []
    for w in widths:
        shift -= w
        shifts.append(shift)
    return shifts


def compress(padded: int, widths: list[int]) -> int:
    """A select-key value with each key padded to whole bytes -> the keys packed at their widths."""
    out = 0
    shift = sum((w + 7) // 8 * 8 for w in widths)
    for w in widths:
        shift -= (w + 7) // 8 * 8
        out = (out << w) | ((padded >> shift) & ((1 << w) - 1))
    return out


def vset_mask(case: Case, widths: list[int]) -> int:
    """A value-set case's mask over the packed keys."""
    return compress(case.mask, widths) if case.mask is not None else (1 << sum(widths)) - 1
