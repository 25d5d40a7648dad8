"""The worker agent: join a job, then allreduce numpy arrays through the switch.

    from p4reduce.worker import Agent
    with Agent("10.0.0.100:8090", "demo", compressor="fixedpoint") as agent:
        total = agent.allreduce(np.ones(1000, np.float32))       # sum over the job's workers
        fut = agent.allreduce_async(grad, average=True)          # concurrent.futures.Future

Calls run one at a time, in submission order, on one background thread (every worker must issue
the same sequence of allreduces).
"""
from __future__ import annotations

import concurrent.futures
import socket
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .communicator import Communicator
from .compressors import make_compressor
from .job import JobSession
from .memory import ErrorFeedback, NoMemory
from .reducer import AggregationError
from .streaming import RetryPolicy, UdpReducer


class Agent:
    """A joined worker with a UDP reducer and a compressor pipeline."""

    def __init__(self, controller: str, job: str, compressor: str = "fixedpoint",
                 error_feedback: bool | None = None, seed: int | None = None, bind_ip: str = "0.0.0.0",
                 udp_port: int = 0, advertise_ip: str | None = None, switch_addr: tuple[str, int] | None = None,
                 retry: RetryPolicy | None = None, compressor_options: dict[str, Any] | None = None,
                 loop: str | None = None, **join: Any):
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
        if retry is None:  # give up well before the controller would reclaim the job
            retry = RetryPolicy(deadline=max(1.0, self.session.lease_s))
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

    def _allreduce(self, a: np.ndarray, average: bool, key: str, out: np.ndarray | None = None) -> np.ndarray:
        try:
            return self.communicator.allreduce(a, average=average, key=key, out=out)
        except AggregationError as e:
            if self.session.ended:  # the controller's word on why is the most useful part
                raise AggregationError(f"{e} (the controller says: {self.session.ended})") from None
            raise

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.session.close()
        self.reducer.close()
        self.sock.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
