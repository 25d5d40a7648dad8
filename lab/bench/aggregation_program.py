"""The compiled aggregation program a benchmark runs: BMv2 JSON plus its P4Info beside it.

Default: what `make build` writes (build/p4reduce.json, build/p4reduce.p4info.txtpb);
`python -m lab.bench --program PATH` points elsewhere (the tests compile into a temporary directory).
"""
from __future__ import annotations

import pathlib
from collections.abc import Sequence

from p4reduce.p4src.build import compile_program
from p4reduce.protocol.program_files import SOURCE, p4info_for

REPO = pathlib.Path(__file__).resolve().parents[2]   # the checkout (lab/bench/ is two below)
DEFAULT = REPO / "build" / "p4reduce.json"
JUMBO_DIR = REPO / "build" / "jumbo"      # the jumbo section's build (bench/grid.py JUMBO_DEFINES)


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


def build(out_dir: pathlib.Path, defines: Sequence[str]) -> pathlib.Path:
    """Compile p4src/p4reduce.p4 with `defines` into out_dir as `make build` would (p4c-bm2-ss when
    installed, else p4sim-compile), unless the build there was made with the same defines;
    returns the JSON's path. Raises ProgramBuildError naming what failed."""
    out_dir = pathlib.Path(out_dir)
    stamp = out_dir / "defines"
    json_path = out_dir / "p4reduce.json"
    wanted = " ".join(defines)
    if json_path.is_file() and p4info_for(json_path).is_file() and stamp.is_file() \
            and stamp.read_text() == wanted and _newer_than_sources(json_path):
        return json_path
    built = compile_program(out_dir, defines, prefer_real=True)
    stamp.write_text(wanted)
    return built.json_path


def _newer_than_sources(json_path: pathlib.Path) -> bool:
    built = json_path.stat().st_mtime
    return all(src.stat().st_mtime <= built for src in SOURCE.parent.glob("*.p4"))
