"""A lossy, duplicating, reordering network between JobRuns (reference workers) and a switch,
for protocol tests.

Packets are lost, duplicated and delivered in random order, except that one worker's packets on
one slot stay in order (FIFO per (worker, slot), as on the single path between a host and its
switch): the assumption SwitchML's shadow copies rest on (docs/protocol.md section 7, "Limits").
So a retransmission can arrive after other workers moved on to the slot's other copy (a stale
shadow-copy packet), but never after its own sender's next contribution on that slot.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from p4reduce.protocol.wire import unpack_header
from testbed.reference_worker import JobRun

if TYPE_CHECKING:
    from testbed.switch_model import SwitchModel

# switch(job_id, rank, payload) -> [(job_id, rank, result payload), ...]
SwitchFn = Callable[[int, int, bytes], list[tuple[int, int, bytes]]]


class StalledError(RuntimeError):
    """The job made no progress through many timeouts."""


def _slot(payload: bytes) -> int:
    return unpack_header(payload)[6]


class LossyNetwork:
    def __init__(self, switch: SwitchFn, seed: int = 0, loss: float = 0.0, dup: float = 0.0,
                 spurious_timeout: float = 0.0, reorder: bool = True):
        self.switch = switch
        self.rng = np.random.default_rng(seed)
        self.loss, self.dup, self.spurious, self.reorder = loss, dup, spurious_timeout, reorder
        self.stats = {"sent": 0, "lost": 0, "duplicated": 0, "timeouts": 0, "retransmitted": 0}

    def _eligible(self, inflight) -> list[int]:
        """Indices deliverable now: any result, and the oldest packet of each (worker, slot)."""
        seen, out = set(), []
        for i, (direction, job, rank, payload) in enumerate(inflight):
            if direction == "down":
                out.append(i)
                continue
            key = (job, rank, _slot(payload))
            if key not in seen:
                seen.add(key)
                out.append(i)
        return out

    def run(self, runs: dict[int, JobRun], max_timeouts: int = 500) -> None:
        inflight: list[tuple[str, int, int, bytes]] = []
        for job_id, run in runs.items():
            inflight += [("up", job_id, r, p) for r, p in run.start()]
        stalled = 0
        while not all(run.done() for run in runs.values()):
            if inflight and self.rng.random() < self.spurious:
                # one worker times out too early: its retransmissions duplicate live packets
                job_id = list(runs)[int(self.rng.integers(len(runs)))]
                rank = int(self.rng.integers(runs[job_id].n))
                resend = [(r, p) for r, p in runs[job_id].retransmissions() if r == rank]
                self.stats["retransmitted"] += len(resend)
                inflight += [("up", job_id, r, p) for r, p in resend]
                continue
            if not inflight:
                self.stats["timeouts"] += 1
                stalled += 1
                if stalled > max_timeouts:
                    raise StalledError(f"no progress after {max_timeouts} timeouts")
                for job_id, run in runs.items():
                    resend = run.retransmissions()
                    self.stats["retransmitted"] += len(resend)
                    inflight += [("up", job_id, r, p) for r, p in resend]
                continue
            if self.reorder:
                eligible = self._eligible(inflight)
                i = eligible[int(self.rng.integers(len(eligible)))]
            else:
                i = 0
            item = inflight.pop(i)
            if self.rng.random() < self.loss:
                self.stats["lost"] += 1
                continue
            if self.rng.random() < self.dup:
                self.stats["duplicated"] += 1
                inflight.insert(i, item)        # same place: per (worker, slot) order is kept
            direction, job_id, rank, payload = item
            if direction == "up":
                self.stats["sent"] += 1
                for out_job, out_rank, out in self.switch(job_id, rank, payload):
                    inflight.append(("down", out_job, out_rank, out))
            else:
                sends = runs[job_id].on_result(rank, payload)
                if sends:
                    stalled = 0
                inflight += [("up", job_id, r, p) for r, p in sends]


def model_switch(model: SwitchModel) -> SwitchFn:
    """Adapter: a testbed.switch_model.SwitchModel as the switch of a LossyNetwork."""
    def switch(job_id: int, rank: int, payload: bytes):
        addr = model.worker_of(job_id, rank)
        out = model.receive(addr.ip, addr.port, payload)
        by_addr = {(a.ip, a.port): (a.job_id, a.rank) for a in model.workers.values()}
        return [(*by_addr[(d.ip, d.port)], d.payload) for d in out.deliveries]
    return switch
