"""A plain DDP program: its only p4reduce lines are the import and the backend's name (the
backend comes from argv so the same file runs on gloo for comparison). torchrun's variables
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) come from the environment; it writes its final
parameters to argv[2]."""
import sys

import numpy as np
import torch
import torch.distributed as dist

import p4reduce.distributed  # noqa: F401

dist.init_process_group(backend=sys.argv[1])
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
g = torch.Generator().manual_seed(dist.get_rank())
for _ in range(20):
    x, y = torch.randn(32, 64, generator=g), torch.randint(0, 10, (32,), generator=g)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(ddp(x), y).backward()
    opt.step()
np.save(sys.argv[2], torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy())
dist.destroy_process_group()
