"""The bench's `training` section: the same 1.1M-parameter model trained through the switch and
with gloo DDP on the same network (bench/train_worker.py runs in each worker host)."""
from __future__ import annotations

import statistics

from p4reduce.bench import hostrun
from p4reduce.bench.hostrun import HostJob
from p4reduce.bench.star_topology import BenchNet
from p4reduce.bench.systems import SYSTEMS, next_port

SYSTEMS_TRAINED = ("gloo", "p4reduce")


def jobs(bn: BenchNet, system: str, epochs: int) -> list[HostJob]:
    master = f"{bn.ip(bn.workers[0])}:{next_port()}"
    job = f"bench-train-{len(bn.workers)}w-{next_port()}"
    if system == "p4reduce":
        if bn.p4 is None or bn.p4.api_addr is None:
            raise ValueError("a p4reduce training run needs the bench network's p4reduce switch")
        # created through the controller and granted to the worker hosts: the relay adds its credential
        bn.p4.started().create_job(job, len(bn.workers), "dense", hosts=bn.workers)
    out = []
    for r, h in enumerate(bn.workers):
        argv = ["--system", system, "--rank", r, "--world", len(bn.workers), "--master", master,
                "--iface", bn.iface(h), "--epochs", epochs]
        if system == "p4reduce":
            assert bn.p4 is not None
            argv += ["--controller", bn.p4.api_addr, "--job", job, "--ip", bn.ip(h)]
        out.append(HostJob(h, "p4reduce.bench.train_worker", argv))
    return out


def summarize(system: str, records: list[dict]) -> dict:
    """Per-iteration times of the slowest worker's medians, accuracy and bytes per worker."""
    records = sorted(records, key=lambda r: r["rank"])
    accuracies = [r["accuracy"] for r in records]
    return {"system": system, "status": "ok", "workers": len(records), "parameters": records[0]["parameters"],
            "iterations": records[0]["iterations"], "epochs": records[0]["epochs"],
            "batch_per_worker": records[0]["batch_per_worker"],
            "iteration_s": max(r["iteration_s"] for r in records),
            "compute_s": max(r["compute_s"] for r in records),
            "communication_s": max(r["communication_s"] for r in records),
            "training_s": max(r["training_s"] for r in records),
            "accuracy": statistics.fmean(accuracies), "accuracy_per_worker": accuracies,
            "wire_tx_bytes_per_iteration": statistics.fmean(r["wire_tx_bytes"] / r["iterations"] for r in records),
            "retransmissions": sum(r.get("retransmissions", 0) for r in records)}


def run(bn: BenchNet, epochs: int, timeout: float) -> list[dict]:
    """Both systems on `bn`; a system that cannot run is recorded as skipped, a failure as failed."""
    cells = []
    for system in SYSTEMS_TRAINED:
        reason = SYSTEMS[system].unavailable_reason(bn)
        if reason:
            cells.append({"system": system, "status": "skipped", "error": reason})
            continue
        try:
            records = hostrun.run_jobs(jobs(bn, system, epochs), timeout=timeout, start_delay=0.3)
            cells.append(summarize(system, records))
        except (hostrun.HostRunError, KeyError, ValueError) as exc:
            cells.append({"system": system, "status": "failed", "error": str(exc)})
    return cells
