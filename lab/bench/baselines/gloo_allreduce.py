"""Baseline 1: gloo's ring allreduce through torch.distributed, one process per Mininet host.

Run inside a host: ``python -m lab.bench.baselines.gloo_allreduce --rank R --world N
--master IP:PORT --iface hX-eth0 --size S --reps K``. Rendezvous is gloo's TCP store on rank 0;
GLOO_SOCKET_IFNAME pins the data path to the host's benchmark interface.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys

import numpy as np

from lab.bench import hostside, tensors


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m lab.bench.baselines.gloo_allreduce", description=__doc__)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master", required=True, help="IP:PORT of rank 0's rendezvous store")
    p.add_argument("--iface", required=True, help="this host's interface toward the switch")
    p.add_argument("--size", type=int, required=True, help="tensor elements (float32)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds for rendezvous and each op")
    p.add_argument("--switch-ifaces", default="",
                   help="comma list of switch interfaces whose counters the timed loop also records, read "
                        "in the namespace of --switch-pid (bench/hostside.py)")
    p.add_argument("--switch-pid", type=int, default=1, help="a process in the switches' network namespace")
    args = p.parse_args(argv)
    if not 0 <= args.rank < args.world:
        p.error(f"--rank {args.rank} outside 0..{args.world - 1}")
    if ":" not in args.master:
        p.error(f"--master {args.master!r}: expected IP:PORT")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ["GLOO_SOCKET_IFNAME"] = args.iface
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        sys.stderr.write(f"gloo baseline needs torch: {exc}\n")
        return 2
    from p4reduce.worker import gloo_exit
    gloo_exit.install()             # gloo's threads can abort the process at exit otherwise
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{args.master}", rank=args.rank,
                            world_size=args.world,
                            timeout=datetime.timedelta(seconds=args.timeout))
    data = torch.from_numpy(tensors.make_tensor(args.rank, args.size))
    buf = torch.empty_like(data)

    def allreduce() -> np.ndarray:
        buf.copy_(data)
        dist.all_reduce(buf, op=dist.ReduceOp.SUM)
        return buf.numpy()

    record = hostside.measure(
        system="gloo", rank=args.rank, world=args.world, iface=args.iface, size=args.size,
        reps=args.reps, warmup=args.warmup, allreduce=allreduce, barrier=dist.barrier,
        expected=tensors.expected_sum(args.world, args.size),
        extra={"torch": torch.__version__, "algorithm": "gloo ring allreduce"},
        switch_ifaces=[i for i in args.switch_ifaces.split(",") if i], switch_pid=args.switch_pid)
    dist.destroy_process_group()
    hostside.emit(record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
