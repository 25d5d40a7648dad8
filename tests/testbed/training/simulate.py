"""Run the data-parallel demo on N threads around the in-process simulated switch.

    python -m testbed.training.simulate --model mlp --compressor 3lc     # 4 threads, no network
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from lab.training.data import Split, load_digits_split
from lab.training.loop import History, TrainConfig, train_worker
from p4reduce.protocol import constants as C
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.compressors import COMPRESSORS, make_compressor
from p4reduce.worker.memory import ErrorFeedback, NoMemory
from p4reduce.worker.wirecost import WireCost
from testbed.simswitch import FloatReference, SimulatedReducer, run_workers

#: compressor options used in the convergence table (docs/worker.md)
DEFAULT_OPTIONS = {"topk": {"k": 0.1}, "randomk": {"k": 0.1}, "threshold": {"threshold": 0.3}}


def run_simulated(compressor: str, cfg: TrainConfig, n_workers: int = 4, split: Split | None = None,
                  sparse: bool = True, error_feedback: bool | None = None, **options) -> dict:
    """Train with ``compressor`` ("float32" = exact float allreduce) -> dict with the history of
    rank 0, bytes sent per worker (mean over ranks), wall seconds and whether replicas agree."""
    split = split or load_digits_split(seed=cfg.seed)
    opts = {**DEFAULT_OPTIONS.get(compressor, {}), **options}

    def body(reducer: SimulatedReducer) -> tuple[History, int]:
        comm: FloatReference | Communicator
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
    out = run_workers(n_workers, body, WireCost(C.LANES, C.SUBBLOCK, sparse=sparse))   # the default build's layout
    seconds = time.perf_counter() - t0
    hists: list[History] = [h for h, _ in out]
    first = hists[0].params
    same = first is not None and all(h.params is not None and np.array_equal(h.params, first) for h in hists)
    return {"compressor": compressor, "model": cfg.model, "history": hists[0],
            "bytes_per_worker": sum(b for _, b in out) / n_workers, "seconds": seconds,
            "replicas_identical": same, "final_acc": hists[0].final_acc}


def main(argv: list[str] | None = None) -> int:
    """Train once with N threads around the simulated switch; print a JSON summary."""
    ap = argparse.ArgumentParser(prog="python -m testbed.training.simulate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--compressor", default="fixedpoint", choices=["float32", *sorted(COMPRESSORS)])
    ap.add_argument("--model", choices=["logreg", "mlp"], default="logreg")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--lr", type=float, default=0.03)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args(argv)
    for name in ("workers", "epochs", "lr", "batch"):
        if getattr(args, name) <= 0:
            ap.error(f"--{name} must be > 0, got {getattr(args, name)}")
    cfg = TrainConfig(model=args.model, epochs=args.epochs, lr=args.lr, batch=args.batch)
    r = run_simulated(args.compressor, cfg, args.workers)
    print(json.dumps({"model": args.model, "compressor": args.compressor, "final_test_acc": round(r["final_acc"], 4),
                      "bytes_per_worker": int(r["bytes_per_worker"]), "seconds": round(r["seconds"], 2),
                      "replicas_identical": r["replicas_identical"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
