"""Run the data-parallel demo on N threads around the in-process simulated switch."""
from __future__ import annotations

import time

from ..communicator import Communicator
from ..compressors import make_compressor
from ..memory import ErrorFeedback, NoMemory
from ..simswitch import FloatReference, run_workers
from ..wirecost import WireCost
from .data import Split, load_digits_split
from .loop import History, TrainConfig, train_worker

#: compressor options used in the convergence table (docs/worker.md)
DEFAULT_OPTIONS = {"topk": {"k": 0.1}, "randomk": {"k": 0.1}, "threshold": {"threshold": 0.3}}


def run_simulated(compressor: str, cfg: TrainConfig, n_workers: int = 4, split: Split | None = None,
                  sparse: bool = True, error_feedback: bool | None = None, **options) -> dict:
    """Train with ``compressor`` ("float32" = exact float allreduce) -> dict with the history of
    rank 0, bytes sent per worker (mean over ranks), wall seconds and whether replicas agree."""
    split = split or load_digits_split(seed=cfg.seed)
    opts = {**DEFAULT_OPTIONS.get(compressor, {}), **options}

    def body(reducer):
        if compressor == "float32":
            comm = FloatReference(reducer)
        else:
            comp, ef = make_compressor(compressor, seed=cfg.seed, rank=reducer.rank, **opts)
            use_ef = ef if error_feedback is None else error_feedback
            comm = Communicator(reducer, comp, ErrorFeedback() if use_ef else NoMemory())
        hist = train_worker(reducer.rank, n_workers, split, cfg,
                            lambda g, key: comm.allreduce(g, average=True, key=key))
        return hist, reducer.bytes_sent

    t0 = time.perf_counter()
    out = run_workers(n_workers, body, wire=WireCost(sparse=sparse))
    seconds = time.perf_counter() - t0
    hists: list[History] = [h for h, _ in out]
    same = all((h.params == hists[0].params).all() for h in hists)
    return {"compressor": compressor, "model": cfg.model, "history": hists[0],
            "bytes_per_worker": sum(b for _, b in out) / n_workers, "seconds": seconds,
            "replicas_identical": same, "final_acc": hists[0].final_acc}
