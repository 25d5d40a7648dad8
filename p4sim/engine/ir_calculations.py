"""What a calculation (hash or checksum) and the verify/update checksum steps read, walked once
for both code generators: codegen_checksums.py emits it as Python, native/ccalc.py as C.

A calculation serialises its inputs in order.  Without header or payload inputs ("static") the
fields and constants are packed bit by bit, first input most significant, and padded with zero
bits at the end to whole bytes.  With them ("dynamic") every field and
constant is padded to whole bytes on its own, a header input adds the header's bytes when it is
valid, and the payload input adds the headers the deparser emits after the last header named
before it, then the payload.
"""
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .errors import ProgramError
from .program import Program
from .program_loader import parse_hexstr

Error = Callable[[str], Exception]


@dataclass(frozen=True)
class CalcInput:
    """One input of a calculation.

    kind "field": `node` is its JSON ({"type": "field", "value": [header, field]});
    "const": `value` at `width` bits (a hexstr input); "header": `header` is its name;
    "payload": `header` is the last header named before it (None: every header emitted)."""
    kind: str
    node: Any = None
    value: int = 0
    width: int = 0
    header: str | None = None


@dataclass(frozen=True)
class Calculation:
    name: str
    algo: str
    inputs: tuple[CalcInput, ...]
    dynamic: bool       # a header or payload input: inputs are serialised byte by byte


def calculation(prog: Program, calc: dict, error: Error = ProgramError) -> Calculation:
    """The inputs of one JSON calculation; `error` builds the exception for an input neither
    engine understands (the native generator passes NativeUnsupported)."""
    name = calc["name"]
    inputs = []
    dynamic = False
    last_header = None
    for inp in calc.get("input", []):
        t = inp.get("type")
        if t == "field":
            inputs.append(CalcInput("field", node=inp))
            last_header = inp["value"][0]
        elif t == "hexstr":
            inputs.append(CalcInput("const", value=parse_hexstr(inp["value"]), width=int(inp.get("bitwidth", 0))))
        elif t == "header":
            if inp["value"] not in prog.headers:
                raise error(f"calculation {name}: unknown header {inp['value']!r}")
            inputs.append(CalcInput("header", header=inp["value"]))
            dynamic = True
            last_header = inp["value"]
        elif t == "payload":
            inputs.append(CalcInput("payload", header=last_header))
            dynamic = True
        else:
            raise error(f"calculation {name}: unsupported input type {t!r}")
    return Calculation(name, calc.get("algo", ""), tuple(inputs), dynamic)


def checksum_steps(prog: Program, kind: str, error: Error = ProgramError) -> Iterator[dict]:
    """The JSON checksums that run in the `kind` ("verify" or "update") step, in order, each
    naming a calculation of the program."""
    calcs = {c["name"] for c in prog.json.get("calculations", [])}
    for ck in prog.json.get("checksums", []):
        if not ck.get(kind, True):
            continue
        if ck.get("calculation") not in calcs:
            raise error(f"checksum {ck.get('name')}: unknown calculation {ck.get('calculation')!r}")
        yield ck
