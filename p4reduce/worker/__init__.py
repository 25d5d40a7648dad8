"""p4reduce worker agents: quantization, switch-summable compressors, reliable UDP streaming,
the allreduce API and training integrations (docs/worker.md).

    from p4reduce import worker
    job = worker.create_job("10.0.0.100:8090", "demo", workers=4)   # -> the job, with its "credential"
    worker.init("10.0.0.100:8090", "demo")      # join the job (controller address + job name)
    total = worker.allreduce(array)             # numpy array or torch tensor, float32 or int32, any shape
    fut = worker.allreduce_async(array)
    worker.shutdown()                           # leave the job

    agent = worker.Agent(controller, job)       # the same as an object
    worker.init_process_group(agent)            # PyTorch DDP: gloo group from the job, interface set
    ddp.register_comm_hook(agent, worker.ddp_hook)
    worker.register_compressor("mine", lambda seed, rank, **kw: Mine())   # a compressor of your own
"""
from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from .agent import Agent

_default: Agent | None = None


def init(controller: str, job: str, **options: Any) -> Agent:
    """Join ``job`` and make it the target of :func:`allreduce`; returns the Agent."""
    global _default
    from .agent import Agent
    if _default is not None:
        _default.close()
    _default = Agent(controller, job, **options)
    return _default


def _agent() -> Agent:
    if _default is None:
        raise RuntimeError("worker.init(controller, job) must be called before worker.allreduce")
    return _default


def allreduce(array: Any, average: bool = False, key: str = "", out: Any = None) -> Any:
    """Sum (or mean) of ``array`` over the job's workers, through the switch; a torch tensor
    comes back as a tensor of its dtype and device. ``out``: where the result goes (returned), an
    array (or CPU tensor) of the input's size and dtype kept across calls, or the input itself."""
    agent = _agent()
    if _is_torch(array):
        if out is None:
            return array.new_tensor(agent.allreduce(array.detach().cpu().numpy(), average, key))
        if not _is_torch(out) or out.device.type != "cpu":
            raise ValueError("out for a torch tensor must be a CPU torch tensor")
        agent.allreduce(array.detach().cpu().numpy(), average, key, out=out.detach().numpy())
        return out
    return agent.allreduce(array, average, key, out=out)


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "new_tensor")


def create_job(controller: str, name: str, workers: int, mode: str = "dense", slots: int | None = None,
               credential: str | None = None) -> dict[str, Any]:
    """Create job ``name`` for ``workers`` workers ("dense" or "sparse") on the controller at
    ``controller``; returns its description with the ``credential`` its workers join with (init(...,
    credential=) or $P4REDUCE_JOB_CREDENTIAL; inside `make run` hosts the tooling hands it over). A job that
    has ended is created again by name. Errors: protocol.job_api.JobApiError."""
    from p4reduce.protocol.job_api import JobApiClient
    return JobApiClient(controller, credential=credential).create(name, workers, mode, slots=slots)


def register_compressor(name: str, factory: Callable[..., Any], error_feedback: bool = False) -> None:
    """Make ``factory(seed, rank, **options) -> Compressor`` available by ``name`` to
    ``Agent(..., compressor=name)`` in this process (contract: worker/compressors/base.py)."""
    from .compressors import COMPRESSORS
    if not isinstance(name, str) or not name or name in COMPRESSORS:
        raise ValueError(f"compressor name {name!r}: must be a new, non-empty name "
                         f"(taken: {', '.join(COMPRESSORS)})")
    if not callable(factory):
        raise TypeError("factory must be callable as factory(seed, rank, **options)")
    COMPRESSORS[name] = (factory, error_feedback)


def __getattr__(name: str) -> Any:
    """Agent, ddp_hook and init_process_group, imported on first use (torch only then)."""
    if name == "Agent":
        from .agent import Agent
        return Agent
    if name == "ddp_hook":
        from .ddp_comm_hook import p4reduce_hook
        return p4reduce_hook
    if name == "init_process_group":
        from .ddp_comm_hook import init_process_group
        return init_process_group
    raise AttributeError(f"module 'p4reduce.worker' has no attribute {name!r}")


def allreduce_async(array: ArrayLike, average: bool = False,
                    key: str = "") -> concurrent.futures.Future[np.ndarray]:
    """:func:`allreduce` returning a concurrent.futures.Future."""
    return _agent().allreduce_async(array, average, key)


def shutdown() -> None:
    """Leave the job and release the socket."""
    global _default
    if _default is not None:
        _default.close()
        _default = None
