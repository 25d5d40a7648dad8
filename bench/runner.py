"""A whole benchmark run: every section of the grid, with progress, into one result document."""
from __future__ import annotations

import datetime
import os
import sys
import time
from typing import Any

from p4reduce.bench import cells as cellmod
from p4reduce.bench import extra_sections, training
from p4reduce.bench.grid import Grid
from p4reduce.bench.links import LINKS
from p4reduce.bench.machine import machine_info
from p4reduce.bench.systems import SYSTEMS
from p4reduce.bench.topology import BenchNet

SCHEMA = "p4reduce-bench/1"
MININET_SECTIONS = ("allreduce", "sparsity", "loss", "training")


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
    """(workers, link) networks to build, each used by every Mininet section that needs it."""
    plan = []
    if "allreduce" in grid.sections:
        plan += [(w, l) for w in grid.workers for l in grid.links]
    if "sparsity" in grid.sections:
        plan += [(grid.sparsity_workers, l) for l in grid.sparsity_links]
    if "loss" in grid.sections:
        plan += [(grid.loss_workers, l) for l in grid.loss_links]
    if "training" in grid.sections:
        plan += [(grid.training_workers, "unshaped")]
    return list(dict.fromkeys(plan))


def _cells_on_network(bn: BenchNet, grid: Grid, out: dict[str, dict], tick) -> None:
    """Every allreduce and sparsity cell that runs on this (workers, link) network."""
    workers, link = len(bn.workers), bn.link.name
    if "allreduce" in out and workers in grid.workers and link in grid.links:
        out["allreduce"]["networks"].append(bn.describe())
        for name in grid.systems:
            system = SYSTEMS[name]
            reason = system.unavailable_reason(bn)
            if reason:
                out["allreduce"]["cells"] += _skip_all(system, bn, grid.sizes, reason, "allreduce",
                                                       system.density, tick)
                continue
            out["allreduce"]["cells"] += cellmod.run_sizes(
                bn, system, grid.sizes, reps=grid.reps, warmup=grid.warmup,
                budget=grid.cell_budget_s, timeout=grid.cell_timeout_s, density=system.density, tick=tick)
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
    if "training" in out and workers == grid.training_workers and link == "unshaped":
        out["training"]["networks"].append(bn.describe())
        for cell in training.run(bn, grid.training_epochs, grid.cell_timeout_s):
            cell.update(section="training", workers=workers, link=link, size=cell.get("parameters", 0),
                        density=1.0)
            out["training"]["cells"].append(cell)
            tick(cell)
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


def run_mininet_sections(grid: Grid, progress: bool) -> dict[str, dict]:
    """p4reduce dense vs the baselines (allreduce) and p4reduce sparse vs dense (sparsity).

    One network per (workers, link) pair serves both sections, so each pair starts the P4
    switch and the controller once.
    """
    out: dict[str, dict[str, Any]] = {s: {"cells": [], "networks": []} for s in MININET_SECTIONS
                                      if s in grid.sections}
    total = 0
    if "allreduce" in out:
        total += len(grid.workers) * len(grid.links) * len(grid.systems) * len(grid.sizes)
    if "sparsity" in out:
        total += len(grid.sparsity_links) * len(grid.densities)
    if "loss" in out:
        total += len(grid.loss_links)
    if "training" in out:
        total += len(training.SYSTEMS_TRAINED)
    try:
        with _progress(total, "benchmarks", progress) as bar:
            tick = _tick(bar)
            for workers, link in _network_plan(grid):
                try:
                    bn_cm = BenchNet(workers, LINKS[link], grid.switch, grid.program)
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
        "command": " ".join(["python -m p4reduce.bench", *argv]),
        "mode": grid.mode,
        "machine": machine_info(),
        "grid": grid.as_dict(),
        "sections": {},
    }
    mininet = [s for s in grid.sections if s in MININET_SECTIONS]
    if mininet:
        t0 = time.time()
        try:
            results = run_mininet_sections(grid, progress)
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
