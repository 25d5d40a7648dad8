"""Sections measured by other components' benchmark scripts, run as subprocesses.

``bench/switch_rate.py`` (engine), ``bench/worker_encode.py`` (worker), ``bench/faults.py``
(the switch killed mid-run, in Mininet) and ``bench/hierarchy.py`` (aggregation across switches, in
Mininet) are called with
``python -m MODULE --json`` (plus ``--quick`` in quick mode when the script's --help offers it, else
a short ``--seconds``) and must print one JSON document as the last line of stdout. A missing
script or a failed run is recorded in the section, never fatal to the whole run. Figures named
``*_pps`` become chart rows.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

from lab.bench import switch_compare
from lab.bench.grid import Grid

BENCH_DIR = pathlib.Path(__file__).resolve().parent


def _options(module: str, env: dict) -> str:
    """The module's --help text (to see which options it offers)."""
    try:
        return subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True,
                              text=True, timeout=60, cwd=BENCH_DIR.parent, env=env).stdout
    except subprocess.TimeoutExpired:
        return ""


def run_module(module: str, quick: bool, timeout: float, quick_seconds: float = 1.0,
               extra: tuple[str, ...] = ()) -> dict:
    """Run ``python -m module --json ... extra``; return its JSON document or a failure record."""
    script = BENCH_DIR / (module.rsplit(".", 1)[-1] + ".py")
    if not script.exists():
        return {"status": "skipped", "error": f"{script.relative_to(BENCH_DIR.parent)} not present"}
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", module, "--json"]
    if quick:
        options = _options(module, env)
        if "--quick" in options:
            cmd.append("--quick")
        elif "--seconds" in options:
            cmd += ["--seconds", str(quick_seconds)]
    cmd += list(extra)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              cwd=BENCH_DIR.parent, env=env)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "error": f"{' '.join(cmd[1:])} timed out after {timeout:.0f}s"}
    lines = [l for l in proc.stdout.strip().splitlines() if l.strip()]
    doc = None
    if lines:
        try:
            doc = json.loads(lines[-1])
        except json.JSONDecodeError:
            doc = None
    if proc.returncode != 0 or not isinstance(doc, dict):
        tail = " | ".join(proc.stderr.strip().splitlines()[-5:])
        return {"status": "failed",
                "error": f"{' '.join(cmd[1:])}: exit {proc.returncode}"
                         + ("" if isinstance(doc, dict) else ", no JSON document on stdout")
                         + (f": {tail}" if tail else "")}
    doc.setdefault("status", "ok")
    doc["command"] = " ".join(["python", *cmd[1:]])
    if "rows" not in doc:
        rows = [{"case": key[:-4].replace("_", " "), "pps": value} for key, value in doc.items()
                if key.endswith("_pps") and isinstance(value, (int, float))]
        if rows:
            doc["rows"] = rows
    return doc


def run_switch_rate(grid: Grid, progress: bool) -> dict:
    embedded = run_module("lab.bench.switch_rate", grid.mode == "quick",
                          timeout=300 if grid.mode == "quick" else 3600)
    for row in embedded.get("rows", []):
        program = embedded.get("aggregation_program") if row["case"] == "aggregation" else None
        row["case"] = f"p4sim in-process {row['case']}" + (f" [{program}]" if program else "")
    result = {"embedded": embedded}
    result.update(switch_compare.compare(grid, progress))
    return result


def run_encode(grid: Grid, progress: bool) -> dict:
    return run_module("lab.bench.worker_encode", grid.mode == "quick",
                      timeout=300 if grid.mode == "quick" else 1800)


def run_faults(grid: Grid, progress: bool) -> dict:
    """bench/faults.py: the switch killed twice mid-run, and a job without slots (Mininet, root)."""
    return run_module("lab.bench.faults", grid.mode == "quick", timeout=900, extra=("--program", grid.program))


def run_hierarchy(grid: Grid, progress: bool) -> dict:
    """bench/hierarchy.py: 8 workers on two-tier and tree networks, p4reduce through the tree vs at
    the root only vs gloo (Mininet, root); the grid's program, repetitions and warm-up."""
    quick = grid.mode == "quick"
    return run_module("lab.bench.hierarchy", quick, timeout=900 if quick else 4 * 3600,
                      extra=("--program", grid.program, "--reps", str(grid.reps), "--warmup", str(grid.warmup),
                             "--no-progress"))


RUNNERS = {"switch-rate": run_switch_rate, "encode": run_encode, "faults": run_faults,
           "hierarchy": run_hierarchy}
