"""An in-process stand-in for the switch: N worker threads meet at a barrier and get the sums.

Used to test compressors and training without a network. It computes what the switch computes
(saturating int32 sums, exponent max) and counts the bytes each worker would send with
:class:`worker.wirecost.WireCost`, including the exponent-agreement round the wire needs.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from p4reduce.worker.reducer import AggregationError, BlockSource, Reducer, fill_out, saturate_int32
from p4reduce.worker.wirecost import WireCost

T = TypeVar("T")


class SimulatedSwitch:
    """Shared state of one simulated job; :meth:`reducer` hands out one Reducer per rank."""

    def __init__(self, n_workers: int, wire: WireCost, timeout: float = 30.0):
        if n_workers < 1:
            raise ValueError(f"n_workers must be >= 1, got {n_workers}")
        self.n_workers = n_workers
        self.timeout = timeout
        self.wire = wire          # the job's packet layout (and mode), as a real job has one
        self._barrier = threading.Barrier(n_workers, action=self._combine)
        self._inputs: list = [None] * n_workers
        self._result: np.ndarray | None = None
        self._error: str | None = None
        self.saturated = 0  # elements whose true sum did not fit in int32 (must stay 0)

    def reducer(self, rank: int) -> SimulatedReducer:
        if not 0 <= rank < self.n_workers:
            raise ValueError(f"rank must be in 0..{self.n_workers - 1}, got {rank}")
        return SimulatedReducer(self, rank)

    def _combine(self) -> None:
        shapes = {(tag, a.shape, a.dtype.str) for tag, a in self._inputs}
        if len(shapes) != 1:
            self._error = f"workers called different operations/sizes: {sorted(map(str, shapes))}"
            return
        self._error = None
        tag = self._inputs[0][0]
        stack = np.stack([a for _, a in self._inputs])
        if tag == "max":
            self._result = stack.max(axis=0)
        elif tag == "fsum":
            self._result = stack.astype(np.float64).sum(axis=0).astype(np.float32)
        else:
            total = stack.astype(np.int64).sum(axis=0)
            self.saturated += int(np.count_nonzero((total > 2**31 - 1) | (total < -2**31)))
            self._result = saturate_int32(total)

    def exchange(self, rank: int, tag: str, arr: np.ndarray) -> np.ndarray:
        """Contribute ``arr``; returns the combination over all ranks once everyone contributed."""
        self._inputs[rank] = (tag, arr)
        try:
            self._barrier.wait(self.timeout)
            result, error = self._result, self._error
            self._barrier.wait(self.timeout)  # everyone has read the result before the next round
        except threading.BrokenBarrierError:
            raise AggregationError(f"simulated job: rank {rank} gave up after {self.timeout}s waiting for "
                                   "the other workers (a peer crashed or called a different sequence)") from None
        if error or result is None:
            raise AggregationError(f"simulated job: rank {rank}: {error or 'no result'}")
        return result.copy()

    def abort(self) -> None:
        """Wake every waiting worker with an AggregationError (a peer died)."""
        self._barrier.abort()


class SimulatedReducer(Reducer):
    """Rank ``rank``'s view of a :class:`SimulatedSwitch`."""

    def __init__(self, switch: SimulatedSwitch, rank: int):
        self.switch = switch
        self.rank = rank
        self.n_workers = switch.n_workers
        self.lanes = switch.wire.lanes
        self.bytes_sent = 0

    def aggregate(self, source: BlockSource, out: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray | None]:
        nb = source.n_blocks
        exps = None
        if source.proposals is not None:
            exps = self.switch.exchange(self.rank, "max", np.asarray(source.proposals, dtype=np.int8))
            self.bytes_sent += self.switch.wire.bytes_for_agreement(nb)
        lanes = source.take(np.arange(nb), exps, self.lanes)
        self.bytes_sent += self.switch.wire.bytes_for(lanes)
        return fill_out(self.switch.exchange(self.rank, "sum", lanes), out), exps


class FloatReference:
    """The float32 allreduce a switch cannot do: the baseline compressors are measured against."""

    def __init__(self, reducer: SimulatedReducer):
        self.reducer = reducer
        self.n_workers = reducer.n_workers

    def allreduce(self, array: npt.ArrayLike, average: bool = False, key: str = "") -> np.ndarray:
        a = np.asarray(array, dtype=np.float32)
        x = a.reshape(-1)
        lanes = self.reducer.lanes
        dense = np.ones((-(-x.size // lanes), lanes), np.int32)
        self.reducer.bytes_sent += self.reducer.switch.wire.bytes_for(dense)
        total = self.reducer.switch.exchange(self.reducer.rank, "fsum", x)
        return (total / np.float32(self.n_workers) if average else total).reshape(a.shape)


def run_workers(n_workers: int, fn: Callable[[SimulatedReducer], T], wire: WireCost,
                timeout: float = 60.0) -> list[T]:
    """Run ``fn(reducer)`` on n_workers threads sharing one simulated switch; list of results by rank.

    An exception in one worker aborts the job (the others get an AggregationError) and is re-raised.
    """
    switch = SimulatedSwitch(n_workers, wire, timeout=timeout)
    results: list = [None] * n_workers
    errors: list = [None] * n_workers

    def body(rank):
        try:
            results[rank] = fn(switch.reducer(rank))
        except BaseException as exc:
            errors[rank] = exc
            if not isinstance(exc, AggregationError):  # a crash: wake the peers waiting for it
                switch.abort()

    threads = [threading.Thread(target=body, args=(r,), name=f"simworker-{r}") for r in range(n_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = next((e for e in errors if e is not None and not isinstance(e, AggregationError)), None)
    first = first or next((e for e in errors if e is not None), None)
    if first is not None:
        raise first
    return results
