"""One aggregation's streams, as docs/protocol.md section 7 schedules them: which block each slot
carries, the packet of each open round, and which result closes it -- no sockets, no clocks
(worker/streaming.py sends, waits and retransmits).

Block ``b`` of a tensor runs on slot ``b mod S``; each slot has at most one round open. Float data
needs the exponent of a block agreed before it is encoded: it rides in the previous round of the
stream, and a pre-round (block -1) agrees on each stream's first exponent (and, in sparse mode,
on where the stream starts). Sparse streams name their next non-zero block in ``next_offset``;
the switch's minimum over the workers says where every worker goes next.

Speed: nothing here allocates or calls numpy per packet. Packets are built in preallocated frames
(one per slot) with ``struct.pack_into``; the lanes of all rounds opened together are encoded by
one call of the source and one byte-order conversion, and the results received in one batch are
decoded by one gather into the sums.

Which rounds to open: a worker's window (worker/window.py) may be smaller than its job's slots,
and workers of one job may have different windows. Ready rounds are opened in the order they
became ready (the order of the results that made them ready, the same at every worker) while the
window has room, and a ready round whose key (the block; a stream's pre-round sorts before every
block) is below every round this worker has in flight is opened even beyond the window.
That keeps the job free of deadlock: the oldest incomplete round of the job is ready at every
worker, and at a worker that has not opened it everything in flight is newer, so it opens it.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from p4reduce.protocol import constants as C
from p4reduce.protocol.wire import FLAGS_OFFSET, Layout, bitmap_of, pack_header_into, unpack_header

from . import quantize as qz
from .reducer import AggregationError, BlockSource, sums_buffer

NONE = C.NEXT_NONE
PRE_ROUND = -1   # the block of a stream's exponent-agreement round
RING = 64        # results received (and decoded) per batch

assert C.HEADER_BYTES % C.LANE_BYTES == 0, "lanes are gathered as 32-bit words after the header"
_HEADER_WORDS = C.HEADER_BYTES // C.LANE_BYTES


def next_nonzero(nonzero: np.ndarray, streams: int) -> tuple[np.ndarray, np.ndarray]:
    """(first non-zero block of each stream or -1, next non-zero block on the same stream after
    each block or -1), for blocks assigned round-robin to ``streams`` streams."""
    nb = nonzero.size
    rows = -(-nb // streams)
    big = np.iinfo(np.int64).max
    flat = np.full(rows * streams, big, np.int64)
    flat[:nb] = np.where(nonzero, np.arange(nb), big)
    grid = flat.reshape(rows, streams)
    at_or_after = np.minimum.accumulate(grid[::-1], axis=0)[::-1]  # smallest non-zero b' >= b on the stream
    after = np.full_like(at_or_after, big)
    after[:-1] = at_or_after[1:]
    first = at_or_after[0]
    after = after.reshape(-1)[:nb]
    return np.where(first == big, -1, first), np.where(after == big, -1, after)


def check_offsets(n_blocks: int, lanes: int) -> None:
    """ValueError unless every offset of a tensor of `n_blocks` blocks fits the wire's 32 bits."""
    if n_blocks * lanes >= NONE:
        raise ValueError(f"tensor of {n_blocks * lanes} elements is too large for the protocol's 32-bit offsets; "
                         "split it into several allreduces")


def call_sums(source: BlockSource, lanes: int, sparse: bool, out: np.ndarray | None) -> np.ndarray:
    """The int32 (n_blocks, lanes) array a call's results go into: `out` (Reducer.aggregate) or a
    new one. In sparse mode the blocks zero everywhere get no result; they are among those zero
    here, which are zeroed (so `out` may be the source's own int32 data: an in-place call), and
    every block non-zero here is sent, so its result is written."""
    nb = source.n_blocks
    if out is None:
        return np.zeros((nb, lanes), np.int32)
    sums = sums_buffer(out, nb * lanes).reshape(nb, lanes)
    if sparse:
        sums[~np.asarray(source.nonzero, bool)] = 0
    return sums


@dataclass
class Answer:
    """A result that closed the round of `slot`; `next_block` None: the stream is done."""
    slot: int
    next_block: int | None
    exponent: int | None      # the agreed exponent for next_block (float data)


def _subblock_mask(bitmaps: np.ndarray, num_subblocks: int) -> np.ndarray:
    """bool (n, num_subblocks): which sub-blocks each bitmap names."""
    return ((bitmaps.astype(np.uint32)[:, None] >> np.arange(num_subblocks, dtype=np.uint32)) & 1).astype(bool)


class StreamWindow:
    """The S streams of one aggregation call, their open rounds' packets and the results' batch.

    `out` (optional): the int32 buffer of n_blocks * lanes elements the sums go into.
    `last_ver` is the caller's per-slot version of the previous round (it persists across calls:
    a slot's copies alternate for ever); it is updated as rounds open. `wire_token` is the job's
    wire token: every packet carries it, and a result without it is forged (counted in `forged`).
    """

    def __init__(self, source: BlockSource, job_id: int, rank: int, slot_count: int, sparse: bool,
                 layout: Layout, last_ver: list[int], ring: int = RING, wire_token: int = 0,
                 out: np.ndarray | None = None):
        self.source, self.job_id, self.rank, self.sparse, self.layout = source, job_id, rank, sparse, layout
        self.wire_token = wire_token
        self.forged = 0                  # results for an open round without the job's wire token, ignored
        self.L = L = layout.lanes
        self.n_blocks = nb = source.n_blocks
        check_offsets(nb, L)
        self.float_mode = source.proposals is not None
        self.sums = call_sums(source, L, sparse, out)
        self._sums3 = self.sums.reshape(nb, layout.num_subblocks, layout.subblock)
        self.exps = np.full(nb, qz.EXP_MIN, np.int8) if self.float_mode else None
        self.S = S = min(slot_count, nb)
        self.last_ver = last_ver
        self.first_nz: list[int] = []
        self.after_nz: list[int] = []
        if sparse and nb:
            first, after = next_nonzero(np.asarray(source.nonzero, bool), S)
            self.first_nz, self.after_nz = first.tolist(), after.tolist()
        self.props: list[int] | None = None
        if source.proposals is not None:
            self.props = (source.proposals.astype(np.int64) + C.EXP_BIAS).tolist()
        # per slot: the open round (block, exponent it was encoded with, version, offset, order key)
        self.block = [0] * S
        self.agreed = [0] * S
        self.ver = [0] * S
        self.offset = [0] * S
        self.key = [0] * S
        self.open: set[int] = set()      # slots with a round in flight
        self.ready: list[tuple[int, int, int, int | None]] = []   # heap of (key, slot, block, exponent)
        self.arrival = [0] * S           # per slot: when its ready round became ready (a count)
        self._arrivals = 0
        self.active = S                  # streams not done
        # the open rounds' packets, one preallocated frame per slot
        self.stride = C.HEADER_BYTES + L * C.LANE_BYTES
        self.length = [0] * S
        self.frames = bytearray(S * self.stride)
        self._frames_np = np.frombuffer(self.frames, np.uint8).reshape(S, self.stride)
        self._view = memoryview(self.frames)
        self._full = layout.full_bitmap
        self._subblock_bytes = layout.subblock * C.LANE_BYTES
        # the receive ring: one batch of datagrams, decoded together; a slot one word longer than the
        # largest result, so an oversize datagram shows as such
        self.ring_stride = self.stride + C.LANE_BYTES
        self.ring = bytearray(ring * self.ring_stride)
        ring_view = memoryview(self.ring)
        self.ring_slots = [ring_view[i * self.ring_stride:(i + 1) * self.ring_stride] for i in range(ring)]
        self.ring_len = [0] * ring
        self._ring32 = np.frombuffer(self.ring, ">i4").reshape(ring, self.ring_stride // C.LANE_BYTES)

    # ---- which rounds to open --------------------------------------------------------------
    def start(self) -> None:
        """Every stream's first round is ready (a pre-round for float data)."""
        for s in range(self.S):
            if self.float_mode:
                self.ready.append((s - self.S, s, PRE_ROUND, None))
            else:
                self.ready.append((s, s, s, None))
            self.arrival[s] = s
        self._arrivals = self.S
        heapq.heapify(self.ready)

    def to_open(self, window: int) -> list[tuple[int, int, int | None]]:
        """(slot, block, exponent) of the ready rounds to open now, with `window` rounds allowed in
        flight: the rounds older than every round in flight even beyond the window (module
        docstring), then the others in the order they became ready while the window has room;
        all of them in the order they became ready.

        Why that order: every worker receives the switch's results in the same order, but in
        batches of its own. Choosing or sending by key would let two workers open the same rounds
        in different orders (a sparse stream's next block jumps ahead; a window in slow start
        takes the lowest keys of whatever its batch made ready), so rounds would complete out of
        the order a worker sent them, which fast retransmission (worker/streaming.py) takes for
        a loss. The order results arrive in is the same at every worker whatever the batches,
        and windows of different sizes then choose prefixes of the same sequence."""
        ready, key, arrival = self.ready, self.key, self.arrival
        if not ready:
            return []
        room = window - len(self.open)
        if room >= len(ready):
            picked = [(s, b, e) for _k, s, b, e in ready]
            ready.clear()
        else:
            oldest = min((key[s] for s in self.open), default=math.inf)
            picked = []
            while ready and ready[0][0] < oldest:   # at most one: it becomes the oldest in flight
                k, s, b, e = heapq.heappop(ready)
                picked.append((s, b, e))
                oldest = k
            room -= len(picked)
            if room > 0 and ready:
                by_arrival = sorted(ready, key=lambda r: arrival[r[1]])
                picked.extend((s, b, e) for _k, s, b, e in by_arrival[:room])
                ready[:] = by_arrival[room:]
                heapq.heapify(ready)
        if len(picked) > 1:
            picked.sort(key=lambda r: arrival[r[0]])
        return picked

    # ---- building packets ------------------------------------------------------------------
    def open_rounds(self, rounds: list[tuple[int, int, int | None]]) -> None:
        """Open the rounds (slot, block or PRE_ROUND, agreed exponent): encode their lanes (one call
        for all), write their packets into the slots' frames (frame(s) is each one's packet)."""
        L, S, nb, layout = self.L, self.S, self.n_blocks, self.layout
        H, stride, full = C.HEADER_BYTES, self.stride, self._full
        blocks = [b for _, b, _ in rounds if b >= 0]
        bitmaps: list[int] = []
        if blocks:
            slots = np.fromiter((s for s, b, _ in rounds if b >= 0), np.intp, len(blocks))
            exps = None
            if self.float_mode:
                exps = np.fromiter((e for _, b, e in rounds if b >= 0), np.int8, len(blocks))
            lanes = self.source.take(np.asarray(blocks, np.int64), exps, L)
            body = lanes.astype(">i4").view(np.uint8).reshape(len(blocks), L * C.LANE_BYTES)
            if self.sparse:
                bm = bitmap_of(lanes, layout)
                bitmaps = bm.tolist()
                self._write_subblocks(slots, bm, body)
            else:
                bitmaps = [full] * len(blocks)
                self._frames_np[slots, H:H + L * C.LANE_BYTES] = body
        pre = [s for s, b, _ in rounds if b < 0]
        if pre and not self.sparse:  # a dense job takes only full packets: the pre-round carries zeros
            self._frames_np[pre, H:H + L * C.LANE_BYTES] = 0
        i = 0
        frames, sb_bytes, wire_token = self.frames, self._subblock_bytes, self.wire_token
        for s, b, e in rounds:
            v = self.last_ver[s] = 1 - self.last_ver[s]
            if b < 0:
                offset, key = s * L, s - S
                if self.sparse:
                    nxt_b, bitmap = self.first_nz[s], 0
                else:
                    nxt_b, bitmap = s, full
            else:
                offset, key, bitmap = b * L, b, bitmaps[i]
                i += 1
                if self.sparse:
                    nxt_b = self.after_nz[b]
                else:
                    nxt_b = b + S if b + S < nb else -1
            nxt = nxt_b * L if nxt_b >= 0 else NONE
            proposal = self.props[nxt_b] if self.props is not None and nxt_b >= 0 else 0
            pack_header_into(frames, s * stride, C.MsgType.CONTRIB, C.Flags.EOT if nxt == NONE else 0,
                             self.job_id, self.rank, 0, v, s, offset, nxt, proposal, 0, bitmap, wire_token)
            self.length[s] = H + bitmap.bit_count() * sb_bytes
            self.block[s], self.agreed[s], self.ver[s] = b, (e if e is not None else 0), v
            self.offset[s], self.key[s] = offset, key
            self.open.add(s)

    def _write_subblocks(self, slots: np.ndarray, bitmaps: np.ndarray, body: np.ndarray) -> None:
        """Sparse packets: each frame gets its present sub-blocks, packed, after the header."""
        nsb, sbb = self.layout.num_subblocks, self._subblock_bytes
        mask = _subblock_mask(bitmaps, nsb)
        if not mask.any():
            return
        position = np.cumsum(mask, axis=1) - 1                    # where each present one goes
        rows = np.broadcast_to(slots[:, None], mask.shape)[mask]
        cols = C.HEADER_BYTES + position[mask] * sbb
        sub = body.reshape(len(slots), nsb, sbb)[mask]
        self._frames_np[rows[:, None], cols[:, None] + np.arange(sbb)] = sub

    def frame(self, s: int) -> memoryview:
        """The packet of slot `s`'s open round."""
        start = s * self.stride
        return self._view[start:start + self.length[s]]

    def mark_retransmission(self, s: int) -> None:
        """Flag slot `s`'s packet as a retransmission (Flags.RETX), in place."""
        self.frames[s * self.stride + FLAGS_OFFSET] |= C.Flags.RETX

    # ---- taking results --------------------------------------------------------------------
    def take_results(self, count: int, describe: str) -> list[Answer]:
        """Absorb the first `count` datagrams of the ring (lengths in ring_len): the Answers of
        the rounds they close. Late duplicates, stale copies, other jobs' packets, bad lengths and
        results without the job's wire token (forged: counted in `forged`) close nothing. A switch
        naming an impossible next block raises AggregationError (`describe` names job and rank)."""
        L, S, nb, H, full = self.L, self.S, self.n_blocks, C.HEADER_BYTES, self._full
        ring, rs, sb_bytes, wire_token = self.ring, self.ring_stride, self._subblock_bytes, self.wire_token
        answers: list[Answer] = []
        rows: list[int] = []
        done_blocks: list[int] = []
        done_bitmaps: list[int] = []
        done_exps: list[int] = []
        for i in range(count):
            n = self.ring_len[i]
            if n < H:
                continue
            (mt, _flags, job_id, _rank, _count, v, s, offset, nxt, ecode, _r, bitmap,
             result_wire_token) = unpack_header(ring, i * rs)
            if (mt != C.MsgType.RESULT or job_id != self.job_id or s >= S or s not in self.open
                    or v != self.ver[s] or offset != self.offset[s]):
                continue
            if result_wire_token != wire_token:     # the round's result, but not the switch's: forged
                self.forged += 1
                continue
            if bitmap & ~full or n != H + bitmap.bit_count() * sb_bytes:
                continue
            b = self.block[s]
            self.open.discard(s)
            if b >= 0:
                rows.append(i)
                done_blocks.append(b)
                done_bitmaps.append(bitmap)
                done_exps.append(self.agreed[s])
            if nxt == NONE:
                self.active -= 1
                answers.append(Answer(s, None, None))
                continue
            nb_next = nxt // L
            if nxt % L or nb_next >= nb or nb_next % S != s or nb_next < max(b, 0) or (b >= 0 and nb_next == b):
                raise AggregationError(
                    f"{describe}: slot {s}: the switch named next offset {nxt} after offset {offset}, which is "
                    f"not a later block of this stream (tensor of {nb} blocks, {S} streams): workers disagree "
                    "on the tensor size or the switch is misconfigured")
            e = max(ecode - C.EXP_BIAS, qz.EXP_MIN) if self.float_mode else None
            heapq.heappush(self.ready, (nb_next, s, nb_next, e))
            self._arrivals += 1
            self.arrival[s] = self._arrivals
            answers.append(Answer(s, nb_next, e))
        if rows:
            self._store(rows, done_blocks, done_bitmaps)
            if self.exps is not None:
                self.exps[done_blocks] = done_exps
        return answers

    def _store(self, rows: list[int], blocks: list[int], bitmaps: list[int]) -> None:
        """Copy the lanes of the ring's results `rows` into the sums of `blocks` (one gather)."""
        hw, L = _HEADER_WORDS, self.L
        if all(bm == self._full for bm in bitmaps):
            self.sums[blocks] = self._ring32[rows, hw:hw + L]
            return
        nsb, sb = self.layout.num_subblocks, self.layout.subblock
        mask = _subblock_mask(np.asarray(bitmaps), nsb)
        if not mask.any():
            return
        position = np.cumsum(mask, axis=1) - 1
        ring_rows = np.broadcast_to(np.asarray(rows)[:, None], mask.shape)[mask]
        out_blocks = np.broadcast_to(np.asarray(blocks)[:, None], mask.shape)[mask]
        out_sub = np.broadcast_to(np.arange(nsb)[None, :], mask.shape)[mask]
        words = hw + position[mask][:, None] * sb + np.arange(sb)
        self._sums3[out_blocks, out_sub] = self._ring32[ring_rows[:, None], words]
