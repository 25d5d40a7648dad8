"""The worker agent: join a job, then allreduce numpy arrays through the switch.

    from p4reduce.worker import Agent
    with Agent("10.0.0.100:8090", "demo", compressor="fixedpoint") as agent:
        total = agent.allreduce(np.ones(1000, np.float32))       # sum over the job's workers
        fut = agent.allreduce_async(grad, average=True)          # concurrent.futures.Future

Calls run one at a time, in submission order, on one background thread (every worker must issue
the same sequence of allreduces).

When the switch stops answering within a call (no progress for ``switch_timeout_s``), every
worker of the job moves to the host fallback (worker/fallback.py: gloo over the job's members),
they agree there on the first call to redo, and the calls go on on gloo; ``path``/``path_reason``
and ``calls_by_path`` say where each call ran. Each rank tells the controller in its heartbeats;
once every rank is on the fallback and the switch serves, the controller resets the job's slots
(a new generation), and the ranks return to the switch together, after the same call (a vote
carried in the fallback's own messages). The fallback needs torch; without it a worker says so
once at join, and a switch failure is an AggregationError as before.
"""
from __future__ import annotations

import concurrent.futures
import logging
import socket
import time
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .communicator import Communicator
from .compressors import make_compressor
from .fallback import FallbackError, HostFallback, KeptInput, torch_missing
from .job import JobJoinError, JobSession
from .memory import ErrorFeedback, NoMemory
from .reducer import AggregationError
from .streaming import RetryPolicy, UdpReducer

log = logging.getLogger("p4reduce.worker")

SWITCH_TIMEOUT_S = 1.5   # no progress on any round for this long: the switch is gone, take the fallback


class Agent:
    """A joined worker with a UDP reducer, a compressor pipeline and a host fallback."""

    def __init__(self, controller: str, job: str, compressor: str = "fixedpoint",
                 error_feedback: bool | None = None, seed: int | None = None, bind_ip: str = "0.0.0.0",
                 udp_port: int = 0, advertise_ip: str | None = None, switch_addr: tuple[str, int] | None = None,
                 retry: RetryPolicy | None = None, compressor_options: dict[str, Any] | None = None,
                 loop: str | None = None, fallback: bool | None = None, fallback_port: int | None = None,
                 switch_timeout_s: float = SWITCH_TIMEOUT_S, fallback_agree_timeout_s: float | None = None,
                 fallback_peer_wait_s: float = 1800.0, **join: Any):
        if isinstance(fallback_peer_wait_s, bool) or not isinstance(fallback_peer_wait_s, (int, float)) \
                or not 0 <= fallback_peer_wait_s <= 86400:
            raise ValueError(f"fallback_peer_wait_s={fallback_peer_wait_s!r}: seconds, 0..86400")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.sock.bind((bind_ip, udp_port))
        except OSError as e:
            self.sock.close()
            raise OSError(f"cannot bind the worker's UDP socket to {bind_ip}:{udp_port}: {e}") from None
        port = self.sock.getsockname()[1]
        try:
            self.session = JobSession(controller, job, udp_port=port, ip=advertise_ip, **join)
        except BaseException:
            self.sock.close()
            raise
        try:
            self.params = self.session.params(switch_addr)
        except BaseException:      # an unusable job description or --switch: leave, do not linger
            self.session.close()
            self.sock.close()
            raise
        self._switch_addr = switch_addr
        self.path, self.path_reason = "switch", ""
        self.calls_by_path = {"switch": 0, "fallback": 0}
        # each stay on the host fallback: {"from_call", "back_at_call" (None while on it), "reason",
        # "left_at", "back_at" (wall clock)}
        self.episodes: list[dict[str, Any]] = []
        self._call = 0                               # index of the next call, as every rank counts them
        self._kept: dict[int, KeptInput] = {}        # inputs of the current and the previous call
        self._episode = 0                            # times the job left the switch (same on every rank)
        self.fallback = self._make_fallback(fallback, fallback_port, fallback_agree_timeout_s, fallback_peer_wait_s)
        if self.params.slot_count == 0:     # admitted without slots: the fallback until some free up
            why = str(self.session.job.get("path_reason") or "the job holds no slots on the switch")
            if self.fallback is None:
                self.session.close()
                self.sock.close()
                raise JobJoinError(f"job {job!r}: {why}, and this worker has no host fallback "
                                   f"({torch_missing() or 'fallback=False'})")
            self.path, self.path_reason = "fallback", why
            self.episodes.append({"from_call": 0, "back_at_call": None, "reason": why, "left_at": time.time()})
            self.session.report_path("fallback", why)
        if retry is None:  # with a fallback, give up on the switch soon; without, before the lease ends
            deadline = switch_timeout_s if self.fallback is not None else max(1.0, self.session.lease_s)
            retry = RetryPolicy(deadline=deadline)
        try:
            self.reducer = UdpReducer(self.params, sock=self.sock, retry=retry, loop=loop)
        except BaseException:
            self.session.close()
            self.sock.close()
            raise
        comp, ef = make_compressor(compressor, seed=self.params.job_id if seed is None else seed,
                                   rank=self.params.rank, **(compressor_options or {}))
        use_ef = ef if error_feedback is None else error_feedback
        self.communicator = Communicator(self.reducer, comp, ErrorFeedback() if use_ef else NoMemory())
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"agent-{job}-{self.rank}")

    @property
    def rank(self) -> int:
        return self.params.rank

    @property
    def n_workers(self) -> int:
        return self.params.n_workers

    def allreduce(self, array: ArrayLike, average: bool = False, key: str = "",
                  out: np.ndarray | None = None) -> np.ndarray:
        """Sum (or mean) over the job's workers; float32 compressed, int32 exact. Blocks.
        `out`: where the result goes (Communicator.allreduce), e.g. a buffer reused every call,
        or the input itself (in place)."""
        # the caller waits for the result, so the input is read where it is (no copy); the call
        # still runs on the agent's thread, after the async calls submitted before it
        return self._pool.submit(self._allreduce, np.asarray(array), average, key, out).result()

    def allreduce_async(self, array: ArrayLike, average: bool = False, key: str = "",
                        out: np.ndarray | None = None) -> concurrent.futures.Future[np.ndarray]:
        """Like :meth:`allreduce`, returning a Future. Without ``out`` the array is copied now;
        with ``out`` (a buffer, or the array itself) it is read where it is when the call runs,
        so the caller leaves both untouched until the Future completes (torch.distributed's
        contract for an async collective)."""
        a = np.array(array, copy=True) if out is None else np.asarray(array)
        return self._pool.submit(self._allreduce, a, average, key, out)

    def _make_fallback(self, wanted: bool | None, port: int | None, agree_s: float | None,
                       peer_wait_s: float) -> HostFallback | None:
        if wanted is False:
            return None
        why = torch_missing()
        if why:
            if wanted:
                raise ValueError(f"fallback=True: {why}")
            log.warning("job %s rank %d: no host fallback: %s", self.session.name, self.rank, why)
            return None
        members = {int(m["rank"]): str(m["ip"]) for m in self.session.job.get("members", [])
                   if isinstance(m, dict) and "rank" in m and "ip" in m}
        if agree_s is None:   # a rank that has not arrived by twice its lease is one the controller expired
            agree_s = min(30.0, max(5.0, 2 * self.session.lease_s))
        return HostFallback(self.params.job_id, self.rank, self.n_workers, members, port=port,
                            timeout_s=max(60.0, self.session.lease_s), agree_timeout_s=agree_s,
                            instance=str(self.session.job.get("created_at", "")),
                            alive=self.session.peers_alive, peer_wait_s=peer_wait_s)

    def _allreduce(self, a: np.ndarray, average: bool, key: str, out: np.ndarray | None = None) -> np.ndarray:
        call = self._call
        if self.path == "fallback":
            assert self.fallback is not None
            try:
                result, everyone = self.fallback.allreduce(a, average, out=out, ready=self.session.switch_ready())
            except FallbackError as e:
                raise self._naming_the_stopped_peer(AggregationError(
                    f"{self.params.describe()}: call {call} on the host fallback: {e}")) from None
            self._done(call, "fallback")
            if everyone:
                self._return_to_switch(call + 1)
            return result
        if self.fallback is not None:   # the input as it is now: a redo must not read a half-written out=a
            self._keep(call, a, average)
        try:
            result = self.communicator.allreduce(a, average=average, key=key, out=out)
        except AggregationError as e:
            if self.fallback is None:
                raise self._naming_the_stopped_peer(e) from None
            return self._recover(call, e, out)
        self._done(call, "switch")
        return result

    def _naming_the_stopped_peer(self, error: AggregationError) -> AggregationError:
        """The error completed with the peer that stopped, as the controller knows it (its reason
        once it has ended the job, else the ranks that left or stopped beating)."""
        if "the controller says" in str(error):
            return error
        who = self.session.who_stopped()
        return AggregationError(f"{error}; {who}") if who else error

    def _keep(self, call: int, a: np.ndarray, average: bool) -> None:
        """Copy the call's input into one of two buffers kept across calls (no fresh pages per call)."""
        old = self._kept.get(call - 2)
        if old is not None and old.array.dtype == a.dtype and old.array.size == a.size:
            buf = old.array
        else:
            buf = np.empty(a.size, a.dtype)
        np.copyto(buf, a.reshape(-1))
        self._kept.pop(call - 2, None)
        self._kept[call] = KeptInput(buf, average, a.shape)

    def _done(self, call: int, path: str) -> None:
        self._call = call + 1
        self.calls_by_path[path] += 1

    def _return_to_switch(self, call: int) -> None:
        """Every rank voted to return (the controller re-armed the job: a new wire token, its slots
        reset): from `call` on, the switch again, with that token and every slot's version from
        the start, as on the switch."""
        self.params = self.session.params(self._switch_addr)    # the re-armed job: its token, its slots
        self.reducer.rearm(self.params)
        if self.episodes:
            self.episodes[-1].update(back_at_call=call, back_at=time.time())
        self.path, self.path_reason = "switch", ""
        self.session.report_path("switch")
        log.warning("job %s rank %d: back on the switch from call %d (generation %d)", self.session.name,
                    self.rank, call, self.session.generation)

    def _recover(self, call: int, error: AggregationError, out: np.ndarray | None) -> np.ndarray:
        """The switch failed in `call`: agree with the other ranks on the first call to redo, redo it
        (and this one) on the fallback; every later call stays there."""
        assert self.fallback is not None
        self.path = "fallback"
        self.path_reason = f"the switch stopped answering in call {call}: {error}"
        log.warning("job %s rank %d: call %d moves to the host fallback: %s", self.session.name, self.rank,
                    call, error)
        self.session.report_path("fallback", f"the switch stopped answering in call {call}")
        self.episodes.append({"from_call": call, "back_at_call": None, "reason": str(error), "left_at": time.time()})
        episode, self._episode = self._episode, self._episode + 1
        try:
            first = self.fallback.agree(call, gone=lambda: self.session.ended, episode=episode)
            if first == call - 1:     # this rank completed that call; the others need it redone
                prev = self._kept.get(call - 1)
                if prev is None:
                    raise FallbackError(f"call {call - 1}'s input was not kept")
                self.fallback.allreduce(prev.array, prev.average)
            mine = self._kept[call]
            result, _ = self.fallback.allreduce(mine.array.reshape(mine.shape), mine.average, out=out)
        except FallbackError as e:
            raise self._naming_the_stopped_peer(AggregationError(
                f"{self.params.describe()}: call {call}: the switch failed ({error}) and the host fallback could "
                f"not take over: {e}")) from None
        self._done(call, "fallback")
        return result

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        if self.fallback is not None:
            self.fallback.close()
        self.session.close()
        self.reducer.close()
        self.sock.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
