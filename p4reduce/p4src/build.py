"""Compiling the aggregation program as `make build` does: p4sim-compile, or p4c-bm2-ss when it
is on PATH and preferred, writing OUT/p4reduce.json and its P4Info OUT/p4reduce.p4info.txtpb.

What tests, stand-ins and benchmarks use instead of spelling the compiler's command line
themselves. The compilers run as processes (as make runs them), so nothing here imports them.
"""
from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
from collections.abc import Iterable
from typing import NamedTuple

from p4reduce.protocol.program_files import SOURCE, p4info_for

REAL_COMPILER = "p4c-bm2-ss"
EMBEDDED_COMPILER = "p4sim-compile"


class ProgramBuildError(RuntimeError):
    """The program did not compile; the message carries the compiler's diagnostics."""


class BuiltProgram(NamedTuple):
    """A compiled program: the BMv2 JSON, and the compiler's warnings (empty when clean)."""
    json_path: pathlib.Path
    warnings: str

    @property
    def p4info_path(self) -> pathlib.Path:
        return p4info_for(self.json_path)


def compiler_command(prefer_real: bool = False) -> list[str]:
    """The compiler's argv prefix: p4c-bm2-ss if asked for and on PATH, else p4sim-compile."""
    real = shutil.which(REAL_COMPILER) if prefer_real else None
    return [real] if real else [sys.executable, "-m", "p4sim.compile"]


def compile_program(out_dir: str | pathlib.Path, defines: Iterable[str] = (), prefer_real: bool = False,
                    source: pathlib.Path = SOURCE, timeout: float = 300.0) -> BuiltProgram:
    """Compile `source` (default p4src/p4reduce.p4) into `out_dir`; `defines` are NAME=VALUE
    preprocessor definitions (e.g. LANES=64). Raises ProgramBuildError naming what failed."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / (source.stem + ".json")
    argv = compiler_command(prefer_real) + ["--p4v", "16", "--p4runtime-files", str(p4info_for(json_path)),
                                            "-o", str(json_path)]
    argv += [f"-D{d}" for d in defines] + [str(source)]
    name = EMBEDDED_COMPILER if argv[0] == sys.executable else REAL_COMPILER
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ProgramBuildError(f"{name} did not finish compiling {source} within {timeout:g} s") from None
    if proc.returncode != 0 or not json_path.is_file():
        raise ProgramBuildError(f"{name} failed on {source}:\n{proc.stderr}")
    return BuiltProgram(json_path, proc.stderr)
