"""p4reduce: in-network gradient aggregation on P4 switches.

The Python API (README "Python API"; runnable scripts in examples/):

    import p4reduce
    job = p4reduce.create_job("127.0.0.1:8090", "demo", workers=4)   # -> {"name", "job_id", "token", ...}
    p4reduce.init("127.0.0.1:8090", "demo")    # join (every worker); rank and peers from the controller
    total = p4reduce.allreduce(tensor)         # numpy array or torch tensor, float32 or int32, any shape
    mean = p4reduce.allreduce(tensor, average=True)
    p4reduce.shutdown()                        # leave the job

    agent = p4reduce.Agent(controller, job, compressor="topk")       # the same, as an object
    p4reduce.init_process_group(agent)         # PyTorch DDP: gloo group from the job, interface set
    ddp.register_comm_hook(agent, p4reduce.ddp_hook)                 # gradients through the switch
    p4reduce.register_compressor("mine", lambda seed, rank, **kw: Mine())   # a compressor of your own

One installable package; the repository's top-level folders are its subpackages
(`p4reduce/<name>` links to `<name>/`), so the source tree keeps its layout while nothing is
installed under a generic top-level name:

    p4reduce.p4sim          the embedded compiler (p4sim-compile) and switch (p4sim-switch)
    p4reduce.protocol       the wire format, codecs and a reference model of the switch
    p4reduce.controller     P4Runtime controller, job/slot manager, job API, shell
    p4reduce.worker         worker agents: quantization, compressors, streaming, allreduce, DDP hook
    p4reduce.mininet_topos  Mininet topologies and the make run / demo / stop entry points
    p4reduce.bench          benchmarks
    p4reduce/p4src          the aggregation program's P4 source (data, not a module)

`import p4reduce` stays light: numpy, the worker and torch are imported when first used.
"""
from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from p4reduce.worker.agent import Agent

__version__ = "0.1.0"

P4SRC_DIR = pathlib.Path(__file__).resolve().parent / "p4src"
"""Where the aggregation program's P4 sources are, in the source tree and when installed."""

__all__ = ["Agent", "allreduce", "allreduce_async", "create_job", "ddp_hook", "init", "init_process_group",
           "register_compressor", "shutdown"]


def create_job(controller: str, name: str, workers: int, mode: str = "dense", slots: int | None = None,
               token: str | None = None) -> dict[str, Any]:
    """Create job ``name`` for ``workers`` workers on the controller at ``controller``
    (HOST:PORT); ``mode`` "dense" or "sparse" (zero blocks are not sent). Returns the job's
    description with its ``token``, which the workers join with (``init(..., token=...)`` or
    $P4REDUCE_JOB_TOKEN; inside `make run` hosts the tooling hands it over). A job that has ended
    (its workers left) is created again by name. Errors: protocol.job_api.JobApiError."""
    from p4reduce.protocol.job_api import JobApiClient
    return JobApiClient(controller, token=token).create(name, workers, mode, slots=slots)


def init(controller: str, job: str, **options: Any) -> Agent:
    """Join ``job`` (blocks until all its workers have joined) and make it the target of
    :func:`allreduce`. ``options`` are :class:`Agent`'s: compressor, token, rank, ..."""
    from p4reduce import worker
    return worker.init(controller, job, **options)


def allreduce(tensor: Any, average: bool = False, key: str = "") -> Any:
    """Sum (or mean) of ``tensor`` over the job's workers, through the switch; the same type,
    dtype and shape back (numpy array or torch tensor). int32 is exact; float32 goes through the
    job's compressor. ``key`` names the tensor for compressors with per-tensor state."""
    from p4reduce import worker
    if _is_torch(tensor):
        import torch
        out = worker.allreduce(tensor.detach().cpu().numpy(), average, key)
        return torch.from_numpy(out).to(tensor.device)
    return worker.allreduce(tensor, average, key)


def allreduce_async(tensor: Any, average: bool = False, key: str = "") -> Any:
    """:func:`allreduce` of a numpy array returning a concurrent.futures.Future."""
    from p4reduce import worker
    return worker.allreduce_async(tensor, average, key)


def shutdown() -> None:
    """Leave the job joined by :func:`init`."""
    from p4reduce import worker
    worker.shutdown()


def register_compressor(name: str, factory: Callable[..., Any], error_feedback: bool = False) -> None:
    """Make ``factory(seed, rank, **options) -> Compressor`` available by ``name`` to
    ``Agent(..., compressor=name)`` and the worker CLI in this process; ``error_feedback``: whether
    workers keep the residual by default. See worker/compressors/base.py for the contract."""
    from p4reduce.worker.compressors import COMPRESSORS
    if not isinstance(name, str) or not name or name in COMPRESSORS:
        raise ValueError(f"compressor name {name!r}: must be a new, non-empty name "
                         f"(taken: {', '.join(COMPRESSORS)})")
    if not callable(factory):
        raise TypeError("factory must be callable as factory(seed, rank, **options)")
    COMPRESSORS[name] = (factory, error_feedback)


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "detach")


def __getattr__(name: str) -> Any:
    """The heavier names, imported on first use: Agent, ddp_hook, init_process_group."""
    if name == "Agent":
        from p4reduce.worker.agent import Agent
        return Agent
    if name == "ddp_hook":
        from p4reduce.worker.training.torch_hook import p4reduce_hook
        return p4reduce_hook
    if name == "init_process_group":
        from p4reduce.worker.training.torch_hook import init_process_group
        return init_process_group
    raise AttributeError(f"module 'p4reduce' has no attribute {name!r}")
