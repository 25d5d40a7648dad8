"""Turn the per-worker records of one benchmark cell into the figures we report.

Time per allreduce: for each repetition the slowest worker's time (the allreduce is done when the
last worker has its result), then median, mean, min and max over repetitions. Bytes on the wire
per worker and per allreduce: each worker's counter delta over the timed loop divided by the
number of repetitions, then mean and max over workers.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable


class AggregationError(ValueError):
    """The records of one cell are inconsistent (missing fields, different rep counts, ...)."""


REQUIRED = ("rank", "times_s", "counters", "verified", "reps")


def _check(records: list[dict]) -> None:
    if not records:
        raise AggregationError("no worker records")
    for rec in records:
        missing = [k for k in REQUIRED if k not in rec]
        if missing:
            raise AggregationError(f"worker record (rank {rec.get('rank', '?')}) lacks {', '.join(missing)}")
    reps = {len(r["times_s"]) for r in records}
    if len(reps) != 1:
        raise AggregationError(f"workers ran different repetition counts: {sorted(reps)}")
    ranks = sorted(r["rank"] for r in records)
    if ranks != list(range(len(records))):
        raise AggregationError(f"ranks are not 0..{len(records) - 1}: {ranks}")


def time_stats(samples: Iterable[float]) -> dict:
    values = sorted(samples)
    if not values:
        raise AggregationError("no time samples")
    return {"median": statistics.median(values), "mean": statistics.fmean(values),
            "min": values[0], "max": values[-1], "samples": values}


def per_rep_completion(records: list[dict]) -> list[float]:
    """For each repetition, the slowest worker's time."""
    return [max(times) for times in zip(*(r["times_s"] for r in records))]


def _bytes_stats(records: list[dict], field: str) -> dict:
    per_worker = [r["counters"][field] / r["reps"] for r in records]
    return {"mean": statistics.fmean(per_worker), "max": max(per_worker), "min": min(per_worker),
            "per_worker": per_worker}


def aggregate_cell(records: list[dict], *, tensor_bytes: int,
                   server: dict | None = None) -> dict:
    """Summary of one (system, workers, size, link) cell from its worker records."""
    records = sorted(records, key=lambda r: r.get("rank", -1))
    _check(records)
    completion = time_stats(per_rep_completion(records))
    reps = records[0]["reps"]
    tx = _bytes_stats(records, "tx_bytes")
    rx = _bytes_stats(records, "rx_bytes")
    out = {
        "workers": len(records),
        "reps": reps,
        "tensor_bytes": tensor_bytes,
        "time_s": completion,
        "throughput_gbps": tensor_bytes * 8 / completion["median"] / 1e9 if completion["median"] > 0 else None,
        "wire_tx_bytes_per_worker": tx,
        "wire_rx_bytes_per_worker": rx,
        "wire_bytes_per_worker": tx["mean"] + rx["mean"],
        "tx_over_tensor": tx["mean"] / tensor_bytes,
        "packets_tx_per_worker": statistics.fmean(r["counters"]["tx_packets"] / reps for r in records),
        "verified": all(r["verified"] for r in records),
        "mismatches": sum(r.get("mismatches", 0) for r in records),
    }
    if all("retransmissions" in r and r.get("packets_sent") for r in records):   # p4reduce's own counts
        sent = sum(r["packets_sent"] for r in records)
        out["retransmissions_per_worker"] = statistics.fmean(r["retransmissions"] for r in records)
        out["retransmitted_fraction"] = sum(r["retransmissions"] for r in records) / sent
        if all("fast_retransmissions" in r for r in records):
            out["fast_retransmitted_fraction"] = sum(r["fast_retransmissions"] for r in records) / sent
        if all("tail_probes" in r for r in records):
            out["tail_probes_per_worker"] = statistics.fmean(r["tail_probes"] for r in records)
        if all("timeouts_stall" in r for r in records):   # what the workers' timers took their timeouts for
            out["timeouts_per_worker"] = {
                kind: statistics.fmean(r[key] for r in records)
                for kind, key in (("congestion", "window_decreases"), ("loss", "timeouts_loss"),
                                  ("stall", "timeouts_stall"))}
        if all("results_per_wakeup" in r for r in records):   # how many results a worker takes per wakeup
            out["results_per_wakeup"] = round(statistics.fmean(r["results_per_wakeup"] for r in records), 2)
        loops = sorted({r["worker_loop"] for r in records if "worker_loop" in r})
        if loops:   # which implementation of the worker's loop ran (worker/native_loop.py)
            out["worker_loop"] = "+".join(loops)
    wrong = [{"rank": r["rank"], **r["first_mismatches"]} for r in records if r.get("first_mismatches")]
    if wrong:
        out["first_mismatches"] = wrong
    if server is not None:
        rounds = server.get("rounds") or 1
        out["server_wire_tx_bytes"] = server["counters"]["tx_bytes"] / rounds
        out["server_wire_rx_bytes"] = server["counters"]["rx_bytes"] / rounds
    return out


def speedup(baseline_s: float, candidate_s: float) -> float | None:
    """How many times faster the candidate is (None when either time is missing or zero)."""
    if not baseline_s or not candidate_s:
        return None
    return baseline_s / candidate_s
