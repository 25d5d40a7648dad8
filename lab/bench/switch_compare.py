"""Switch packet rate on veth for every available target, and their ratio.

p4sim-switch always; simple_switch_grpc too when it is on PATH, with the same program, traffic
and machine in the same run, reported as ``ratio_p4sim_over_simple_switch_grpc``.
"""
from __future__ import annotations

import os
import pathlib
import shutil

from lab.bench import aggregation_program as progmod
from lab.bench import veth_rate
from lab.bench.grid import Grid

WORKERS = 4           # the reference figure: a 32-lane, 4-worker SwitchML-style program
WINDOW = 16           # slots each worker keeps in flight


def unavailable_reason(program: pathlib.Path) -> str | None:
    if os.geteuid() != 0:
        return "needs root (veth pairs, AF_PACKET)"
    return progmod.unavailable_reason(program)


def compare(grid: Grid, progress: bool) -> dict:
    program = pathlib.Path(grid.program)
    reason = unavailable_reason(program)
    real = shutil.which("simple_switch_grpc")
    if reason:
        return {"veth": {"status": "skipped", "error": reason, "simple_switch_grpc": real}}
    duration = 2.0 if grid.mode == "quick" else 15.0
    targets = ["p4sim"] + (["bmv2"] if real else [])
    rows, errors = [], []
    for target in targets:
        try:
            row = veth_rate.measure_target(target, WORKERS, duration, window=WINDOW, program=program)
            row["case"] = f"{row['target']} veth"
            rows.append(row)
        except Exception as exc:
            errors.append(f"{target}: {type(exc).__name__}: {exc}")
    out = {"status": "ok" if rows and not errors else "failed", "rows": rows,
           "program": progmod.display(program),
           "simple_switch_grpc": real,
           "method": f"{WORKERS} workers, {WINDOW} slots each in flight, closed loop, dense 32-lane "
                     "packets; pps = contributions aggregated per second"}
    if errors:
        out["error"] = "; ".join(errors)
    by_target = {r["target"]: r["pps"] for r in rows}
    if real and by_target.get("p4sim-switch") and by_target.get("simple_switch_grpc"):
        out["ratio_p4sim_over_simple_switch_grpc"] = by_target["p4sim-switch"] / by_target["simple_switch_grpc"]
    elif not real:
        out["ratio_note"] = "simple_switch_grpc is not on PATH: no ratio in this run"
    return {"veth": out}
