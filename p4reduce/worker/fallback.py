"""The host fallback: a job's allreduce on gloo (torch.distributed's engine) when the switch cannot
serve it, and the agreement that lets every worker redo the same call there.

Why gloo: it is the engine a DDP user already runs, exact for int32 and float32 sums, and it needs
nothing from the switch but a path between the hosts. The group is created lazily, the first
time a call needs it (rank 0's job address holds its store), and kept.

Which call is redone. Calls on one agent are sequential and none completes without every rank's
contribution, so when the switch fails no rank is more than one call ahead of another: each rank
is in call m or in call m+1 (having completed m). Every rank tells the store which call it is in;
m is the smallest. Ranks in m+1 redo m with the copy of m's input they kept (and drop the result,
which they already have), then everyone redoes its own current call: the same sequence of gloo
calls on every rank, and no rank mixes switch and fallback results within a call. A rank that
never tells (its process died) is named in the error after ``agree_timeout_s``; one that the
controller says is alive (late: an evaluation or a checkpoint between its calls) is waited for.
"""
from __future__ import annotations

import datetime
import json
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import gloo_exit
from .communicator import deliver
from .netif import interface_of

log = logging.getLogger("p4reduce.worker")

FALLBACK_PORT_BASE = 47000      # the fallback store's TCP port on rank 0's host: base + job_id % 10000


class FallbackError(RuntimeError):
    """The fallback could not run the call (no torch, a rank missing, gloo failed); says which."""


def torch_missing() -> str | None:
    """Why the fallback cannot run here (None when it can): torch is its one requirement."""
    try:
        import torch
        import torch.distributed  # noqa: F401
    except ImportError as e:
        return f"torch is not installed ({e}): pip install 'p4reduce[torch]'"
    return None


@dataclass
class KeptInput:
    """A call's input, kept until the next call completes (the redo of a failed call reads it)."""
    array: np.ndarray           # flat copy
    average: bool
    shape: tuple[int, ...]      # the caller's


def default_port(job_id: int) -> int:
    return FALLBACK_PORT_BASE + job_id % 10000


class HostFallback:
    """gloo over the job's members: ``allreduce`` for one call, ``recover`` to agree on the redo."""

    def __init__(self, job_id: int, rank: int, n_workers: int, members: dict[int, str], port: int | None = None,
                 timeout_s: float = 60.0, agree_timeout_s: float = 30.0, instance: str = "",
                 alive: Callable[[list[int]], bool] = lambda ranks: False, peer_wait_s: float = 1800.0) -> None:
        """`instance`: what tells this job from an earlier one with the same id (its creation time):
        the store's keys carry it, so a store left by an earlier job is never read as this one's.
        `alive(ranks)`: whether the controller confirms those ranks are still members whose lease
        holds; ranks that have not arrived after `agree_timeout_s` are waited for while it says so
        (a peer late from a long evaluation or checkpoint, not a stopped one), up to `peer_wait_s`
        in all (torch's default collective timeout: gloo would wait as long)."""
        self.job_id, self.rank, self.n = job_id, rank, n_workers
        self.prefix = f"p4reduce-fallback/{job_id}/{instance}"
        self.members = members
        self.port = default_port(job_id) if port is None else port
        self.timeout_s, self.agree_timeout_s = timeout_s, agree_timeout_s
        self.alive, self.peer_wait_s = alive, peer_wait_s
        self._late_told: tuple[float, list[int]] | None = None
        self._store: Any = None
        self._pg: Any = None
        self.calls = 0

    # ---- the store and the group, created when first needed ------------------------------------
    def _store_client(self, started: float | None = None) -> Any:
        """Rank 0's store (made by rank 0 itself); `started`: when this wait for the peers began."""
        if self._store is not None:
            return self._store
        why = torch_missing()
        if why:
            raise FallbackError(f"the host fallback cannot run: {why}")
        import torch.distributed as dist
        if 0 not in self.members or self.rank not in self.members:
            raise FallbackError("the host fallback needs every member's address from the job description")
        started = time.monotonic() if started is None else started
        while True:
            if self.rank != 0 and not self._wait_for_store_port(started):
                raise FallbackError(f"rank 0's fallback store at {self.members[0]}:{self.port} cannot be reached "
                                    f"within {time.monotonic() - started:.0f} s (rank 0 stopped, or no path to it)")
            try:
                self._store = dist.TCPStore(self.members[0], self.port, self.n, is_master=self.rank == 0,
                                            timeout=datetime.timedelta(seconds=self.agree_timeout_s),
                                            wait_for_workers=False)
                return self._store
            except (RuntimeError, ValueError, OSError) as e:
                # rank 0 makes its store when it first needs the fallback: a late rank 0 is waited for
                if self.rank != 0 and self._late_but_alive([0], started):
                    continue
                raise FallbackError(f"rank 0's fallback store at {self.members[0]}:{self.port} cannot be reached "
                                    f"within {time.monotonic() - started:.0f} s (rank 0 stopped, or no path to "
                                    f"it): {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None

    def _wait_for_store_port(self, started: float) -> bool:
        """Wait until rank 0's store accepts connections, quietly (c10d's own retries print a trace
        each): at most `agree_timeout_s`, or longer while the controller says rank 0 is alive.
        False: it never did."""
        deadline = time.monotonic() + self.agree_timeout_s
        while True:
            try:
                socket.create_connection((self.members[0], self.port), timeout=1.0).close()
                return True
            except OSError:
                pass
            if time.monotonic() > deadline:
                if not self._late_but_alive([0], started):
                    return False
                deadline = time.monotonic() + min(self.agree_timeout_s, 2.0)
            time.sleep(0.1)

    def _late_but_alive(self, missing: list[int], started: float) -> bool:
        """Whether to go on waiting for ranks that have not arrived: the controller says they are
        alive and the wait is still within `peer_wait_s`."""
        if time.monotonic() - started >= self.peer_wait_s or not self.alive(missing):
            return False
        if (started, missing) != self._late_told:      # once per wait and set of ranks
            self._late_told = (started, missing)
            who = f"rank{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}"
            log.warning("job %s rank %d: waiting for %s: alive but not in this call yet (late, not stopped)",
                        self.job_id, self.rank, who)
        return True

    def _group(self) -> Any:
        if self._pg is not None:
            return self._pg
        import torch.distributed as dist
        from torch._C._distributed_c10d import ProcessGroupGloo
        gloo_exit.install()             # gloo's threads can otherwise abort this process at exit
        store = self._store_client()
        try:
            options = ProcessGroupGloo._Options()  # type: ignore[attr-defined]  # (not in torch's stubs)
            options._timeout = datetime.timedelta(seconds=self.timeout_s)
            ifname = interface_of(self.members[self.rank])
            options._devices = [ProcessGroupGloo.create_device(interface=ifname) if ifname
                                else ProcessGroupGloo.create_default_device()]
            self._pg = ProcessGroupGloo(dist.PrefixStore(f"{self.prefix}/gloo", store),
                                        self.rank, self.n, options)
        except (RuntimeError, ValueError, OSError) as e:
            raise FallbackError(f"the host fallback (gloo, store at {self.members[0]}:{self.port}) could not "
                                f"start: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
        log.warning("job %s rank %d: host fallback ready (gloo, store at %s:%d)", self.job_id, self.rank,
                    self.members[0], self.port)
        return self._pg

    # ---- one call ----------------------------------------------------------------------------------
    def allreduce(self, array: np.ndarray, average: bool, out: np.ndarray | None = None,
                  ready: bool = False) -> tuple[np.ndarray, bool]:
        """Sum (or mean: float divides, int32 floor-divides) of ``array`` over the job's ranks,
        exactly as gloo adds; into ``out`` when given. ``array`` is not modified.

        Also a vote, in the same message (one more element): ``ready`` says this rank may return
        to the switch; the second value is whether every rank said so, the same on every rank, so
        all of them leave the fallback after the same call."""
        import torch
        pg = self._group()
        a = np.asarray(array)
        if a.dtype not in (np.int32, np.float32):
            a = a.astype(np.float32)
        work = np.empty(a.size + 1, a.dtype)
        work[:-1] = a.reshape(-1)
        work[-1] = 1 if ready else 0
        try:
            pg.allreduce([torch.from_numpy(work)]).wait()
        except RuntimeError as e:
            raise FallbackError(f"the host fallback's allreduce failed: {e}") from None
        self.calls += 1
        everyone = int(work[-1]) == self.n
        result = work[:-1]
        if average:
            if result.dtype == np.int32:
                np.floor_divide(result, np.int32(self.n), out=result)
            else:
                result /= np.float32(self.n)
        return deliver(result.reshape(a.shape).astype(np.asarray(array).dtype, copy=False), out), everyone

    # ---- agreeing on the redo ------------------------------------------------------------------------
    def agree(self, call: int, gone: Callable[[], str | None] = lambda: None, episode: int = 0) -> int:
        """Tell the others this rank is in `call` (0-based); return the smallest call any rank is in
        (the one every rank redoes first). FallbackError naming the ranks that never told, at the
        timeout or as soon as `gone()` gives a reason to stop waiting (the controller ended the job).
        `episode`: how many times the job left the switch before (every rank counts the same), so a
        later failure never reads an earlier one's answers."""
        started = time.monotonic()          # one wait for the peers: reaching the store, then their word
        self._store_client(started)
        at = f"{self.prefix}/at/{episode}"
        self._store.set(f"{at}/{self.rank}", json.dumps({"call": call}))
        deadline = time.monotonic() + self.agree_timeout_s
        calls: dict[int, int] = {}
        while len(calls) < self.n:
            try:
                for r in range(self.n):
                    key = f"{at}/{r}"
                    if r not in calls and self._store.check([key]):
                        calls[r] = int(json.loads(self._store.get(key).decode())["call"])
            except RuntimeError as e:     # rank 0's store went away (it gave up, or died)
                raise FallbackError(self._missing(calls, "before rank 0 gave up waiting for it and closed the "
                                                         f"fallback's store ({str(e).splitlines()[0][:80]})")) \
                    from None
            if len(calls) < self.n and time.monotonic() > deadline:
                if self._late_but_alive(sorted(set(range(self.n)) - set(calls)), started):
                    deadline = time.monotonic() + min(self.agree_timeout_s, 2.0)   # and ask again
                else:
                    raise FallbackError(self._missing(calls, f"within {time.monotonic() - started:.0f} s"))
            reason = gone() if len(calls) < self.n else None
            if reason:
                raise FallbackError(self._missing(calls, f"(the controller says: {reason})"))
            time.sleep(0.02)
        low = min(calls.values())
        if max(calls.values()) > low + 1:     # cannot happen: no call completes without every rank
            raise FallbackError(f"ranks are more than one call apart ({calls}): the job's calls differ")
        return low

    def _missing(self, calls: dict[int, int], how: str) -> str:
        missing = sorted(set(range(self.n)) - set(calls))
        return (f"rank{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} did not reach the host "
                f"fallback {how}: stopped (crashed or left) or unreachable")

    def close(self) -> None:
        self._pg = None
        self._store = None
