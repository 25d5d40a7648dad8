"""PyTorch DistributedDataParallel communication hook that averages gradients through the switch.

    from p4reduce.worker import Agent
    from p4reduce.worker.ddp_comm_hook import p4reduce_hook
    agent = Agent("10.0.0.100:8090", "resnet-1", compressor="topk")
    init_process_group(agent)                                     # gloo, from the job (see below)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ddp.register_comm_hook(agent, p4reduce_hook)

DDP still needs its process group (to broadcast the initial parameters and for
``find_unused_parameters``); the gradient buckets, which are the traffic, go through the switch.
:func:`init_process_group` makes that gloo group from the job itself (rank and world size from
the controller, rank 0's host as the rendezvous) and sets ``GLOO_SOCKET_IFNAME`` to the interface
holding this worker's address when it is not set: gloo otherwise picks the address of the host
name, 127.0.0.1 inside Mininet hosts, and fails with "Gloo connectFullMesh failed".
The state is anything with ``allreduce_async(array, average, key) -> concurrent.futures.Future``
(a :class:`worker.agent.Agent`, or :class:`AsyncCommunicator` around a Communicator); each bucket
keeps its own error-feedback residual (key ``bucket<index>``). torch is optional: this module is
the only one that imports it.
"""
import concurrent.futures
import datetime
import os
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from p4reduce.worker.communicator import Communicator
from p4reduce.worker.netif import interface_of


class AsyncCommunicator:
    """Gives a :class:`worker.communicator.Communicator` the Agent's ``allreduce_async``."""

    def __init__(self, communicator: Communicator) -> None:
        self.communicator = communicator
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="p4reduce-hook")

    def allreduce_async(self, array: np.ndarray, average: bool = False,
                        key: str = "") -> concurrent.futures.Future[np.ndarray]:
        a = np.array(array, copy=True)
        return self._pool.submit(self.communicator.allreduce, a, average, key)

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def p4reduce_hook(state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP comm hook: mean of the bucket over workers, computed by the switch."""
    tensor = bucket.buffer()
    array = tensor.detach().cpu().numpy()
    if array.dtype != np.float32:
        array = array.astype(np.float32)
    result: torch.futures.Future[Any] = torch.futures.Future()
    pending = state.allreduce_async(array, True, f"bucket{bucket.index()}")

    def done(f: concurrent.futures.Future[np.ndarray]) -> None:
        try:
            tensor.copy_(torch.from_numpy(np.ascontiguousarray(f.result())).to(tensor.dtype).reshape(tensor.shape))
            result.set_result(tensor)
        except Exception as e:
            result.set_exception(e)

    pending.add_done_callback(done)
    return result


def init_process_group(agent: Any, port: int = 29500, timeout_s: float = 120.0) -> None:
    """The gloo process group DDP needs, for the agent's job: rank and world size from the job,
    rank 0's address (from the job's members) as the rendezvous on TCP ``port``, and
    GLOO_SOCKET_IFNAME set to the interface of this worker's address unless already set."""
    members = {m["rank"]: m["ip"] for m in agent.session.job.get("members", [])}
    if agent.rank not in members or 0 not in members:
        raise RuntimeError(f"job {agent.session.name!r}: the controller's job description lacks the "
                           "members' addresses")
    if not os.environ.get("GLOO_SOCKET_IFNAME"):
        ifname = interface_of(members[agent.rank])
        if ifname is None:
            raise RuntimeError(f"no interface holds this worker's address {members[agent.rank]}: set "
                               "GLOO_SOCKET_IFNAME to the interface gloo should use")
        os.environ["GLOO_SOCKET_IFNAME"] = ifname
    dist.init_process_group("gloo", init_method=f"tcp://{members[0]}:{port}", rank=agent.rank,
                            world_size=agent.n_workers, timeout=datetime.timedelta(seconds=timeout_s))
