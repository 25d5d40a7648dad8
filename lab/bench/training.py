"""The bench's `training` section: "is my training faster?". Each model of bench/train_models.py is
trained on each network (workers x link setting) by every system of bench/train_worker.py: gloo
DDP as PyTorch ships it, DDP on p4reduce's torch.distributed backend, and DDP with p4reduce's comm
hook, with the same model, batches, data, seed and thread count. The cells carry the ratios to
gloo DDP on the same network, and the section the targets of issue 27 with met / not met."""
from __future__ import annotations

import statistics
from typing import Any

from lab.bench import hostrun
from lab.bench.hostrun import HostJob
from lab.bench.star_topology import BenchNet
from lab.bench.systems import SYSTEMS, next_port
from lab.bench.train_models import MODELS

SYSTEMS_TRAINED = ("gloo", "p4reduce", "p4reduce-hook")
BASELINE = "gloo"
SPARSE_MODELS = ("embedding",)          # trained on a sparse p4reduce job: zero blocks are skipped
# "final accuracy within noise of gloo's": the tolerance the report applies (one evaluation of one
# run each; the digits test set has 449 samples, so one sample is 0.22 points)
ACCURACY_NOISE = 0.02                   # absolute, accuracy
LOSS_NOISE = 0.05                       # relative, loss


def job_mode(model: str) -> str:
    return "sparse" if model in SPARSE_MODELS else "dense"


def jobs(bn: BenchNet, system: str, model: str, iterations: int, timeout: float) -> list[HostJob]:
    master = f"{bn.ip(bn.workers[0])}:{next_port()}"
    job = f"bench-train-{model}-{len(bn.workers)}w-{next_port()}"
    if system != "gloo":
        if bn.p4 is None or bn.p4.api_addr is None:
            raise ValueError("a p4reduce training run needs the bench network's p4reduce switch")
        # created through the controller and granted to the worker hosts: the relay adds its credential
        bn.p4.started().create_job(job, len(bn.workers), job_mode(model), hosts=bn.workers)
    out = []
    for r, h in enumerate(bn.workers):
        argv: list[object] = ["--system", system, "--model", model, "--rank", r, "--world", len(bn.workers),
                              "--master", master, "--iface", bn.iface(h), "--iterations", iterations,
                              "--timeout", timeout]
        if system != "gloo":
            assert bn.p4 is not None
            argv += ["--controller", bn.p4.api_addr, "--job", job, "--ip", bn.ip(h)]
        out.append(HostJob(h, "lab.bench.train_worker", argv))
    return out


def time_to_target(records: list[dict], model: str) -> tuple[float | None, int | None]:
    """(seconds of training, iterations) until the first evaluation that meets the model's target,
    on the slowest worker's clock; (None, None) when no evaluation met it. Replicas are identical,
    so every worker's curve has the same metric; rank 0's decides."""
    spec = MODELS[model]
    first = next((point for point in records[0]["curve"] if spec.met(point[2])), None)
    if first is None:
        return None, None
    done = int(first[0])
    seconds = max(next(p[1] for p in r["curve"] if int(p[0]) == done) for r in records)
    return seconds, done


def summarize(system: str, model: str, records: list[dict]) -> dict:
    """One cell: the slowest worker's medians, the metric, bytes per worker per iteration."""
    records = sorted(records, key=lambda r: r["rank"])
    spec = MODELS[model]
    finals = [r["final_metric"] for r in records]
    ttt, ttt_iterations = time_to_target(records, model)
    cell = {"system": system, "model": model, "status": "ok", "workers": len(records),
            "parameters": records[0]["parameters"], "iterations": records[0]["iterations"],
            "batch_per_worker": records[0]["batch_per_worker"], "metric": spec.metric,
            "target": spec.target, "target_text": spec.target_text(), "job_mode": None,
            "iteration_s": max(r["iteration_s"] for r in records),
            "compute_s": max(r["compute_s"] for r in records),
            "communication_s": max(r["communication_s"] for r in records),
            "training_s": max(r["training_s"] for r in records),
            "final_metric": statistics.fmean(finals), "final_metric_per_worker": finals,
            "replicas_agree": max(finals) - min(finals) <= 1e-6,
            "curve": records[0]["curve"],
            "time_to_target_s": ttt, "time_to_target_iterations": ttt_iterations,
            "wire_tx_bytes_per_iteration": statistics.fmean(r["wire_tx_bytes"] / r["iterations"] for r in records),
            "wire_rx_bytes_per_iteration": statistics.fmean(r["wire_rx_bytes"] / r["iterations"] for r in records),
            "backend": records[0].get("backend")}
    if spec.metric == "accuracy":
        cell["accuracy"] = cell["final_metric"]
    else:
        cell["loss"] = cell["final_metric"]
    if system != "gloo":
        cell["job_mode"] = records[0].get("job_mode", job_mode(model))
        cell["retransmissions"] = sum(r.get("retransmissions", 0) for r in records)
        cell["packets_sent_per_iteration"] = statistics.fmean(r.get("packets_sent", 0) / r["iterations"]
                                                              for r in records)
        if "allreduce_calls" in records[0]:
            cell["allreduce_calls"] = records[0]["allreduce_calls"]
    return cell


def compare_to_baseline(cells: list[dict]) -> None:
    """Each measured cell's ratios to gloo DDP on the same (workers, link, model): time per
    iteration, time to target, bytes; and whether its final metric is within noise of gloo's."""
    base = {(c["workers"], c["link"], c["model"]): c for c in cells
            if c["system"] == BASELINE and c["status"] == "ok"}
    for c in cells:
        ref = base.get((c.get("workers"), c.get("link"), c.get("model")))
        if c["status"] != "ok" or ref is None:
            continue
        c["iteration_over_gloo"] = c["iteration_s"] / ref["iteration_s"] if ref["iteration_s"] else None
        c["speedup_over_gloo"] = ref["iteration_s"] / c["iteration_s"] if c["iteration_s"] else None
        if c["time_to_target_s"] is not None and ref["time_to_target_s"]:
            c["time_to_target_over_gloo"] = c["time_to_target_s"] / ref["time_to_target_s"]
        c["bytes_over_gloo"] = (c["wire_tx_bytes_per_iteration"] / ref["wire_tx_bytes_per_iteration"]
                                if ref["wire_tx_bytes_per_iteration"] else None)
        c["metric_within_noise"] = metric_within_noise(c["metric"], c["final_metric"], ref["final_metric"])


def metric_within_noise(metric: str, value: float, gloo: float) -> bool:
    if metric == "accuracy":
        return abs(value - gloo) <= ACCURACY_NOISE
    return abs(value - gloo) <= LOSS_NOISE * abs(gloo)


def _find(cells: list[dict], **where: Any) -> list[dict]:
    return [c for c in cells if c["status"] == "ok" and all(c.get(k) == v for k, v in where.items())]


def targets(cells: list[dict]) -> list[dict]:
    """Issue 27's targets, for the backend's default path (system p4reduce): each with the cells it
    was judged on, the measured value and met True / False, or None when a cell it needs is missing."""
    out: list[dict] = []

    def judge(name: str, text: str, found: list[dict], key: str, ok: Any) -> None:
        values = [c.get(key) for c in found]
        if not found or any(v is None for v in values):
            out.append({"name": name, "text": text, "met": None, "values": [],
                        "why": "not measured (a cell it needs is missing or failed)"})
            return
        out.append({"name": name, "text": text, "met": all(ok(v) for v in values),
                    "values": [{"workers": c["workers"], "link": c["link"], "model": c["model"], key: v}
                               for c, v in zip(found, values)]})

    judge("mlp-4w-unshaped", "1.1M MLP, 4 workers, unshaped: time per iteration <= 0.8x gloo DDP",
          _find(cells, system="p4reduce", model="mlp", workers=4, link="unshaped"),
          "iteration_over_gloo", lambda v: v <= 0.8)
    judge("dense-8w-100mbit", "dense models, 8 workers, 100 Mbit/s: time per iteration <= 0.65x gloo DDP",
          [c for c in _find(cells, system="p4reduce", workers=8, link="100mbit-1ms")
           if c["model"] not in SPARSE_MODELS], "iteration_over_gloo", lambda v: v <= 0.65)
    judge("sparse-100mbit", "sparse-gradient model, 100 Mbit/s: >= 3x faster per iteration than gloo DDP",
          [c for c in _find(cells, system="p4reduce", link="100mbit-1ms") if c["model"] in SPARSE_MODELS],
          "speedup_over_gloo", lambda v: v >= 3.0)
    judge("final-metric", f"final accuracy within {ACCURACY_NOISE * 100:g} points of gloo's (loss within "
          f"{LOSS_NOISE * 100:g} %), every cell", _find(cells, system="p4reduce"),
          "metric_within_noise", bool)
    return out


def run(bn: BenchNet, models: tuple[str, ...], systems: tuple[str, ...], iterations: dict[str, int],
        timeout: float, tick: Any = None) -> list[dict]:
    """Every model with every system on `bn`; a system that cannot run is recorded as skipped,
    a failure as failed. Cells carry section, workers, link and switch; ratios come after
    (compare_to_baseline over the whole section)."""
    cells = []
    for model in models:
        for system in systems:
            base = {"section": "training", "system": system, "model": model, "workers": len(bn.workers),
                    "link": bn.link.name, "link_applied": bn.link.applied(), "switch": bn.switch_kind,
                    "size": MODELS_PARAMETERS[model], "density": 1.0, "iterations": iterations[model]}
            reason = SYSTEMS["p4reduce"].unavailable_reason(bn) if system != "gloo" else \
                SYSTEMS["gloo"].unavailable_reason(bn)
            if reason:
                cell = {**base, "status": "skipped", "error": reason}
            else:
                try:
                    records = hostrun.run_jobs(jobs(bn, system, model, iterations[model], timeout),
                                               timeout=timeout, start_delay=0.3)
                    cell = {**base, **summarize(system, model, records)}
                except (hostrun.HostRunError, KeyError, ValueError, IndexError) as exc:
                    cell = {**base, "status": "failed", "error": str(exc)}
            cells.append(cell)
            if tick is not None:
                tick(cell)
    return cells


def _parameters() -> dict[str, int]:
    from lab.bench.train_models import parameters
    return {m: parameters(m) for m in MODELS}


MODELS_PARAMETERS = _parameters()
