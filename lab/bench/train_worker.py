"""Data-parallel training of one of the bench's models (bench/train_models.py), one process per
Mininet worker host, with torch DistributedDataParallel on one of three systems. The bench's
`training` section runs every system on the same network, model, batches, data, seed and torch
thread count (1).

    python -m lab.bench.train_worker --system gloo|p4reduce|p4reduce-hook --model mlp|wide-mlp|embedding
        --rank R --world N --master HOST:PORT --iface IFACE --iterations K
        [--controller HOST:PORT --job NAME --ip IP] [--batch 32] [--eval-every E]

- ``gloo``: DDP as PyTorch ships it on a gloo process group (default bucket size, no comm hook).
- ``p4reduce``: the same DDP program on ``backend="p4reduce"`` (``import p4reduce.distributed``;
  the job named by ``--job``, created and granted to the hosts by the bench, in the mode it chose:
  sparse for the embedding model; default fixed point, no lossy compressor). No
  ``GLOO_SOCKET_IFNAME``: the backend picks its gloo interface itself.
- ``p4reduce-hook``: DDP on a gloo group with ``worker.ddp_hook.p4reduce_hook``
  registered (an Agent of its own in the same job mode).

Time per iteration is split into compute and communication: compute is measured on the same
model and batches with gradient averaging off (``no_sync``, no step) before training;
communication is the rest of a training iteration, i.e. what the averaging adds that the backward
pass does not hide. Every ``--eval-every`` iterations (and after the last) each worker evaluates
the test metric outside the timed step, for time to target. Bytes are the host interface's
counters over the timed loop. Prints one JSON record (the last line of stdout).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from typing import Any

from lab.bench import interface_counters
from lab.bench.train_models import MODELS

SYSTEMS = ("gloo", "p4reduce", "p4reduce-hook")
COMPUTE_SAMPLES = 5


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m lab.bench.train_worker", description=__doc__.split("\n\n")[0])
    p.add_argument("--system", choices=SYSTEMS, required=True)
    p.add_argument("--model", choices=tuple(MODELS), default="mlp")
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master", required=True, help="HOST:PORT of rank 0's rendezvous")
    p.add_argument("--iface", required=True, help="the host's data interface (counters; gloo's socket)")
    p.add_argument("--controller", help="job API HOST:PORT (p4reduce, p4reduce-hook)")
    p.add_argument("--job", help="job name (p4reduce, p4reduce-hook)")
    p.add_argument("--ip", help="this host's data IP, told to the controller (p4reduce-hook)")
    p.add_argument("--iterations", type=int, default=80)
    p.add_argument("--eval-every", type=int, default=0, help="iterations between evaluations (0: about 20 per run)")
    p.add_argument("--batch", type=int, default=32, help="samples per worker per iteration")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=300.0)
    args = p.parse_args(argv)
    if args.system != "gloo" and not (args.controller and args.job):
        p.error(f"--system {args.system} needs --controller and --job")
    if args.iterations < 1:
        p.error("--iterations must be >= 1")
    return args


def _switch_stats(agent: Any, pg: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if pg is not None and isinstance(getattr(pg, "calls", None), dict):
        out["allreduce_calls"] = dict(pg.calls)
        agent = getattr(pg, "agent", None) or agent
    if agent is not None:
        stats = agent.reducer.stats
        out["retransmissions"] = stats.retransmissions
        out["packets_sent"] = stats.packets_sent
        out["job_mode"] = "sparse" if agent.params.sparse else "dense"
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    import torch.distributed as dist

    from lab.bench.train_models import Task, build_model
    from p4reduce.worker import gloo_exit
    gloo_exit.install()             # both systems run gloo groups; its threads can abort the exit otherwise
    torch.set_num_threads(1)
    spec = MODELS[args.model]
    host, port = args.master.rsplit(":", 1)
    timeout = datetime.timedelta(seconds=args.timeout)
    init = f"tcp://{host}:{port}"
    if args.system == "p4reduce":
        import p4reduce.distributed  # noqa: F401  (registers the backend)
        from p4reduce.distributed import Options
        dist.init_process_group("p4reduce", init_method=init, rank=args.rank, world_size=args.world,
                                timeout=timeout, pg_options=Options(controller=args.controller, job=args.job))
    else:
        os.environ["GLOO_SOCKET_IFNAME"] = args.iface
        dist.init_process_group("gloo", init_method=init, rank=args.rank, world_size=args.world, timeout=timeout)
    agent = None
    try:
        model = build_model(torch, args.model, args.seed)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        if args.system == "p4reduce-hook":
            from p4reduce.worker.agent import Agent
            from p4reduce.worker.ddp_comm_hook import p4reduce_hook
            agent = Agent(args.controller, args.job, rank=args.rank, workers=args.world,
                          advertise_ip=args.ip, wait_timeout=args.timeout)
            ddp.register_comm_hook(agent, p4reduce_hook)
        task = Task(torch, args.model, args.rank, args.world, args.batch, args.seed)
        opt = torch.optim.SGD(ddp.parameters(), lr=spec.lr, momentum=spec.momentum)
        loss_fn = torch.nn.CrossEntropyLoss()
        eval_every = args.eval_every or max(1, args.iterations // 20)

        compute = []
        for i in range(min(args.iterations, COMPUTE_SAMPLES)):   # compute alone: no averaging, no step
            bx, by = task.batch(i)
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            with ddp.no_sync():
                loss_fn(ddp(bx), by).backward()
            compute.append(time.perf_counter() - t0)
        opt.zero_grad(set_to_none=True)
        dist.barrier()
        before = interface_counters.read_proc(args.iface)
        iterations: list[float] = []
        curve: list[list[float]] = []          # [iterations done, training seconds so far, metric]
        for i in range(args.iterations):
            bx, by = task.batch(i)
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss_fn(ddp(bx), by).backward()       # DDP averages the gradient buckets here
            opt.step()
            iterations.append(time.perf_counter() - t0)
            if (i + 1) % eval_every == 0 or i + 1 == args.iterations:
                curve.append([i + 1, sum(iterations), task.evaluate(model)])
        dist.barrier()
        after = interface_counters.read_proc(args.iface)
        it, comp = statistics.median(iterations), statistics.median(compute)
        default_pg = dist.distributed_c10d._get_default_group()
        record = {"system": args.system, "model": args.model, "rank": args.rank, "world": args.world,
                  "parameters": int(sum(p.numel() for p in model.parameters())),
                  "iterations": len(iterations), "batch_per_worker": args.batch, "metric": spec.metric,
                  "iteration_s": it, "compute_s": comp, "communication_s": max(0.0, it - comp),
                  "iteration_samples_s": iterations, "compute_samples_s": compute,
                  "training_s": sum(iterations), "final_metric": curve[-1][2], "curve": curve,
                  "wire_tx_bytes": (after - before).tx_bytes, "wire_rx_bytes": (after - before).rx_bytes,
                  "backend": dist.get_backend()}
        record.update(_switch_stats(agent, default_pg if args.system == "p4reduce" else None))
    finally:
        if agent is not None:
            agent.close()
        dist.destroy_process_group()
    sys.stdout.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
