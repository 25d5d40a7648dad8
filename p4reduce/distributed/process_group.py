"""The "p4reduce" process group: allreduce through the switch, everything else on gloo.

Why this shape: a torch.distributed program calls many collectives (DDP alone broadcasts the
parameters, all-gathers their shapes and allreduces the gradient buckets). Only the allreduce
of summable dense tensors is what a p4reduce switch computes; everything else must still work
exactly as on gloo. So the group is a ``torch.distributed.ProcessGroup`` whose CPU backend is a
real gloo backend over the same store (every other collective goes there, called on the backend
itself: see the class's note on the GIL), and whose ``allreduce`` sends SUM/AVG of float32, float16,
bfloat16 and int32 tensors through the job's worker agent instead. Works follow c10d's
semantics: ``wait()`` blocks until the tensors hold the result (raising what failed), and
``get_future()`` gives a ``torch.futures.Future`` completed with the tensors, so DDP overlaps its
bucket allreduces with the backward pass (they queue on the agent's thread, in order).

The job: rank 0 looks it up and, when it does not exist or has ended, creates it for the group's
size, then tells the other ranks through the store (with the credential it got, so the others can
join a job only rank 0 could create). Each rank joins with its own torch rank as its job rank.
"""
from __future__ import annotations

import datetime
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroupGloo

from p4reduce.protocol.job_api import JobApiClient, JobApiError
from p4reduce.worker.agent import SWITCH_TIMEOUT_S, Agent
from p4reduce.worker.job import CREDENTIAL_ENV
from p4reduce.worker.netif import interface_of

from .options import Options, Settings

log = logging.getLogger("p4reduce.distributed")

BACKEND = "p4reduce"
SWITCHED_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32)
_JOB_KEY = "p4reduce/job"          # rank 0's word on the job, in the group's store
_JOB_READ_KEY = "p4reduce/job-read"  # how many other ranks have read it
READ_WAIT_S = 10.0
_WORLD_INTERFACE: dict[str, str | None] = {}   # gloo's interface, chosen by the world group, for subgroups


class DistributedSetupError(RuntimeError):
    """The group could not be set up (job, controller, interface); the message says which."""


class SwitchWork(dist._Work):
    """A collective running on the job's agent: wait() and get_future() as c10d's Work."""

    def __init__(self, future: torch.futures.Future[Any]) -> None:
        super().__init__()
        self._future = future

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        self._future.wait()       # raises the call's error, as a failed c10d Work does
        return True

    def get_future(self) -> torch.futures.Future[Any]:
        return self._future

    def is_completed(self) -> bool:
        return self._future.done()


def _is_sum_or_avg(op: Any) -> tuple[bool, bool]:
    """(switchable op, average) for a c10d ReduceOp."""
    if op == dist.ReduceOp.SUM:
        return True, False
    if op == dist.ReduceOp.AVG:
        return True, True
    return False, False


def _gloo_collective(backend_method: str, name: str | None = None) -> Callable[..., Any]:
    """A process-group method that runs `backend_method` of the group's gloo backend (see the
    class's note on the GIL); `name` is the group's method when it differs (torch's newer names)."""
    def collective(self: P4ReduceProcessGroup, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._gloo, backend_method)(*args, **kwargs)
    collective.__name__ = collective.__qualname__ = name or backend_method
    collective.__doc__ = f"{name or backend_method} on the group's gloo backend ({backend_method}, GIL released)"
    return collective


class P4ReduceProcessGroup(dist.ProcessGroup):
    """One rank of a torch.distributed group whose allreduces a p4reduce switch computes."""

    def __init__(self, store: dist.Store, rank: int, size: int, timeout: datetime.timedelta,
                 options: Options | None = None) -> None:
        super().__init__(rank, size)  # type: ignore[call-arg]  # (rank, size): the form Python subclasses use
        self._rank, self._size = rank, size
        self.options = (options or Options()).resolved()
        self.calls = {"switch": 0, "gloo": 0}     # allreduce calls by path (tests, reports)
        credential = _agree_on_job(store, rank, size, self.options)
        o = self.options
        try:
            self.agent: Agent | None = Agent(
                o.controller, o.job, compressor=o.compressor, compressor_options=o.compressor_options, loop=o.loop,
                rank=rank, credential=credential or o.credential, switch_addr=o.switch_addr(), bind_ip=o.bind_ip,
                wait_timeout=timeout.total_seconds(), fallback_peer_wait_s=min(timeout.total_seconds(), 86400.0),
                switch_timeout_s=SWITCH_TIMEOUT_S if o.switch_timeout_s is None else o.switch_timeout_s)
        except Exception as e:
            raise DistributedSetupError(f"p4reduce: rank {rank} cannot join job {o.job!r} at {o.controller}: {e}") \
                from None
        if self.agent.n_workers != size:
            self.agent.close()
            raise DistributedSetupError(f"p4reduce: job {o.job!r} has {self.agent.n_workers} workers, the group has "
                                        f"{size}: name another job (P4REDUCE_JOB), which rank 0 creates for the group")
        try:
            _WORLD_INTERFACE["name"] = _own_interface(self.agent)
            self._gloo = _gloo_backend(store, rank, size, timeout, _WORLD_INTERFACE["name"])
        except BaseException:
            self.agent.close()
            raise
        self._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, self._gloo)
        self._set_default_backend(dist.ProcessGroup.BackendType.GLOO)

    # ---- what c10d asks of a process group ------------------------------------------------------
    def getBackendName(self) -> str:
        return BACKEND

    def getRank(self) -> int:
        return self._rank

    def getSize(self) -> int:
        return self._size

    def allreduce(self, tensors: list[torch.Tensor], opts: Any = None) -> dist._Work:  # type: ignore[override]
        """SUM/AVG of summable dense CPU tensors through the switch; anything else on gloo."""
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        switchable, average = _is_sum_or_avg(op)
        if not switchable or not all(_switchable_tensor(t) for t in tensors):
            return self._on_gloo(tensors, opts, average)
        self.calls["switch"] += 1
        return self._submit([t for t in tensors if t.numel()], average)

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts: Any = None) -> dist._Work:
        return self.allreduce(tensors, opts)

    # Every other collective runs on the gloo backend, called here through the backend's own
    # binding. Left to ProcessGroup's methods they would deadlock now and then: for a Python
    # subclass, torch's binding (PyProcessGroup's WORK_OVERRIDE) calls the base method, which
    # enqueues on gloo, with the GIL held; gloo's worker thread drops the previous collective's
    # tensors while holding that queue's lock, and dropping a tensor with a Python object takes
    # the GIL. The backend's binding releases the GIL before it enqueues. (The coalesced variants,
    # used by c10d's coalescing manager only, have no binding on the backend: still the base's.)
    allgather = _gloo_collective("allgather")
    allgather_coalesced = _gloo_collective("allgather_coalesced")
    _allgather_base = _gloo_collective("_allgather_base")
    all_gather_single = _gloo_collective("_allgather_base", "all_gather_single")
    alltoall = _gloo_collective("alltoall")
    alltoall_base = _gloo_collective("alltoall_base")
    all_to_all_single = _gloo_collective("alltoall_base", "all_to_all_single")
    barrier = _gloo_collective("barrier")
    broadcast = _gloo_collective("broadcast")
    gather = _gloo_collective("gather")
    scatter = _gloo_collective("scatter")
    reduce = _gloo_collective("reduce")
    reduce_scatter = _gloo_collective("reduce_scatter")
    _reduce_scatter_base = _gloo_collective("_reduce_scatter_base")
    reduce_scatter_single = _gloo_collective("_reduce_scatter_base", "reduce_scatter_single")
    send = _gloo_collective("send")
    recv = _gloo_collective("recv")
    recv_anysource = _gloo_collective("recv_anysource")

    def shutdown(self) -> None:
        """Leave the job (destroy_process_group calls this)."""
        agent = getattr(self, "agent", None)
        if agent is not None:
            self.agent = None
            agent.close()

    def abort(self) -> None:
        self.shutdown()

    # ---- the two paths --------------------------------------------------------------------------
    def _on_gloo(self, tensors: list[torch.Tensor], opts: Any, average: bool) -> dist._Work:
        self.calls["gloo"] += 1
        if not average:
            return self._gloo.allreduce(tensors, opts)
        summed = dist.AllreduceOptions()            # gloo has no AVG: its sum, divided here
        summed.reduceOp = dist.ReduceOp.SUM  # type: ignore[assignment]  # c10d accepts the op type
        if opts is not None:
            summed.timeout = opts.timeout
        work = self._gloo.allreduce(tensors, summed)
        work.wait()
        for t in tensors:
            if t.is_floating_point() or t.is_complex():
                t.div_(self._size)
            else:
                t.floor_divide_(self._size)
        done: torch.futures.Future[Any] = torch.futures.Future()
        done.set_result(tensors)
        return SwitchWork(done)

    def _submit(self, tensors: Sequence[torch.Tensor], average: bool) -> dist._Work:
        future: torch.futures.Future[Any] = torch.futures.Future()
        agent = self.agent
        if agent is None:
            future.set_exception(RuntimeError("p4reduce: the process group has been shut down"))
            return SwitchWork(future)
        pending = [_reduce_in_place(agent, t, average) for t in tensors]
        if not pending:
            future.set_result(list(tensors))
            return SwitchWork(future)
        remaining = [len(pending)]
        failed: list[BaseException] = []

        def one_done(f: Any) -> None:     # runs on the agent's thread, in submission order
            exc = f.exception()
            if exc is not None:
                failed.append(exc)
            remaining[0] -= 1
            if remaining[0] == 0:
                if failed:
                    future.set_exception(failed[0])
                else:
                    future.set_result(list(tensors))

        for p in pending:
            p.add_done_callback(one_done)
        return SwitchWork(future)



def _own_interface(agent: Agent) -> str | None:
    """The interface gloo binds: GLOO_SOCKET_IFNAME if set, else the one holding this worker's
    job address (gloo would otherwise take the host name's address, 127.0.0.1 in Mininet)."""
    if os.environ.get("GLOO_SOCKET_IFNAME"):
        return os.environ["GLOO_SOCKET_IFNAME"]
    members = {m.get("rank"): m.get("ip") for m in agent.session.job.get("members", [])}
    ip = members.get(agent.rank)
    return interface_of(ip) if ip else None


def _switchable_tensor(t: torch.Tensor) -> bool:
    return (t.device.type == "cpu" and t.layout == torch.strided and t.dtype in SWITCHED_DTYPES
            and not t.requires_grad)


def _reduce_in_place(agent: Agent, t: torch.Tensor, average: bool) -> Any:
    """Queue one tensor's allreduce on the agent; the result lands in ``t`` itself. float32 and
    int32 contiguous tensors are read and written where they are; others go through a float32
    (or contiguous) copy and back."""
    key = f"{t.data_ptr():x}:{t.numel()}"      # DDP's buckets keep their storage: one residual each
    if t.is_contiguous() and t.dtype in (torch.float32, torch.int32):
        array = t.detach().numpy().reshape(-1)
        return agent.allreduce_async(array, average, key, out=array)
    staged = t.detach().to(torch.float32 if t.is_floating_point() else t.dtype).contiguous()
    array = staged.numpy().reshape(-1)
    future = agent.allreduce_async(array, average, key, out=array)
    return _then(future, lambda: t.copy_(staged))


def _then(future: Any, action: Callable[[], object]) -> Any:
    """A concurrent future that completes after ``action`` ran on ``future``'s success."""
    import concurrent.futures
    after: concurrent.futures.Future[None] = concurrent.futures.Future()

    def done(f: Any) -> None:
        try:
            f.result()
            action()
            after.set_result(None)
        except BaseException as e:
            after.set_exception(e)

    future.add_done_callback(done)
    return after


def _gloo_backend(store: dist.Store, rank: int, size: int, timeout: datetime.timedelta,
                  interface: str | None) -> Any:
    options = ProcessGroupGloo._Options()  # type: ignore[attr-defined]  # (not in torch's stubs)
    options._timeout = timeout
    device = ProcessGroupGloo.create_device(interface=interface) if interface else \
        ProcessGroupGloo.create_default_device()
    options._devices = [device]
    return ProcessGroupGloo(dist.PrefixStore("p4reduce-gloo/", store), rank, size, options)


def _agree_on_job(store: dist.Store, rank: int, size: int, options: Settings) -> str | None:
    """Rank 0 makes sure the job exists for `size` workers (creating it when absent or ended) and
    tells the others, with the credential it got when it created the job; every rank returns that
    credential (None: use the usual sources) or raises rank 0's error. Rank 0 hosts the store when
    the group rendezvouses through it, so on an error it waits (boundedly) until every rank has
    read the word before raising: the others fail with rank 0's reason, not a lost connection."""
    if rank == 0:
        try:
            word: dict[str, Any] = {"credential": _ensure_job(size, options)}
        except Exception as e:
            word = {"error": str(e)}
        store.set(_JOB_KEY, json.dumps(word))
        if "error" in word:
            deadline = time.monotonic() + READ_WAIT_S
            while store.add(_JOB_READ_KEY, 0) < size - 1 and time.monotonic() < deadline:
                time.sleep(0.05)
    else:
        word = json.loads(store.get(_JOB_KEY).decode())
        store.add(_JOB_READ_KEY, 1)
    if "error" in word:
        raise DistributedSetupError(f"p4reduce: rank {rank}: {word['error']}")
    return word.get("credential")


def _ensure_job(size: int, options: Settings) -> str | None:
    credential = options.credential or os.environ.get(CREDENTIAL_ENV) or None
    client = JobApiClient(options.controller, credential=credential)
    try:
        job = client.job(options.job)
    except JobApiError as e:
        if e.code not in ("job_ended", "no_such_job"):
            raise DistributedSetupError(f"job {options.job!r} at {options.controller}: {e}") from None
        created = client.create(options.job, size, options.mode or "dense", slots=options.slots)
        log.info("p4reduce: created job %r for %d workers", options.job, size)
        return str(created["credential"])
    except OSError as e:
        raise DistributedSetupError(f"the controller at {options.controller} does not answer ({e}): start "
                                    "`make run`, or set P4REDUCE_CONTROLLER") from None
    if int(job.get("workers", -1)) != size:
        raise DistributedSetupError(f"job {options.job!r} has {job.get('workers')} workers, the group has {size}: "
                                    "name another job (P4REDUCE_JOB), which rank 0 creates for the group")
    return None


def _create(backend_options: Any, pg_options: Any) -> Any:
    """The creator torch.distributed calls (extended API: pg_options may be our Options). The
    world group joins the switch job; a group made later (dist.new_group) is a subset of the
    world's ranks, which the job does not sum on its own: it is a gloo backend."""
    if pg_options is not None and not isinstance(pg_options, Options):
        raise TypeError(f"pg_options for the p4reduce backend must be p4reduce.distributed.Options, got "
                        f"{type(pg_options).__name__}")
    if dist.is_initialized():
        log.info("p4reduce: group %s of %d ranks runs on gloo (the switch job is the world's)",
                 getattr(backend_options, "group_id", "?"), backend_options.group_size)
        return _gloo_backend(backend_options.store, backend_options.group_rank, backend_options.group_size,
                             backend_options.timeout, _WORLD_INTERFACE.get("name"))
    return P4ReduceProcessGroup(backend_options.store, backend_options.group_rank, backend_options.group_size,
                                backend_options.timeout, pg_options)


def register() -> None:
    """Make "p4reduce" a torch.distributed backend (idempotent; `import p4reduce.distributed` does it)."""
    if BACKEND.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu"])


__all__ = ["BACKEND", "DistributedSetupError", "P4ReduceProcessGroup", "SwitchWork", "register"]
