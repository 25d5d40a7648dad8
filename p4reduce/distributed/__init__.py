"""torch.distributed's way in: ``import p4reduce.distributed`` registers the backend "p4reduce".

    import torch.distributed as dist
    import p4reduce.distributed                      # registers "p4reduce" (devices: cpu)
    dist.init_process_group("p4reduce", init_method="tcp://10.0.0.1:29500", rank=r, world_size=n)
    ddp = torch.nn.parallel.DistributedDataParallel(model)   # unchanged

allreduce with SUM or AVG of float32/float16/bfloat16 (through fixed point) and int32 (exact)
crosses the switch; every other collective, op and dtype runs on an inner gloo group over the
same store, so nothing a program calls fails (docs/worker.md, "torch.distributed backend").
Where the job and the controller are: ``Options`` through ``pg_options``, else the environment
(``P4REDUCE_CONTROLLER``, ``P4REDUCE_JOB``, the job's credential variable, ``P4REDUCE_COMPRESSOR``);
inside `make run` hosts the defaults need none of them.
"""
from __future__ import annotations

from ..worker import gloo_exit
from .options import Options
from .process_group import BACKEND, P4ReduceProcessGroup, register

__all__ = ["BACKEND", "Options", "P4ReduceProcessGroup", "register"]

register()
gloo_exit.install()        # torch 2.13's gloo threads can abort the process at exit (gloo_exit.py)
