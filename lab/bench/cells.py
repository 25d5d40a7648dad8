"""Run one benchmark cell (a system at one size on one network) and grids of cells.

Shared by the dense allreduce comparison and the sparsity sweep. A cell that fails is recorded
with its error and the run goes on; a cell predicted to exceed the time budget (from the previous,
smaller size of the same system) is skipped and says so.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from lab.bench import aggregate, bounds, hostrun, interface_counters
from lab.bench.star_topology import BenchNet
from lab.bench.systems import System

BYTES_PER_ELEMENT = 4  # float32 / int32 tensors


def run_cell(bn: BenchNet, system: System, *, size: int, reps: int, warmup: int,
             timeout: float, density: float = 1.0, section: str = "allreduce") -> dict:
    """Run `system` on `bn` and return the cell's summary (or its error)."""
    base = {"section": section, "system": system.name, "workers": len(bn.workers), "size": size,
            "density": density, "link": bn.link.name, "link_applied": bn.link.applied(),
            "switch": bn.switch_kind}
    ports = [bn.switch_iface(h) for h in bn.workers]
    try:
        jobs = system.jobs(bn, size, reps, warmup, density)
        before = [interface_counters.read_sysfs(p) for p in ports]
        records = hostrun.run_jobs(jobs, timeout=timeout, start_delay=0.3)
        after = [interface_counters.read_sysfs(p) for p in ports]
    except (hostrun.HostRunError, interface_counters.CounterError, NotImplementedError, OSError) as exc:
        return {**base, "status": "failed", "error": str(exc)}
    # Cross-check from the other end of each worker's link, via /sys/class/net in the root
    # namespace: the switch port's counters over the whole cell (setup, warm-up and the timed loop).
    base["switch_port_cell_totals"] = {
        "ports": ports,
        "rx_bytes": [(a - b).rx_bytes for a, b in zip(after, before)],
        "tx_bytes": [(a - b).tx_bytes for a, b in zip(after, before)]}
    workers = [r for r in records if r.get("role") != "server"]
    servers = [r for r in records if r.get("role") == "server"]
    try:
        summary = aggregate.aggregate_cell(workers, tensor_bytes=size * BYTES_PER_ELEMENT,
                                           server=servers[0] if servers else None)
    except aggregate.AggregationError as exc:
        return {**base, "status": "failed", "error": f"bad worker records: {exc}"}
    add_link_bound(summary, system.name, bn.link.bw_mbps, size, density,
                   lanes=workers[0].get("block") if workers else None)
    if summary["verified"]:
        return {**base, "status": "ok", **summary}
    first = summary.get("first_mismatches", [{}])[0]
    error = (f"{summary['mismatches']} elements (all workers) differ from the exact sum; "
             f"rank {first.get('rank')} at {first.get('index')}: got {first.get('got')}, "
             f"expected {first.get('expected')}")
    return {**base, "status": "wrong-result", "error": error, **summary}


def add_link_bound(summary: dict, system: str, bw_mbps: float | None, size: int, density: float,
                   lanes: int | None) -> None:
    """On a shaped link: the link-rate bound (bench/bounds.py) and the cell's time over it."""
    if not bw_mbps or "time_s" not in summary:
        return
    kwargs = {"lanes": lanes} if lanes else {}
    bound = bounds.link_bound_s(system, summary["workers"], size, bw_mbps, density=density, **kwargs)
    summary["link_bound_s"] = bound
    summary["time_over_link_bound"] = summary["time_s"]["median"] / bound


def predicted_seconds(prev_cell: dict | None, size: int, reps: int, warmup: int) -> float | None:
    """Linear extrapolation of a cell's run time from the same system's previous size."""
    if not prev_cell or prev_cell.get("status") != "ok":
        return None
    per_element = prev_cell["time_s"]["median"] / prev_cell["size"]
    return per_element * size * (reps + warmup)


def run_sizes(bn: BenchNet, system: System, sizes: Iterable[int], *, reps: int, warmup: int, budget: float,
              timeout: float, density: float = 1.0, section: str = "allreduce",
              tick: Callable[[dict], None] = lambda cell: None) -> list[dict]:
    """Cells of `system` over increasing `sizes`, skipping those predicted over `budget` s."""
    cells, prev = [], None
    for size in sorted(sizes):
        guess = predicted_seconds(prev, size, reps, warmup)
        if guess is not None and guess > budget:
            cell = {"section": section, "system": system.name, "workers": len(bn.workers),
                    "size": size, "density": density, "link": bn.link.name,
                    "switch": bn.switch_kind, "status": "skipped",
                    "error": f"predicted {guess:.0f}s > budget {budget:.0f}s (raise --budget)"}
        else:
            cell = run_cell(bn, system, size=size, reps=reps, warmup=warmup, timeout=timeout,
                            density=density, section=section)
            prev = cell
        cells.append(cell)
        tick(cell)
    return cells
