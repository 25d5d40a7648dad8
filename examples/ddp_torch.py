"""PyTorch DistributedDataParallel with its gradients averaged by the switch.

Run one copy per worker of a job, e.g. inside `make run` (job `default`, 4 workers):

    mininet> h1 .venv/bin/python examples/ddp_torch.py &      (and h2 .. h4)

worker.init_process_group(agent) makes DDP's gloo group from the job (rank, world size, rank 0's
host) and sets GLOO_SOCKET_IFNAME to this host's interface; gloo would otherwise bind 127.0.0.1
inside Mininet hosts and fail with "Gloo connectFullMesh failed". The gradient buckets go through
the switch (ddp.register_comm_hook); the model learns the 8x8 digits, each rank on its own shard.
"""
from __future__ import annotations

import hashlib
import sys

import numpy as np
from _common import fail, parse_args, report

from p4reduce import worker
from p4reduce.protocol.job_api import JobApiError
from p4reduce.worker.job import JobJoinError
from p4reduce.worker.training.data import load_digits_split


def main() -> int:
    args = parse_args(__doc__.splitlines()[0], [
        ("--steps", dict(type=int, default=60, help="training steps (default %(default)s)")),
        ("--compressor", dict(default="fixedpoint", help="how gradients become integers (default %(default)s)")),
        ("--gloo-port", dict(type=int, default=29500, help="TCP port of rank 0's rendezvous (default %(default)s)"))])
    import torch
    import torch.distributed as dist
    try:
        agent = worker.Agent(args.controller, args.job, compressor=args.compressor)
    except (JobJoinError, JobApiError, OSError, ValueError) as e:
        return fail(str(e))
    try:
        worker.init_process_group(agent, port=args.gloo_port)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        ddp.register_comm_hook(agent, worker.ddp_hook)
        split = load_digits_split()
        x = torch.from_numpy(split.x_train[agent.rank::agent.n_workers])
        y = torch.from_numpy(split.y_train[agent.rank::agent.n_workers])
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        losses = []
        for step in range(args.steps):
            i = (step * 32) % max(1, len(y) - 32)
            loss = torch.nn.functional.cross_entropy(ddp(x[i:i + 32]), y[i:i + 32])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        with torch.no_grad():
            acc = float((model(torch.from_numpy(split.x_test)).argmax(1) == torch.from_numpy(split.y_test))
                        .float().mean())
        # every replica must hold the same parameters: compare digests through the switch (exact int32)
        digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).digest()
        mine = np.array([int.from_bytes(digest[:3], "big")], np.int32)
        same = bool(agent.allreduce(mine)[0] == mine[0] * agent.n_workers)
        dist.destroy_process_group()
        first, last = float(np.mean(losses[:5])), float(np.mean(losses[-5:]))
        return report("ddp_torch", same and last < 0.5 * first, rank=agent.rank, workers=agent.n_workers,
                      steps=args.steps, loss_first=round(first, 4), loss_last=round(last, 4),
                      test_accuracy=round(acc, 4), replicas_identical=same)
    finally:
        agent.close()


if __name__ == "__main__":
    sys.exit(main())
