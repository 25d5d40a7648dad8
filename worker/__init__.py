"""p4reduce worker agents: quantization, switch-summable compressors, reliable UDP streaming,
the allreduce API and training integrations (docs/worker.md).

    from p4reduce import worker
    worker.init("10.0.0.100:8090", "demo")      # join the job (controller address + job name)
    total = worker.allreduce(array)             # float32 or int32, any shape
    fut = worker.allreduce_async(array)
"""
from __future__ import annotations

import concurrent.futures
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


def allreduce(array: ArrayLike, average: bool = False, key: str = "") -> np.ndarray:
    """Sum (or mean) of ``array`` over the job's workers, through the switch."""
    return _agent().allreduce(array, average, key)


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
