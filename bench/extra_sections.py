"""Sections measured by other components' benchmark scripts, run as subprocesses.

``bench/switch_rate.py`` (engine) and ``bench/worker_encode.py`` (worker) are called with
``python -m MODULE --json [--quick]`` and must print one JSON document as the last line of stdout.
A missing script or a failed run is recorded in the section, never fatal to the whole run.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

BENCH_DIR = pathlib.Path(__file__).resolve().parent


def run_module(module: str, quick: bool, timeout: float) -> dict:
    """Run ``python -m module --json [--quick]``; return its JSON document or a failure record."""
    script = BENCH_DIR / (module.rsplit(".", 1)[-1] + ".py")
    if not script.exists():
        return {"status": "skipped", "error": f"{script.relative_to(BENCH_DIR.parent)} not present"}
    cmd = [sys.executable, "-m", module, "--json"] + (["--quick"] if quick else [])
    env = dict(os.environ, PYTHONUNBUFFERED="1")
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
    return doc


def run_switch_rate(grid, progress) -> dict:
    from bench import switch_compare
    result = {"embedded": run_module("bench.switch_rate", grid.mode == "quick",
                                     timeout=300 if grid.mode == "quick" else 3600)}
    result.update(switch_compare.compare(grid, progress))
    return result


def run_encode(grid, progress) -> dict:
    return run_module("bench.worker_encode", grid.mode == "quick",
                      timeout=300 if grid.mode == "quick" else 1800)


RUNNERS = {"switch-rate": run_switch_rate, "encode": run_encode}
