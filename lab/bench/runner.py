"""A whole benchmark run: every section of the grid, with progress, into one result document."""
from __future__ import annotations

import datetime
import os
import sys
import time
from typing import Any

from lab.bench import aggregation_program as progmod
from lab.bench import cells as cellmod
from lab.bench import extra_sections, training
from lab.bench.grid import JUMBO_DEFINES, Grid
from lab.bench.links import LINKS
from lab.bench.machine import machine_info
from lab.bench.star_topology import BenchNet
from lab.bench.systems import SYSTEMS
from p4reduce.p4src.build import ProgramBuildError

SCHEMA = "p4reduce-bench/1"
MININET_SECTIONS = ("allreduce", "jumbo", "sparsity", "loss", "training")


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


def _skip_all(system, bn, sizes, reason, section, density, tick) -> list[dict]:
    out = []
    for size in sizes:
        cell = {"section": section, "system": system.name, "workers": len(bn.workers), "size": size,
                "density": density, "link": bn.link.name, "switch": bn.switch_kind,
                "status": "skipped", "error": reason}
        out.append(cell)
        tick(cell)
    return out


def _network_plan(grid: Grid) -> list[tuple]:
    """(workers, link, program) networks to build, each used by every Mininet section that needs
    it; the jumbo section's run its own program (grid.jumbo_program)."""
    plan = []
    if "allreduce" in grid.sections:
        plan += [(w, l, grid.program) for w in grid.workers for l in grid.links]
    if "jumbo" in grid.sections:
        plan += [(w, l, grid.jumbo_program) for w in grid.jumbo_workers for l in grid.jumbo_links]
    if "sparsity" in grid.sections:
        plan += [(grid.sparsity_workers, l, grid.program) for l in grid.sparsity_links]
    if "loss" in grid.sections:
        plan += [(grid.loss_workers, l, grid.program) for l in grid.loss_links]
    if "training" in grid.sections:
        plan += [(w, l, grid.program) for w in grid.training_workers for l in grid.training_links]
    return list(dict.fromkeys(plan))


def _systems_cells(bn: BenchNet, grid: Grid, section: str, systems: tuple[str, ...], sizes: tuple[int, ...],
                   out: dict[str, dict], tick) -> None:
    """Each system at each size on this network: the allreduce comparison's cells."""
    out[section]["networks"].append(bn.describe())
    for name in systems:
        system = SYSTEMS[name]
        reason = system.unavailable_reason(bn)
        if reason:
            out[section]["cells"] += _skip_all(system, bn, sizes, reason, section, system.density, tick)
            continue
        out[section]["cells"] += cellmod.run_sizes(
            bn, system, sizes, reps=grid.reps, warmup=grid.warmup, budget=grid.cell_budget_s,
            timeout=grid.cell_timeout_s, density=system.density, section=section, tick=tick)


def _cells_on_network(bn: BenchNet, grid: Grid, out: dict[str, dict], tick) -> None:
    """Every cell that runs on this (workers, link, program) network."""
    workers, link = len(bn.workers), bn.link.name
    if "jumbo" in out and str(bn.program) == grid.jumbo_program:
        if workers in grid.jumbo_workers and link in grid.jumbo_links:
            _systems_cells(bn, grid, "jumbo", grid.jumbo_systems, grid.jumbo_sizes, out, tick)
        return
    if "allreduce" in out and workers in grid.workers and link in grid.links:
        _systems_cells(bn, grid, "allreduce", grid.systems, grid.sizes, out, tick)
    if "sparsity" in out and workers == grid.sparsity_workers and link in grid.sparsity_links:
        out["sparsity"]["networks"].append(bn.describe())
        p4reduce = SYSTEMS["p4reduce"]
        reason = p4reduce.unavailable_reason(bn)
        for density in sorted(grid.densities, reverse=True):
            if reason:
                out["sparsity"]["cells"] += _skip_all(p4reduce, bn, [grid.sparsity_size], reason,
                                                      "sparsity", density, tick)
                continue
            cell = cellmod.run_cell(bn, p4reduce, size=grid.sparsity_size, reps=grid.reps,
                                    warmup=grid.warmup, timeout=grid.cell_timeout_s,
                                    density=density, section="sparsity")
            out["sparsity"]["cells"].append(cell)
            tick(cell)
    if "training" in out and workers in grid.training_workers and link in grid.training_links:
        out["training"]["networks"].append(bn.describe())
        out["training"]["cells"] += training.run(bn, grid.training_models, grid.training_systems,
                                                 grid.training_iterations, grid.training_timeout_s, tick)
    if "loss" in out and workers == grid.loss_workers and link in grid.loss_links:
        out["loss"]["networks"].append(bn.describe())
        p4reduce = SYSTEMS["p4reduce"]
        reason = p4reduce.unavailable_reason(bn)
        if reason:
            out["loss"]["cells"] += _skip_all(p4reduce, bn, [grid.loss_size], reason, "loss", 1.0, tick)
        else:
            cell = cellmod.run_cell(bn, p4reduce, size=grid.loss_size, reps=grid.reps, warmup=grid.warmup,
                                    timeout=grid.cell_timeout_s, section="loss")
            out["loss"]["cells"].append(cell)
            tick(cell)


def build_jumbo_program(grid: Grid) -> str | None:
    """Build the jumbo section's program unless the grid names one; returns why it failed."""
    if "jumbo" not in grid.sections or grid.jumbo_program:
        return None
    try:
        grid.jumbo_program = str(progmod.build(progmod.JUMBO_DIR, JUMBO_DEFINES))
    except ProgramBuildError as exc:
        return f"the jumbo program ({' '.join(JUMBO_DEFINES)}) did not build: {exc}"
    return None


def run_mininet_sections(grid: Grid, progress: bool, jumbo_error: str | None = None) -> dict[str, dict]:
    """p4reduce dense vs the baselines (allreduce, and jumbo on jumbo-frame links with the program
    built for them), p4reduce sparse vs dense (sparsity), loss and training.

    One network per (workers, link, program) serves every section that needs it, so each starts
    the P4 switch and the controller once.
    """
    out: dict[str, dict[str, Any]] = {s: {"cells": [], "networks": []} for s in MININET_SECTIONS
                                      if s in grid.sections}
    total = 0
    if "allreduce" in out:
        total += len(grid.workers) * len(grid.links) * len(grid.systems) * len(grid.sizes)
    if "jumbo" in out:
        total += len(grid.jumbo_workers) * len(grid.jumbo_links) * len(grid.jumbo_systems) * len(grid.jumbo_sizes)
        if not grid.jumbo_program:
            out["jumbo"]["errors"] = [jumbo_error or "no jumbo program"]
    if "sparsity" in out:
        total += len(grid.sparsity_links) * len(grid.densities)
    if "loss" in out:
        total += len(grid.loss_links)
    if "training" in out:
        total += (len(grid.training_workers) * len(grid.training_links) * len(grid.training_models)
                  * len(grid.training_systems))
    try:
        with _progress(total, "benchmarks", progress) as bar:
            tick = _tick(bar)
            for workers, link, program in _network_plan(grid):
                if not program:     # the jumbo program did not build: its cells cannot run
                    continue
                try:
                    bn_cm = BenchNet(workers, LINKS[link], grid.switch, program)
                    bn = bn_cm.__enter__()
                except Exception as exc:  # the network itself failed: every cell it would serve fails
                    err = f"network ({workers} workers, {link}) did not start: {type(exc).__name__}: {exc}"
                    for section in out:
                        out[section].setdefault("errors", []).append(err)
                    continue
                try:
                    _cells_on_network(bn, grid, out, tick)
                finally:
                    bn_cm.__exit__(None, None, None)
    except KeyboardInterrupt:  # networks are already stopped by the finally blocks
        for result in out.values():
            result["status"] = "interrupted"
            result["error"] = "interrupted by the user (Ctrl-C); cells so far are kept"
    if "training" in out:
        training.compare_to_baseline(out["training"]["cells"])
        out["training"]["targets"] = training.targets(out["training"]["cells"])
        out["training"]["iterations"] = dict(grid.training_iterations)
    for result in out.values():
        if result.get("errors") and result.get("status") != "interrupted":
            result["status"] = "failed"
            result["error"] = "; ".join(result["errors"])
    return out




def run(grid: Grid, argv: list[str], progress: bool = True) -> dict:
    """Run the grid's sections; return the result document (see docs/benchmarks.md)."""
    grid.validate()
    started = time.time()
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python -m lab.bench", *argv]),
        "mode": grid.mode,
        "machine": machine_info(),
        "grid": grid.as_dict(),
        "sections": {},
    }
    mininet = [s for s in grid.sections if s in MININET_SECTIONS]
    jumbo_error = build_jumbo_program(grid)
    doc["grid"] = grid.as_dict()        # with the jumbo program's path
    if mininet:
        t0 = time.time()
        try:
            results = run_mininet_sections(grid, progress, jumbo_error)
        except Exception as exc:
            results = {s: {"status": "failed", "error": f"{type(exc).__name__}: {exc}", "cells": []}
                       for s in mininet}
        for section, result in results.items():
            result.setdefault("status", "ok")
            result["elapsed_s"] = round(time.time() - t0, 2)  # shared networks: shared time
            doc["sections"][section] = result
    interrupted = any(r.get("status") == "interrupted" for r in doc["sections"].values())
    for section in grid.sections:
        if section in MININET_SECTIONS:
            continue
        if interrupted:
            doc["sections"][section] = {"status": "skipped", "error": "run interrupted"}
            continue
        t0 = time.time()
        try:
            result = extra_sections.RUNNERS[section](grid, progress)
        except KeyboardInterrupt:
            result = {"status": "interrupted", "error": "interrupted by the user (Ctrl-C)"}
            interrupted = True
        except Exception as exc:
            result = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
        result.setdefault("status", "ok")
        result["elapsed_s"] = round(time.time() - t0, 2)
        doc["sections"][section] = result
    doc["elapsed_s"] = round(time.time() - started, 2)
    # the machine is shared: the load at the end sits next to the load at the start (machine)
    doc["loadavg_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    return doc
