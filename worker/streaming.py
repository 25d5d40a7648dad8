"""Reliable, self-clocked streaming of aggregation packets over a plain UDP socket.

Implements the worker side of docs/protocol.md (section 7) as a :class:`~worker.reducer.Reducer`:

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
from dataclasses import dataclass

import numpy as np

from p4reduce.protocol import constants as C
from p4reduce.protocol.wire import (
    Layout,
    bitmap_of,
    encode_subblocks,
    pack_header,
    read_subblocks,
    unpack_header,
    with_flags,
)

from . import quantize as qz
from .reducer import AggregationError, BlockSource, Reducer
from .rto import RtoEstimator

NONE = C.NEXT_NONE


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


def next_nonzero(nonzero: np.ndarray, streams: int) -> tuple[np.ndarray, np.ndarray]:
    """(first non-zero block of each stream or -1, next non-zero block on the same stream after
    each block or -1), for blocks assigned round-robin to ``streams`` streams."""
    nb = nonzero.size
    rows = -(-nb // streams)
    big = np.iinfo(np.int64).max
    grid = np.full(rows * streams, big, np.int64)
    grid[:nb] = np.where(nonzero, np.arange(nb), big)
    grid = grid.reshape(rows, streams)
    at_or_after = np.minimum.accumulate(grid[::-1], axis=0)[::-1]  # smallest non-zero b' >= b on the stream
    after = np.full_like(at_or_after, big)
    after[:-1] = at_or_after[1:]
    first = at_or_after[0]
    after = after.reshape(-1)[:nb]
    return np.where(first == big, -1, first), np.where(after == big, -1, after)


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
    def aggregate(self, source: BlockSource):
        job, L = self.job, self.lanes
        nb = source.n_blocks
        float_mode = source.proposals is not None
        sums = np.zeros((nb, L), np.int32)
        exps = np.full(nb, qz.EXP_MIN, np.int8) if float_mode else None
        if nb == 0:
            return sums, exps
        if nb * L >= NONE:
            raise ValueError(f"tensor of {nb * L} elements is too large for the protocol's 32-bit offsets; "
                             "split it into several allreduces")
        S = min(job.slot_count, nb)
        sparse = job.sparse
        full = self.layout.full_bitmap
        if sparse:
            first_nz, after_nz = next_nonzero(np.asarray(source.nonzero, bool), S)
        props = source.proposals.astype(np.int64) + C.EXP_BIAS if float_mode else None
        zeros = np.zeros(L, np.int32)

        # per-stream state
        block = [0] * S          # block of the outstanding round; -1 = exponent pre-round
        agreed = [0] * S         # exponent used to encode the outstanding block
        payload = [b""] * S
        sent_at = [0.0] * S
        rto = [self.retry.timeout] * S   # each slot's current timer (backed off on timeouts)
        adaptive = self.retry.adaptive
        est = self.rto_estimator
        progress = [0.0] * S
        retries = [0] * S
        ver = [0] * S
        active = S

        def proposal_code(b: int) -> int:
            return int(props[b]) if (float_mode and b >= 0) else 0

        def send(s: int, b: int, e: int | None, now: float) -> None:
            """Start the round of stream s for block b (-1: pre-round) with agreed exponent e."""
            v = 1 - self._last_ver[s]
            self._last_ver[s] = v
            if b < 0:  # pre-round: agree on the first block's exponent (and start, in sparse mode)
                offset = s * L
                if sparse:
                    nxt_b = int(first_nz[s])
                    lanes, bitmap = zeros, 0
                else:
                    nxt_b, lanes, bitmap = s, zeros, full
            else:
                offset = b * L
                lanes = source.take(np.array([b]), None if e is None else np.array([e], np.int8), L)[0]
                if sparse:
                    nxt_b = int(after_nz[b])
                    bitmap = int(bitmap_of(lanes, self.layout))
                else:
                    nxt_b = b + S if b + S < nb else -1
                    bitmap = full
            nxt = nxt_b * L if nxt_b >= 0 else NONE
            flags = C.Flags.EOT if nxt == NONE else 0
            hdr = pack_header(C.MsgType.CONTRIB, flags, job.job_id, job.rank, 0, v, s, offset, nxt,
                              proposal_code(nxt_b), 0, bitmap)
            body = encode_subblocks(lanes, bitmap, self.layout)
            block[s], agreed[s], ver[s] = b, (e if e is not None else 0), v
            payload[s] = hdr + body
            rto[s] = est.rto if adaptive else self.retry.timeout
            retries[s] = 0
            sent_at[s] = now
            progress[s] = now
            self._send(payload[s])

        self._drain()  # late results of earlier calls must not be taken for this call's rounds
        now = time.monotonic()
        for s in range(S):
            if float_mode:
                send(s, -1, None, now)
            else:
                send(s, s, None, now)

        buf = bytearray(C.HEADER_BYTES + L * C.LANE_BYTES + 64)
        while active:
            now = time.monotonic()
            wait = min((sent_at[s] + rto[s] for s in range(S) if payload[s]), default=now) - now
            if wait > 0:
                ready, _, _ = select.select([self.sock], [], [], wait)
            else:
                ready = True
            if ready:
                while True:
                    try:
                        n = self.sock.recv_into(buf)
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:  # e.g. ICMP port unreachable reported on the socket: like a loss
                        self.stats.send_errors += 1
                        break
                    if n < C.HEADER_BYTES:
                        self.stats.ignored += 1
                        continue
                    (mt, _flags, job_id, _rank, _count, v, s, offset, nxt, ecode, _r, bitmap) = unpack_header(buf)
                    if (mt != C.MsgType.RESULT or job_id != job.job_id or s >= S or not payload[s]
                            or v != ver[s] or offset != (s * L if block[s] < 0 else block[s] * L)):
                        self.stats.ignored += 1
                        continue
                    present = self.layout.present(bitmap)
                    if n != C.HEADER_BYTES + len(present) * self.layout.subblock * C.LANE_BYTES:
                        self.stats.ignored += 1
                        continue
                    self.stats.results += 1
                    b = block[s]
                    if b >= 0:
                        read_subblocks(buf, present, sums[b].reshape(self.layout.num_subblocks, -1), self.layout)
                        if float_mode:
                            exps[b] = agreed[s]
                    t = time.monotonic()
                    if adaptive and retries[s] == 0:  # Karn: a retransmitted round's result is ambiguous
                        est.sample(t - sent_at[s])
                        self.stats.rtt_samples += 1
                    if nxt == NONE:
                        payload[s] = b""
                        active -= 1
                        continue
                    nb_next = nxt // L
                    if nxt % L or nb_next >= nb or nb_next % S != s or nb_next < max(b, 0) or (b >= 0 and nb_next == b):
                        raise AggregationError(
                            f"{job.describe()}: slot {s}: the switch named next offset {nxt} after offset "
                            f"{offset}, which is not a later block of this stream (tensor of {nb} blocks, "
                            f"{S} streams): workers disagree on the tensor size or the switch is misconfigured")
                    e = None
                    if float_mode:
                        e = max(ecode - C.EXP_BIAS, qz.EXP_MIN)
                    send(s, nb_next, e, t)
            now = time.monotonic()
            for s in range(S):
                if payload[s] and now >= sent_at[s] + rto[s]:
                    if now - progress[s] > self.retry.deadline:
                        self._fail(s, block[s], ver[s], retries[s], now - progress[s])
                    self._resend(s, payload, now, sent_at)
                    retries[s] += 1
                    if adaptive:  # back off this slot's timer, and the shared RTO once per level
                        rto[s] = est.timed_out(rto[s])
                    else:
                        rto[s] = min(rto[s] * self.retry.backoff, self.retry.max_timeout)
        return sums, exps

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

    def _resend(self, s: int, payload: list, now: float, sent_at: list) -> None:
        data = payload[s] = with_flags(payload[s], C.Flags.RETX)
        sent_at[s] = now
        self.stats.retransmissions += 1
        self._send(data)

    def _fail(self, s: int, b: int, v: int, retries: int, waited: float) -> None:
        offset = s * self.lanes if b < 0 else b * self.lanes
        what = "exponent pre-round" if b < 0 else f"block {b}"
        raise AggregationError(
            f"{self.job.describe()}: slot {s} ({what}, offset {offset}, ver {v}) got no result from the "
            f"switch at {self.dest[0]}:{self.dest[1]} for {waited:.1f}s despite {retries} retransmissions: "
            f"a peer of the job crashed or left, or the switch is gone")
