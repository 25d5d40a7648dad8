"""The compiled aggregation program a benchmark runs: BMv2 JSON plus its P4Info beside it.

Default: what `make build` writes (build/p4reduce.json, build/p4reduce.p4info.txtpb);
`python -m p4reduce.bench --program PATH` points elsewhere (the tests compile into a temporary directory).
"""
from __future__ import annotations

import pathlib

from p4reduce.protocol.program import p4info_for

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT = REPO / "build" / "p4reduce.json"


def display(path: pathlib.Path) -> str:
    path = pathlib.Path(path).resolve()
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def unavailable_reason(program: pathlib.Path) -> str | None:
    """None when the JSON and its P4Info exist; otherwise what is missing and how to get it."""
    program = pathlib.Path(program)
    for path in (program, p4info_for(program)):
        if not path.is_file():
            return f"{display(path)} not built (run `make build`, or pass --program)"
    return None
