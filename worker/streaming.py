"""Reliable, self-clocked streaming of aggregation packets over a plain UDP socket.

Implements the worker side of docs/protocol.md (section 7) as a :class:`~worker.reducer.Reducer`
(which block goes on which slot, and which result answers it, is worker/streams.py; this module
sends, waits and retransmits):

* block ``b`` of a tensor runs on slot ``b mod S`` (``S`` = the job's slot count, or fewer for
  small tensors); each slot has one packet outstanding, and its result releases the slot for the
  next block (SwitchML's self-clocking: the switch never waits for a worker that has work);
* float data: the exponent for a block rides in the previous round's packet; the first block of
  each stream is preceded by a pre-round that only agrees on its exponent (and, in sparse mode,
  on where the stream starts);
* sparse mode (OmniReduce): zero sub-blocks are left out, a worker names its next non-zero block
  in ``next_offset`` and the switch's minimum tells everyone where to go, so blocks that are zero
  on every worker are never sent;
* loss: a slot whose result does not come within a timeout is retransmitted (flag RETX) with
  exponential backoff; the timeout adapts to the measured round trips (worker/rto.py, RFC 6298);
  results that are not the round a slot waits for (late duplicates) are ignored; when a slot
  makes no progress for ``deadline`` seconds the call raises an
  :class:`~worker.reducer.AggregationError` naming job, rank, slot and offset -- never a hang.
"""
from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from p4reduce.protocol import constants as C
from p4reduce.protocol.wire import Layout, with_flags

from .reducer import AggregationError, BlockSource, Reducer
from .rto import RtoEstimator
from .streams import StreamWindow


@dataclass
class JobParams:
    """Everything a worker needs to talk to the switch for one job (from the job API)."""

    job_id: int
    rank: int
    n_workers: int
    slot_count: int
    switch_ip: str
    switch_port: int = C.AGG_UDP_PORT
    sparse: bool = False
    lanes: int = C.LANES
    subblock: int = C.SUBBLOCK
    name: str = ""

    def describe(self) -> str:
        return f"job {self.name or '?'} (id {self.job_id}) rank {self.rank}"


@dataclass
class RetryPolicy:
    """Retransmission timing (docs/worker.md, "Loss"); all in seconds.

    ``timeout``: the retransmission timeout (RTO) before the first round-trip sample; afterwards
    the RTO adapts to the measured round trips (worker/rto.py, RFC 6298), kept within
    [``min_timeout``, ``max_timeout``]. Each timeout multiplies a slot's timer by ``backoff`` (up
    to ``max_timeout``). ``deadline``: a slot without progress for this long fails the call.
    ``adaptive=False`` restores a fixed ``timeout`` for every round (for comparisons).
    """

    timeout: float = 0.05
    backoff: float = 2.0
    max_timeout: float = 1.0
    deadline: float = 10.0
    min_timeout: float = 0.01
    adaptive: bool = True

    def estimator(self) -> RtoEstimator:
        return RtoEstimator(self.timeout, min(self.min_timeout, self.timeout, self.max_timeout),
                            max(self.max_timeout, self.timeout), self.backoff)


@dataclass
class StreamStats:
    packets_sent: int = 0
    retransmissions: int = 0
    results: int = 0
    ignored: int = 0          # duplicates, stale results, packets of other jobs
    send_errors: int = 0
    rtt_samples: int = 0      # rounds sent once whose round trip fed the RTO estimator


class RoundTimers:
    """Retransmission timing of one call's open rounds, per slot: when its packet last left, when
    the stream last moved on, its timer (backed off on timeouts) and how often it was resent."""

    def __init__(self, slots: int, retry: RetryPolicy, estimator: RtoEstimator):
        self.retry, self.est = retry, estimator
        self.sent_at = [0.0] * slots
        self.progress = [0.0] * slots
        self.rto = [retry.timeout] * slots
        self.retries = [0] * slots

    def opened(self, s: int, now: float) -> None:
        self.rto[s] = self.est.rto if self.retry.adaptive else self.retry.timeout
        self.retries[s], self.sent_at[s], self.progress[s] = 0, now, now

    def answered(self, s: int, now: float) -> bool:
        """The round of `s` got its result; True when its round trip fed the RTO estimate (Karn:
        a retransmitted round's result is ambiguous)."""
        if self.retry.adaptive and self.retries[s] == 0:
            self.est.sample(now - self.sent_at[s])
            return True
        return False

    def next_expiry(self, open_rounds: list[bytes]) -> float:
        """When the first open round's timer runs out."""
        return min((self.sent_at[s] + self.rto[s] for s, p in enumerate(open_rounds) if p),
                   default=time.monotonic())

    def expired(self, open_rounds: list[bytes], now: float) -> list[int]:
        return [s for s, p in enumerate(open_rounds) if p and now >= self.sent_at[s] + self.rto[s]]

    def retransmitted(self, s: int, now: float) -> None:
        """Back off this slot's timer (and, adaptive, the shared RTO once per level)."""
        self.sent_at[s] = now
        self.retries[s] += 1
        if self.retry.adaptive:
            self.rto[s] = self.est.timed_out(self.rto[s])
        else:
            self.rto[s] = min(self.rto[s] * self.retry.backoff, self.retry.max_timeout)


class UdpReducer(Reducer):
    """One worker's aggregation over UDP, to a p4reduce switch (or testbed.switch_model behind UDP)."""

    def __init__(self, job: JobParams, sock: socket.socket | None = None,
                 bind: tuple[str, int] = ("0.0.0.0", 0), retry: RetryPolicy | None = None):
        if not 1 <= job.slot_count <= C.SLOT_MAX + 1:
            raise ValueError(f"slot_count must be 1..{C.SLOT_MAX + 1}, got {job.slot_count}")
        if not 0 <= job.rank < job.n_workers:
            raise ValueError(f"rank {job.rank} is outside 0..{job.n_workers - 1}")
        self.job = job
        self.rank = job.rank
        self.n_workers = job.n_workers
        self.lanes = job.lanes
        self.layout = Layout(job.lanes, job.subblock)
        self.retry = retry or RetryPolicy()
        self.bytes_sent = 0
        self.stats = StreamStats()
        self._own_sock = sock is None
        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind(bind)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        except OSError:
            pass
        sock.setblocking(False)
        self.sock = sock
        self.dest = (job.switch_ip, job.switch_port)
        self._last_ver = [1] * job.slot_count   # per slot, persists across calls (docs/protocol.md 7)
        # one RTO estimate for all slots (same path, same switch queue), kept across calls so the
        # next tensor starts with the timeout the last one measured
        self.rto_estimator = self.retry.estimator()

    @property
    def local_port(self) -> int:
        return self.sock.getsockname()[1]

    def close(self) -> None:
        if self._own_sock:
            self.sock.close()

    # ---- one aggregation ------------------------------------------------------------------
    def aggregate(self, source: BlockSource) -> tuple[np.ndarray, np.ndarray | None]:
        """Stream `source` through the switch (worker/streams.py schedules the rounds); this loop
        sends, waits for results and retransmits. Returns (sums, agreed exponents or None)."""
        win = StreamWindow(source, self.job.job_id, self.rank, self.job.slot_count, self.job.sparse,
                           self.layout, self._last_ver)
        if win.n_blocks == 0:
            return win.sums, win.exps
        timers = RoundTimers(win.S, self.retry, self.rto_estimator)
        self._drain()  # late results of earlier calls must not be taken for this call's rounds
        now = time.monotonic()
        for s, b in enumerate(win.first_blocks()):
            self._open(win, timers, s, b, None, now)
        buf = bytearray(C.HEADER_BYTES + win.L * C.LANE_BYTES + 64)
        while win.active:
            wait = timers.next_expiry(win.payload) - time.monotonic()
            if wait <= 0 or select.select([self.sock], [], [], wait)[0]:
                for n in self._received(buf):
                    self._take(win, timers, buf, n)
            self._retransmit_expired(win, timers, time.monotonic())
        return win.sums, win.exps

    def _open(self, win: StreamWindow, timers: RoundTimers, s: int, b: int, e: int | None, now: float) -> None:
        self._send(win.open_round(s, b, e))
        timers.opened(s, now)

    def _take(self, win: StreamWindow, timers: RoundTimers, buf: bytearray, n: int) -> None:
        """One datagram: a result that closes a round opens the stream's next one (or ends it)."""
        answer = win.take_result(buf, n, self.job.describe())
        if answer is None:
            self.stats.ignored += 1
            return
        self.stats.results += 1
        now = time.monotonic()
        if timers.answered(answer.slot, now):
            self.stats.rtt_samples += 1
        if answer.next_block is None:
            win.close(answer.slot)
        else:
            self._open(win, timers, answer.slot, answer.next_block, answer.exponent, now)

    def _retransmit_expired(self, win: StreamWindow, timers: RoundTimers, now: float) -> None:
        """Resend (flagged RETX) every open round whose timer ran out; fail a stream stuck too long."""
        for s in timers.expired(win.payload, now):
            if now - timers.progress[s] > self.retry.deadline:
                self._fail(s, win.block[s], win.ver[s], timers.retries[s], now - timers.progress[s])
            win.payload[s] = with_flags(win.payload[s], C.Flags.RETX)
            self.stats.retransmissions += 1
            self._send(win.payload[s])
            timers.retransmitted(s, now)

    def _received(self, buf: bytearray) -> Iterator[int]:
        """The length of each datagram waiting on the socket, read into `buf` one at a time."""
        while True:
            try:
                n = self.sock.recv_into(buf)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # e.g. ICMP port unreachable reported on the socket: like a loss
                self.stats.send_errors += 1
                return
            yield n

    def _drain(self) -> None:
        while True:
            try:
                self.sock.recv(65536)
                self.stats.ignored += 1
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return

    def _send(self, data: bytes) -> None:
        try:
            self.sock.sendto(data, self.dest)
        except (BlockingIOError, InterruptedError):  # socket buffer full: the timeout will resend
            self.stats.send_errors += 1
        except OSError:
            self.stats.send_errors += 1
        self.stats.packets_sent += 1
        self.bytes_sent += len(data) + C.FRAME_HEADER_BYTES

    def _fail(self, s: int, b: int, v: int, retries: int, waited: float) -> None:
        offset = s * self.lanes if b < 0 else b * self.lanes
        what = "exponent pre-round" if b < 0 else f"block {b}"
        raise AggregationError(
            f"{self.job.describe()}: slot {s} ({what}, offset {offset}, ver {v}) got no result from the "
            f"switch at {self.dest[0]}:{self.dest[1]} for {waited:.1f}s despite {retries} retransmissions: "
            f"a peer of the job crashed or left, or the switch is gone")
