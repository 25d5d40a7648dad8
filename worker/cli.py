"""``python -m p4reduce.worker``: run a worker agent from the command line.

    python -m p4reduce.worker allreduce --controller 10.0.0.100:8090 --job demo --count 10 --size 100000 --check
    python -m p4reduce.worker train     --controller 10.0.0.100:8090 --job demo --model mlp --compressor topk
    python -m p4reduce.worker compressors                                        # list the compressors

Without a command (``python -m p4reduce.worker --controller C --job J ...``) it runs ``allreduce``.

``allreduce`` generates each rank's tensors from (seed, rank, index), so ``--check`` can verify the
switch's result bit-exactly for int32 (within the documented bound for float32) on every worker.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

import numpy as np

from . import quantize as qz
from .agent import Agent
from .compressors import COMPRESSORS, make_compressor
from .job import JobJoinError
from .quantize import QuantizationError
from .reducer import AggregationError
from .streaming import RetryPolicy
from .training.data import load_digits_split
from .training.loop import TrainConfig, train_worker


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def _positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if v <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return v
    return parse


def tensor_for(seed: int, rank: int, index: int, size: int, dtype: str) -> np.ndarray:
    """The deterministic test tensor of ``rank`` for call ``index`` (every rank can rebuild all)."""
    rng = np.random.default_rng([seed, rank, index])
    if dtype == "int32":
        return rng.integers(-2**20, 2**20, size, dtype=np.int32)
    return rng.standard_normal(size).astype(np.float32)


def _join_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("job")
    g.add_argument("--controller", required=True, help="controller job API address HOST[:PORT] (default port 8090)")
    g.add_argument("--job", required=True, help="job name (created on first join if the controller allows)")
    g.add_argument("--workers", type=_positive(int), help="number of workers, when this join creates the job")
    g.add_argument("--mode", choices=["dense", "sparse"], help="job mode, when this join creates the job")
    g.add_argument("--rank", type=int, help="ask for this rank (default: the controller picks)")
    g.add_argument("--bind", default="0.0.0.0", help="local IP for the UDP socket (default all)")
    g.add_argument("--port", type=int, default=0, help="local UDP port (default: any free port)")
    g.add_argument("--advertise-ip", help="IP the switch should send results to (default: as the controller sees us)")
    g.add_argument("--switch", type=_addr, help="send packets here instead of the job's switch address (HOST:PORT)")
    g.add_argument("--deadline", type=_positive(float),
                   help="seconds without progress before giving up (default: the job's lease)")
    g.add_argument("--wait", type=_positive(float), default=60.0, help="seconds to wait for all ranks to join")
    g.add_argument("--compressor", default="fixedpoint", choices=sorted(COMPRESSORS))


def _agent(args: argparse.Namespace) -> Agent:
    retry = RetryPolicy(deadline=args.deadline) if args.deadline else None
    return Agent(args.controller, args.job, compressor=args.compressor, bind_ip=args.bind, udp_port=args.port,
                 advertise_ip=args.advertise_ip, switch_addr=args.switch, retry=retry, rank=args.rank,
                 workers=args.workers, mode=args.mode, wait_timeout=args.wait)


def cmd_allreduce(args: argparse.Namespace) -> int:
    with _agent(args) as agent:
        n, r = agent.n_workers, agent.rank
        print(f"worker: joined job {args.job!r} as rank {r} of {n} (job id {agent.params.job_id}, "
              f"{'sparse' if agent.params.sparse else 'dense'}, {agent.params.slot_count} slots)", file=sys.stderr)
        t0 = time.perf_counter()
        bad = 0
        for i in range(args.count):
            x = tensor_for(args.seed, r, i, args.size, args.dtype)
            got = agent.allreduce(x)
            if args.check:
                xs = [tensor_for(args.seed, k, i, args.size, args.dtype) for k in range(n)]
                if args.dtype == "int32":
                    ok = np.array_equal(got, np.sum([v.astype(np.int64) for v in xs], axis=0))
                else:
                    exact = np.sum([v.astype(np.float64) for v in xs], axis=0)
                    exps = np.max([qz.propose_exponents(v, agent.params.lanes) for v in xs], axis=0)
                    bound = qz.error_bound(exps, n, agent.params.lanes, args.size) + np.abs(exact) * 2.0**-23
                    ok = args.compressor != "fixedpoint" or bool(np.all(np.abs(got - exact) <= bound))
                bad += not ok
        secs = time.perf_counter() - t0
        st = agent.reducer.stats
        report = {"rank": r, "workers": n, "tensors": args.count, "size": args.size, "dtype": args.dtype,
                  "seconds": round(secs, 3), "elements_per_s": round(args.count * args.size / secs),
                  "bytes_sent": agent.reducer.bytes_sent, "packets_sent": st.packets_sent,
                  "retransmissions": st.retransmissions, "ignored": st.ignored,
                  "rto_ms": round(agent.reducer.rto_estimator.rto * 1e3, 2),
                  "srtt_ms": None if agent.reducer.rto_estimator.srtt is None
                  else round(agent.reducer.rto_estimator.srtt * 1e3, 2)}
        if args.check:
            report["check"] = "ok" if not bad else f"{bad} of {args.count} tensors wrong"
        print(json.dumps(report))
        return 1 if bad else 0


def cmd_train(args: argparse.Namespace) -> int:
    cfg = TrainConfig(model=args.model, epochs=args.epochs, lr=args.lr, batch=args.batch)
    split = load_digits_split()
    with _agent(args) as agent:
        hist = train_worker(agent.rank, agent.n_workers, split, cfg,
                            lambda g, key: agent.allreduce(g, average=True, key=key))
        print(json.dumps({"rank": agent.rank, "model": args.model, "compressor": args.compressor,
                          "final_test_acc": round(hist.final_acc, 4), "seconds": round(hist.seconds, 2),
                          "bytes_sent": agent.reducer.bytes_sent, "test_acc": [round(a, 4) for a in hist.test_acc]}))
    return 0


def cmd_compressors(args: argparse.Namespace) -> int:
    for name in COMPRESSORS:
        comp, ef = make_compressor(name)
        print(f"{name:14s} unbiased={comp.unbiased!s:5s} error_feedback={'recommended' if ef else 'no'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m p4reduce.worker", description="p4reduce worker agent (docs/worker.md)")
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("allreduce", help="join a job and allreduce N generated tensors")
    _join_args(a)
    a.add_argument("--count", type=_positive(int), default=10)
    a.add_argument("--size", type=_positive(int), default=100_000)
    a.add_argument("--dtype", choices=["int32", "float32"], default="int32")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--check", action="store_true", help="verify every result (exact for int32)")
    a.set_defaults(fn=cmd_allreduce)
    t = sub.add_parser("train", help="join a job and train on digits through the switch")
    _join_args(t)
    t.add_argument("--model", choices=["logreg", "mlp"], default="logreg")
    t.add_argument("--epochs", type=_positive(int), default=30)
    t.add_argument("--lr", type=_positive(float), default=0.03)
    t.add_argument("--batch", type=_positive(int), default=16)
    t.set_defaults(fn=cmd_train)
    c = sub.add_parser("compressors", help="list the compressors")
    c.set_defaults(fn=cmd_compressors)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("--") and argv[0] not in ("--help",):
        argv.insert(0, "allreduce")  # `python -m p4reduce.worker --controller C --job J` = allreduce (default)
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (JobJoinError, AggregationError, QuantizationError, OSError) as e:
        print(f"worker: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
