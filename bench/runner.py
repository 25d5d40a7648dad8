"""A whole benchmark run: every section of the grid, with progress, into one result document."""
from __future__ import annotations

import datetime
import sys
import time
from typing import Callable, Dict, List

from bench import cells as cellmod
from bench.grid import Grid
from bench.links import LINKS
from bench.machine import machine_info
from bench.systems import SYSTEMS
from bench.topology import BenchNet

SCHEMA = "p4reduce-bench/1"


def _progress(total: int, desc: str, enabled: bool):
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit="cell", disable=not enabled, file=sys.stderr,
                dynamic_ncols=True, leave=True)


def _tick(bar):
    def tick(cell):
        bar.set_postfix_str(f"{cell['system']} n={cell['workers']} {cell['size']:,} "
                            f"{cell['link']} d={cell['density']:g}: {cell['status']}", refresh=False)
        bar.update(1)
    return tick


def _skip_all(system, bn, sizes, reason, section, density, tick) -> List[dict]:
    out = []
    for size in sizes:
        cell = {"section": section, "system": system.name, "workers": len(bn.workers), "size": size,
                "density": density, "link": bn.link.name, "switch": bn.switch_kind,
                "status": "skipped", "error": reason}
        out.append(cell)
        tick(cell)
    return out


def run_allreduce(grid: Grid, progress: bool) -> Dict:
    """p4reduce dense vs the baselines, for every worker count, link setting and size."""
    cells, networks = [], []
    total = len(grid.workers) * len(grid.links) * len(grid.systems) * len(grid.sizes)
    with _progress(total, "allreduce", progress) as bar:
        tick = _tick(bar)
        for workers in grid.workers:
            for link in grid.links:
                with BenchNet(workers, LINKS[link], grid.switch) as bn:
                    networks.append(bn.describe())
                    for name in grid.systems:
                        system = SYSTEMS[name]
                        reason = system.unavailable_reason(bn)
                        if reason:
                            cells += _skip_all(system, bn, grid.sizes, reason, "allreduce", 1.0, tick)
                            continue
                        cells += cellmod.run_sizes(bn, system, grid.sizes, reps=grid.reps,
                                                   warmup=grid.warmup, budget=grid.cell_budget_s,
                                                   timeout=grid.cell_timeout_s, tick=tick)
    return {"cells": cells, "networks": networks}


def run_sparsity(grid: Grid, progress: bool) -> Dict:
    """p4reduce sparse at each block density vs p4reduce dense, same size and workers."""
    cells, networks = [], []
    system = SYSTEMS["p4reduce"]
    total = len(grid.sparsity_links) * len(grid.densities)
    with _progress(total, "sparsity", progress) as bar:
        tick = _tick(bar)
        for link in grid.sparsity_links:
            with BenchNet(grid.sparsity_workers, LINKS[link], grid.switch) as bn:
                networks.append(bn.describe())
                reason = system.unavailable_reason(bn)
                for density in sorted(grid.densities, reverse=True):
                    if reason:
                        cells += _skip_all(system, bn, [grid.sparsity_size], reason, "sparsity",
                                           density, tick)
                        continue
                    cell = cellmod.run_cell(bn, system, size=grid.sparsity_size, reps=grid.reps,
                                            warmup=grid.warmup, timeout=grid.cell_timeout_s,
                                            density=density, section="sparsity")
                    cells.append(cell)
                    tick(cell)
    return {"cells": cells, "networks": networks}


SECTION_RUNNERS: Dict[str, Callable] = {
    "allreduce": run_allreduce,
    "sparsity": run_sparsity,
}


def run(grid: Grid, argv: List[str], progress: bool = True) -> dict:
    """Run the grid's sections; return the result document (see docs/benchmarks.md)."""
    grid.validate()
    started = time.time()
    doc = {
        "schema": SCHEMA,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python -m bench", *argv]),
        "mode": grid.mode,
        "machine": machine_info(),
        "grid": grid.as_dict(),
        "sections": {},
    }
    from bench import extra_sections
    runners = dict(SECTION_RUNNERS, **extra_sections.RUNNERS)
    for section in grid.sections:
        t0 = time.time()
        try:
            result = runners[section](grid, progress)
        except Exception as exc:  # one broken section must not lose the others' numbers
            result = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
        result.setdefault("status", "ok")
        result["elapsed_s"] = round(time.time() - t0, 2)
        doc["sections"][section] = result
    doc["elapsed_s"] = round(time.time() - started, 2)
    return doc
