"""p4reduce through the switch, one process per Mininet worker host (the system under test).

Joins a job through the controller's job API (relayed into the host), then allreduces int32
tensors of small integers with the worker package's streaming allreduce, measured by
``bench.hostside`` exactly like the baselines. Int32 is exact on the switch, so the check against
the exact sum is bit-for-bit; dense mode sends every block, sparse mode (OmniReduce-style) skips
the zero blocks of a tensor whose non-zero block density is ``--density``.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import numpy as np

from lab.bench import hostside, tensors
from p4reduce.worker.agent import Agent


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m lab.bench.p4reduce_worker", description=__doc__)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--controller", required=True, help="job API address HOST:PORT")
    p.add_argument("--job", required=True)
    p.add_argument("--mode", choices=("dense", "sparse"), default="dense")
    p.add_argument("--density", type=float, default=1.0)
    p.add_argument("--iface", required=True)
    p.add_argument("--ip", help="this host's data IP, told to the controller (default: as it sees us)")
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--switch-ifaces", default="",
                   help="comma list of switch interfaces whose counters the timed loop also records, read "
                        "in the namespace of --switch-pid (bench/hostside.py)")
    p.add_argument("--switch-pid", type=int, default=1, help="a process in the switches' network namespace")
    args = p.parse_args(argv)
    if not 0 <= args.rank < args.world:
        p.error(f"--rank {args.rank} outside 0..{args.world - 1}")
    if not 0 < args.density <= 1:
        p.error(f"--density {args.density}: must be in (0, 1]")
    return args


def connect(args: argparse.Namespace) -> tuple[Agent, Callable[[], None]]:
    """(the worker package's Agent, barrier()).

    The barrier is a one-element allreduce through the switch: it returns once every worker has
    contributed, which is all the measurement loop needs.
    """
    agent = Agent(args.controller, args.job, rank=args.rank, workers=args.world, mode=args.mode,
                  wait_timeout=args.timeout, advertise_ip=args.ip)
    if agent.rank != args.rank or agent.n_workers != args.world:
        agent.close()
        raise RuntimeError(f"joined as rank {agent.rank} of {agent.n_workers}, "
                           f"expected rank {args.rank} of {args.world}")
    one = np.zeros(1, dtype=np.int32)      # the barrier's one-element tensor

    def barrier() -> None:
        agent.allreduce(one)

    return agent, barrier


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        agent, barrier = connect(args)
    except Exception as exc:
        sys.stderr.write(f"p4reduce worker rank {args.rank}: cannot join job {args.job!r} "
                         f"at {args.controller}: {exc}\n")
        return 1
    block = int(agent.params.lanes)
    data = tensors.make_tensor(args.rank, args.size, density=args.density, block=block, dtype=np.int32)
    expected = tensors.expected_sum(args.world, args.size, density=args.density, block=block,
                                    dtype=np.int32)
    result = np.empty_like(data)   # one result buffer for every call, as gloo's baseline keeps one tensor
    try:
        record = hostside.measure(
            system="p4reduce", rank=args.rank, world=args.world, iface=args.iface, size=args.size,
            reps=args.reps, warmup=args.warmup, allreduce=lambda: agent.allreduce(data, out=result),
            barrier=barrier, expected=expected,
            extra={"mode": args.mode, "density": args.density, "block": block, "job": args.job},
            switch_ifaces=[i for i in args.switch_ifaces.split(",") if i], switch_pid=args.switch_pid)
        stats = agent.reducer.stats   # the whole run's (warm-up and barriers included)
        record.update(packets_sent=stats.packets_sent, retransmissions=stats.retransmissions,
                      fast_retransmissions=stats.fast_retransmissions, tail_probes=stats.tail_probes,
                      results_per_wakeup=round(stats.results / max(1, stats.wakeups), 2),
                      window=agent.reducer.window.limit(agent.params.slot_count),
                      window_decreases=agent.reducer.window.decreases,
                      timeouts_loss=agent.reducer.window.losses, timeouts_stall=agent.reducer.window.stalls,
                      rto_ms=round(agent.reducer.rto_estimator.rto * 1e3, 2), worker_loop=agent.reducer.loop)
    finally:
        agent.close()
    hostside.emit(record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
