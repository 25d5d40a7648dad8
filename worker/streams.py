"""One aggregation's streams, as docs/protocol.md section 7 schedules them: which block each slot
carries, the packet of each open round, and which result closes it -- no sockets, no clocks
(worker/streaming.py sends, waits and retransmits).

Block ``b`` of a tensor runs on slot ``b mod S``; each slot has one round open. Float data needs
the exponent of a block agreed before it is encoded: it rides in the previous round of the
stream, and a pre-round (block -1) agrees on each stream's first exponent (and, in sparse mode,
on where the stream starts). Sparse streams name their next non-zero block in ``next_offset``;
the switch's minimum over the workers says where every worker goes next.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from p4reduce.protocol import constants as C
from p4reduce.protocol.wire import Layout, bitmap_of, encode_subblocks, pack_header, read_subblocks, unpack_header

from . import quantize as qz
from .reducer import AggregationError, BlockSource

NONE = C.NEXT_NONE
PRE_ROUND = -1   # the block of a stream's exponent-agreement round


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


@dataclass
class Answer:
    """A result that closed the round of `slot`; `next_block` None: the stream is done."""
    slot: int
    next_block: int | None
    exponent: int | None      # the agreed exponent for next_block (float data)


class StreamWindow:
    """The S streams of one aggregation call and the packet of each open round.

    `last_ver` is the caller's per-slot version of the previous round (it persists across calls:
    a slot's copies alternate for ever); it is updated as rounds open.
    """

    def __init__(self, source: BlockSource, job_id: int, rank: int, slot_count: int, sparse: bool,
                 layout: Layout, last_ver: list[int]):
        self.source, self.job_id, self.rank, self.sparse, self.layout = source, job_id, rank, sparse, layout
        self.L = L = layout.lanes
        self.n_blocks = nb = source.n_blocks
        if nb * L >= NONE:
            raise ValueError(f"tensor of {nb * L} elements is too large for the protocol's 32-bit offsets; "
                             "split it into several allreduces")
        self.float_mode = source.proposals is not None
        self.sums = np.zeros((nb, L), np.int32)
        self.exps = np.full(nb, qz.EXP_MIN, np.int8) if self.float_mode else None
        self.S = S = min(slot_count, nb)
        self.last_ver = last_ver
        if sparse and nb:
            self.first_nz, self.after_nz = next_nonzero(np.asarray(source.nonzero, bool), S)
        self.props = source.proposals.astype(np.int64) + C.EXP_BIAS if source.proposals is not None else None
        self._zeros = np.zeros(L, np.int32)
        self.block = [0] * S           # block of the open round (PRE_ROUND: exponent agreement)
        self.agreed = [0] * S          # exponent the open round's block was encoded with
        self.ver = [0] * S
        self.payload = [b""] * S       # the open round's packet; b"" once the stream is done
        self.active = S

    def first_blocks(self) -> list[int]:
        """The block each stream starts with (a pre-round for float data)."""
        return [PRE_ROUND if self.float_mode else s for s in range(self.S)]

    def open_round(self, s: int, b: int, e: int | None) -> bytes:
        """Open the round of stream `s` for block `b` (PRE_ROUND: exponent agreement), encoded with
        the agreed exponent `e`; returns its packet (also kept in payload[s])."""
        L, nb, S, layout = self.L, self.n_blocks, self.S, self.layout
        v = self.last_ver[s] = 1 - self.last_ver[s]
        if b < 0:
            offset = s * L
            if self.sparse:
                nxt_b, lanes, bitmap = int(self.first_nz[s]), self._zeros, 0
            else:
                nxt_b, lanes, bitmap = s, self._zeros, layout.full_bitmap
        else:
            offset = b * L
            lanes = self.source.take(np.array([b]), None if e is None else np.array([e], np.int8), L)[0]
            if self.sparse:
                nxt_b, bitmap = int(self.after_nz[b]), int(bitmap_of(lanes, layout))
            else:
                nxt_b, bitmap = (b + S if b + S < nb else -1), layout.full_bitmap
        nxt = nxt_b * L if nxt_b >= 0 else NONE
        proposal = int(self.props[nxt_b]) if self.props is not None and nxt_b >= 0 else 0
        header = pack_header(C.MsgType.CONTRIB, C.Flags.EOT if nxt == NONE else 0, self.job_id, self.rank, 0,
                             v, s, offset, nxt, proposal, 0, bitmap)
        self.block[s], self.agreed[s], self.ver[s] = b, (e if e is not None else 0), v
        self.payload[s] = header + encode_subblocks(lanes, bitmap, layout)
        return self.payload[s]

    def close(self, s: int) -> None:
        """Stream `s` is done."""
        self.payload[s] = b""
        self.active -= 1

    def take_result(self, buf: bytes | bytearray, n: int, describe: str) -> Answer | None:
        """Absorb the `n`-byte datagram in `buf`: None when it closes no open round (a late
        duplicate, a stale copy, another job's packet, a bad length); else the Answer. A switch
        naming an impossible next block raises AggregationError (`describe` names job and rank)."""
        L = self.L
        if n < C.HEADER_BYTES:
            return None
        mt, _flags, job_id, _rank, _count, v, s, offset, nxt, ecode, _r, bitmap = unpack_header(buf)
        if (mt != C.MsgType.RESULT or job_id != self.job_id or s >= self.S or not self.payload[s]
                or v != self.ver[s] or offset != (s * L if self.block[s] < 0 else self.block[s] * L)):
            return None
        present = self.layout.present(bitmap)
        if n != C.HEADER_BYTES + len(present) * self.layout.subblock * C.LANE_BYTES:
            return None
        b = self.block[s]
        if b >= 0:
            read_subblocks(buf, present, self.sums[b].reshape(self.layout.num_subblocks, -1), self.layout)
            if self.exps is not None:
                self.exps[b] = self.agreed[s]
        if nxt == NONE:
            return Answer(s, None, None)
        nb, S = self.n_blocks, self.S
        nb_next = nxt // L
        if nxt % L or nb_next >= nb or nb_next % S != s or nb_next < max(b, 0) or (b >= 0 and nb_next == b):
            raise AggregationError(
                f"{describe}: slot {s}: the switch named next offset {nxt} after offset {offset}, which is "
                f"not a later block of this stream (tensor of {nb} blocks, {S} streams): workers disagree "
                "on the tensor size or the switch is misconfigured")
        return Answer(s, nb_next, max(ecode - C.EXP_BIAS, qz.EXP_MIN) if self.float_mode else None)
