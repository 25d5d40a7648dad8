"""Data-parallel training of a 1.1M-parameter MLP on digits, one process per Mininet worker host,
with DDP's gradient averaging done by gloo (its ring allreduce) or by the switch (p4reduce's DDP
communication hook, fixed point). The bench's `training` section runs both on the same network.

    python -m p4reduce.bench.train_worker --system gloo|p4reduce --rank R --world N --master HOST:PORT
        --iface IFACE [--controller HOST:PORT --job NAME --ip IP] [--epochs 8] [--batch 32]

Both runs are torch DistributedDataParallel over a gloo process group (which also broadcasts the
initial parameters); the p4reduce run registers ``worker.training.torch_hook.p4reduce_hook``, so
every gradient bucket (the whole 4.5 MB of gradients, in one bucket) is averaged through the
switch. Time per iteration is split into compute and communication: compute is measured on the
same model and batches with gradient averaging off (``no_sync``, no step), before training;
communication is the rest of a training iteration (DDP averages the one bucket after backward,
so there is no overlap to hide). Prints one JSON record (the last line of stdout).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from types import ModuleType
from typing import Any

import numpy as np

from p4reduce.bench import interface_counters

HIDDEN = 1024


def build_model(torch: ModuleType, seed: int) -> Any:
    """64 -> 1024 -> 1024 -> 10 ReLU MLP: 1,126,410 parameters, the same initial weights everywhere."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(64, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN),
                               torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 10))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m p4reduce.bench.train_worker", description=__doc__.split("\n\n")[0])
    p.add_argument("--system", choices=("gloo", "p4reduce"), required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master", required=True, help="HOST:PORT of rank 0's gloo rendezvous")
    p.add_argument("--iface", required=True)
    p.add_argument("--controller", help="job API HOST:PORT (p4reduce)")
    p.add_argument("--job", help="job name (p4reduce)")
    p.add_argument("--ip", help="this host's data IP, told to the controller")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch", type=int, default=32, help="samples per worker per iteration")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=300.0)
    args = p.parse_args(argv)
    if args.system == "p4reduce" and not (args.controller and args.job):
        p.error("--system p4reduce needs --controller and --job")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import datetime

    import torch
    import torch.distributed as dist

    from p4reduce.worker.training.data import load_digits_split
    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = args.iface
    host, port = args.master.rsplit(":", 1)
    dist.init_process_group("gloo", init_method=f"tcp://{host}:{port}", rank=args.rank, world_size=args.world,
                            timeout=datetime.timedelta(seconds=args.timeout))
    agent = None
    try:
        model = build_model(torch, args.seed)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        if args.system == "p4reduce":
            from p4reduce.worker.agent import Agent
            from p4reduce.worker.training.torch_hook import p4reduce_hook
            agent = Agent(args.controller, args.job, rank=args.rank, workers=args.world, mode="dense",
                          advertise_ip=args.ip, wait_timeout=args.timeout)
            ddp.register_comm_hook(agent, p4reduce_hook)
        split = load_digits_split()
        x, y = split.shard(args.rank, args.world)
        xs, ys = torch.from_numpy(x), torch.from_numpy(y)
        steps = len(y) // args.batch
        opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()

        def batch(i):
            lo = (i % steps) * args.batch
            return xs[lo:lo + args.batch], ys[lo:lo + args.batch]

        compute = []
        for i in range(min(steps, 10)):   # compute alone: forward and backward, no averaging, no step
            bx, by = batch(i)
            t0 = time.perf_counter()
            with ddp.no_sync():
                loss_fn(ddp(bx), by).backward()
            compute.append(time.perf_counter() - t0)
            opt.zero_grad(set_to_none=True)
        dist.barrier()
        before = interface_counters.read_proc(args.iface)
        iterations = []
        for _epoch in range(args.epochs):
            for i in range(steps):
                bx, by = batch(i)
                t0 = time.perf_counter()
                opt.zero_grad(set_to_none=True)
                loss_fn(ddp(bx), by).backward()   # DDP averages the gradient bucket here
                opt.step()
                iterations.append(time.perf_counter() - t0)
        dist.barrier()
        after = interface_counters.read_proc(args.iface)
        with torch.no_grad():
            pred = model(torch.from_numpy(split.x_test)).argmax(1).numpy()
        accuracy = float(np.mean(pred == split.y_test))
        it, comp = statistics.median(iterations), statistics.median(compute)
        record = {"system": args.system, "rank": args.rank, "world": args.world,
                  "parameters": int(sum(p.numel() for p in model.parameters())),
                  "iterations": len(iterations), "epochs": args.epochs, "batch_per_worker": args.batch,
                  "iteration_s": it, "compute_s": comp, "communication_s": max(0.0, it - comp),
                  "training_s": sum(iterations), "accuracy": accuracy,
                  "wire_tx_bytes": (after - before).tx_bytes, "wire_rx_bytes": (after - before).rx_bytes}
        if agent is not None:
            record["retransmissions"] = agent.reducer.stats.retransmissions
            record["packets_sent"] = agent.reducer.stats.packets_sent
    finally:
        if agent is not None:
            agent.close()
        dist.destroy_process_group()
    sys.stdout.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
