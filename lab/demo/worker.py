"""The per-host side of `make demo`: one worker agent that reports progress as JSON lines.

    python -m lab.demo.worker dense|sparse|train --controller 127.0.0.1:8090 --job NAME \
        --workers 4 --advertise-ip 10.0.0.1 [--elements N --tensors K --density D --pause S] [--epochs E]

dense/sparse: allreduce K generated int32 tensors through the switch and compare every sum with
numpy's integer sum of all ranks' tensors (each rank can rebuild every rank's tensor from the seed).
`--pause S` sleeps S seconds between the timed calls: a training step's compute between its
allreduces (bench/faults.py uses it so that a run lasts a wall time, not just a number of calls);
the calls' times and starts do not include it.
train: data-parallel SGD on the digits data set, gradients averaged through the switch.
Events: {"event": "progress", "message": ...} per step, {"event": "result", ...} at the end,
{"event": "error", "message": ...} on failure (exit status 1).
"""
import argparse
import hashlib
import json
import sys
import time
from typing import Any

import numpy as np

from lab.training.data import Split, load_digits_split
from lab.training.loop import TrainConfig, train_worker
from p4reduce.protocol import constants as C
from p4reduce.worker.agent import Agent
from p4reduce.worker.wirecost import FRAME_OVERHEAD


def emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def demo_tensor(seed: int, rank: int, index: int, elements: int, density: float, lanes: int) -> np.ndarray:
    """Gradient-like int32 tensor; with density < 1 only that fraction of its packet-sized blocks
    (`lanes` elements, the switch's layout) is non-zero (as in embedding-table gradients, where
    few rows are touched per step)."""
    rng = np.random.default_rng([seed, rank, index])
    x = rng.integers(-2**20, 2**20, elements, dtype=np.int32)
    if density < 1.0:
        n_blocks = -(-elements // lanes)
        keep = np.repeat(rng.random(n_blocks) < density, lanes)[:elements]
        x[~keep] = 0
    return x


def dense_bytes(elements: int, tensors: int, lanes: int) -> int:
    """What dense (SwitchML) streaming puts on the wire for these tensors."""
    blocks = -(-elements // lanes)
    return tensors * blocks * (FRAME_OVERHEAD + C.LANE_BYTES * lanes)


def run_allreduce(agent: Agent, args: argparse.Namespace, density: float) -> dict[str, Any]:
    """One untimed warm-up call (it also waits for every worker), then `tensors` timed calls into
    preallocated result rows, back to back as gloo's baseline is measured (demo.ring_command), or
    `args.pause` seconds apart (a step's compute; `allreduce_s` and `call_starts` are the calls'
    own); every sum is checked against numpy only after the last timed call, so no worker's check
    runs inside its peers' timed calls."""
    n, rank, lanes = agent.n_workers, agent.rank, agent.params.lanes
    mine = [demo_tensor(args.seed, rank, i, args.elements, density, lanes) for i in range(args.tensors)]
    results = np.empty((args.tensors, args.elements), np.int32)
    agent.allreduce(mine[0], out=results[0])                  # warm-up, not timed
    emit(event="progress", message="warm-up call done")
    warm = agent.reducer.stats
    bytes0, packets0, retx0 = agent.reducer.bytes_sent, warm.packets_sent, warm.retransmissions
    times, starts = [], []
    for i in range(args.tensors):
        starts.append(time.time())
        t0 = time.perf_counter()
        agent.allreduce(mine[i], out=results[i])
        times.append(time.perf_counter() - t0)
        emit(event="progress", message=f"tensor {i + 1}/{args.tensors}: {1e3 * times[-1]:.1f} ms")
        if args.pause and i + 1 < args.tensors:
            time.sleep(args.pause)      # the step's compute, outside the timed call
    exact = True
    for i in range(args.tensors):
        want = np.sum([demo_tensor(args.seed, r, i, args.elements, density, lanes).astype(np.int64)
                       for r in range(n)], axis=0)
        exact &= bool(np.array_equal(results[i].astype(np.int64), want))
    stats = agent.reducer.stats          # the timed calls' own bytes and packets
    return {"tensors": args.tensors, "elements": args.elements, "exact": exact, "warmup": 1,
            "bytes_sent": agent.reducer.bytes_sent - bytes0,
            "bytes_dense": dense_bytes(args.elements, args.tensors, lanes),
            "packets_sent": stats.packets_sent - packets0, "retransmissions": stats.retransmissions - retx0,
            "lanes": lanes, "subblock": agent.params.subblock, "slots": agent.params.slot_count,
            "allreduce_s": times, "call_starts": starts, "calls_by_path": dict(agent.calls_by_path), "path": agent.path,
            "fallback_episodes": agent.episodes}


def run_training(agent: Agent, args: argparse.Namespace) -> dict[str, Any]:
    cfg = TrainConfig(model=args.model, epochs=args.epochs)
    split = load_digits_split()
    n = agent.n_workers
    steps = min(len(range(r, split.x_train.shape[0], n)) for r in range(n)) // cfg.batch
    calls = [0]

    def allreduce(grad: np.ndarray, key: str) -> np.ndarray:
        mean = agent.allreduce(grad, average=True, key=key)
        calls[0] += 1
        if steps and calls[0] % steps == 0:
            emit(event="progress", message=f"epoch {calls[0] // steps}/{args.epochs}")
        return mean

    hist = train_worker(agent.rank, n, split, cfg, allreduce)
    assert hist.params is not None
    return {"model": args.model, "epochs": args.epochs, "samples": int(split.shard(agent.rank, n)[1].size),
            "parameters": int(hist.params.size), "accuracy": hist.final_acc,
            "reference_accuracy": _reference_accuracy(split, args),
            "weights_digest": hashlib.sha256(np.ascontiguousarray(hist.params).tobytes()).hexdigest(),
            "bytes_sent": agent.reducer.bytes_sent}


def _reference_accuracy(split: Split, args: argparse.Namespace) -> float:
    cfg = TrainConfig(model=args.model, epochs=args.epochs)
    return train_worker(0, 1, split, cfg, lambda g, key: g).final_acc


MAX_PAUSE_S = 60.0


def pause_seconds(text: str) -> float:
    """--pause's value: seconds, 0..60 (argparse names the option in its error)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number of seconds") from None
    if not 0 <= value <= MAX_PAUSE_S:      # NaN fails this too
        raise argparse.ArgumentTypeError(f"{text}: must be 0..{MAX_PAUSE_S:g} seconds")
    return value


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.demo.worker")
    p.add_argument("kind", choices=["dense", "sparse", "train"])
    p.add_argument("--controller", required=True)
    p.add_argument("--job", required=True)
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--advertise-ip", default=None)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--elements", type=int, default=65536)
    p.add_argument("--tensors", type=int, default=2)
    p.add_argument("--density", type=float, default=0.05)
    p.add_argument("--pause", type=pause_seconds, default=0.0, metavar="SECONDS",
                   help="dense/sparse: sleep this long between timed calls, standing for a training step's "
                        "compute between allreduces; not part of the calls' times (0..60, default 0)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--model", default="logreg")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    try:
        mode = "sparse" if args.kind == "sparse" else "dense"
        t0 = time.perf_counter()
        with Agent(args.controller, args.job, advertise_ip=args.advertise_ip, workers=args.workers,
                   mode=mode, wait_timeout=min(args.timeout, 120)) as agent:
            emit(event="progress", message=f"joined as rank {agent.rank}")
            if args.kind == "train":
                result = run_training(agent, args)
            else:
                result = run_allreduce(agent, args, 1.0 if args.kind == "dense" else args.density)
            result.update(rank=agent.rank, seconds=round(time.perf_counter() - t0, 3))
        emit(event="result", **result)
        return 0
    except Exception as err:   # reported as an event: the demo shows it per host
        emit(event="error", message=f"{type(err).__name__}: {err}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
