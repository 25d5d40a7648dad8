"""PyTorch DistributedDataParallel through the switch: a plain DDP script on the backend "p4reduce".

The only p4reduce lines are `import p4reduce.distributed` and the backend's name. Run one copy per
worker with torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), e.g. from the
`make run` CLI, which sets them on each host (rank = host order, h1 holds the store):

    mininet> example ddp_torch                     # job `default`, 4 hosts
    mininet> example ddp_torch --backend gloo      # the same script on gloo, for comparison

The model learns the 8x8 digits, each rank on its own shard; the gradient buckets go through the
switch (the job `default`, or P4REDUCE_JOB), everything else DDP does (broadcasting the initial
parameters, checking their shapes) runs on the group's gloo side. It reports whether every
replica ended with the same parameters and the loss fell.
"""
from __future__ import annotations

import hashlib
import os
import sys

from _common import fail, parse_args, report


def main() -> int:
    args = parse_args(__doc__.splitlines()[0], [
        ("--steps", dict(type=int, default=60, help="training steps (default %(default)s)")),
        ("--backend", dict(default="p4reduce", choices=("p4reduce", "gloo"),
                           help="torch.distributed backend (default %(default)s)"))])
    os.environ.setdefault("P4REDUCE_CONTROLLER", args.controller)    # --controller/--job, as every example
    os.environ.setdefault("P4REDUCE_JOB", args.job)
    import torch
    import torch.distributed as dist

    import p4reduce.distributed  # noqa: F401  (registers the backend "p4reduce")
    from lab.training.data import load_digits_split

    missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not os.environ.get(v)]
    if missing:
        return fail(f"set {', '.join(missing)} (torchrun's variables; the make run CLI's `example` sets them)")
    try:
        dist.init_process_group(backend=args.backend)          # env://: RANK, WORLD_SIZE, MASTER_*
    except Exception as e:       # the backend's setup errors are one line each
        return fail(str(e).splitlines()[-1])
    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        split = load_digits_split()
        x = torch.from_numpy(split.x_train[rank::world])
        y = torch.from_numpy(split.y_train[rank::world])
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
        # every replica must hold the same parameters
        digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
        digests: list[str] = [""] * world
        dist.all_gather_object(digests, digest)
        same = len(set(digests)) == 1
    finally:
        dist.destroy_process_group()
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    return report("ddp_torch", same and last < 0.5 * first, rank=rank, workers=world, backend=args.backend,
                  steps=args.steps, loss_first=round(first, 4), loss_last=round(last, 4),
                  test_accuracy=round(acc, 4), replicas_identical=same, parameters_sha256=digest[:16])


if __name__ == "__main__":
    sys.exit(main())
