"""Reference implementation of the worker algorithm (docs/protocol.md section 7), transport-free:
it produces contribution payloads and consumes result payloads. Tests drive it against the model
and the P4 program with losses, duplicates and reordering; worker/ implements the real thing.

Every result is also checked against what the protocol promises (count, min next offset, max
exponent), computed here from all workers' tensors, independently of the switch model.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from p4reduce.protocol import constants as C
from p4reduce.protocol.constants import Flags, Mode, MsgType
from p4reduce.protocol.wire import Header, Layout, bitmap_of, decode, encode, with_flags


def default_exponent(rank: int, offset: int) -> int:
    """A deterministic per-(worker, block) exponent proposal, so results can be checked."""
    return (rank * 37 + offset // 7) % 251


class ProtocolViolation(AssertionError):
    """A result that breaks docs/protocol.md."""


class JobRun:
    """All workers of one job walking their tensors through `slot_count` slots."""

    def __init__(self, tensors: Sequence[np.ndarray], job_id: int, slot_count: int,
                 mode: Mode = Mode.DENSE, *, layout: Layout,
                 exponent: Callable[[int, int], int] = default_exponent,
                 versions: np.ndarray | None = None, wire_token: int = 0):
        self.layout = layout
        self.wire_token = wire_token                # every contribution carries it, every result must
        self.lanes = layout.lanes
        self.n = len(tensors)
        self.job_id = job_id
        self.slots = slot_count
        self.mode = Mode(mode)
        self.exponent = exponent
        length = max(len(t) for t in tensors)
        self.length = length
        self.num_blocks = -(-length // self.lanes)
        padded = np.zeros((self.n, self.num_blocks * self.lanes), np.int64)
        for r, t in enumerate(tensors):
            padded[r, :len(t)] = t
        self.blocks = padded.reshape(self.n, self.num_blocks, self.lanes)
        self.expected = np.clip(padded.sum(axis=0), C.LANE_MIN, C.LANE_MAX)[:length]
        nonzero = np.asarray(self.blocks.any(axis=2))         # (n, blocks)
        # per worker and stream: sorted non-zero block indices on that stream
        self._nz = [[np.flatnonzero(nonzero[r, s::slot_count]) * slot_count + s
                     for s in range(slot_count)] for r in range(self.n)]
        self.out = np.zeros((self.n, self.num_blocks * self.lanes), np.int64)
        # per worker, per slot: offset of the round in progress (None = stream done), version
        self.current: list[list[int | None]] = [[None] * slot_count for _ in range(self.n)]
        self.ver = np.zeros((self.n, slot_count), np.int64) if versions is None else versions.copy()
        self.outstanding: list[dict[int, bytes]] = [dict() for _ in range(self.n)]
        self.rounds = 0

    # ---- the algorithm ------------------------------------------------------------------------
    def _next_block(self, rank: int, slot: int, block: int) -> int:
        """Block index this worker needs next on `slot` after `block`, or -1."""
        if self.mode == Mode.DENSE:
            nxt = block + self.slots
            return nxt if nxt < self.num_blocks else -1
        nz = self._nz[rank][slot]
        i = np.searchsorted(nz, block, side="right")
        return int(nz[i]) if i < len(nz) else -1

    def _contribution(self, rank: int, slot: int, block: int) -> bytes:
        data = self.blocks[rank, block].astype(np.int32)
        bitmap = self.layout.full_bitmap if self.mode == Mode.DENSE else int(bitmap_of(data, self.layout))
        nxt = self._next_block(rank, slot, block)
        h = Header(msg_type=MsgType.CONTRIB, flags=Flags.EOT if nxt < 0 else 0, job_id=self.job_id,
                   rank=rank, ver=int(self.ver[rank, slot]), slot=slot, offset=block * self.lanes,
                   next_offset=C.NEXT_NONE if nxt < 0 else nxt * self.lanes,
                   exponent=self.exponent(rank, block * self.lanes), bitmap=bitmap, wire_token=self.wire_token)
        return encode(h, data, self.layout)

    def start(self) -> list[tuple[int, bytes]]:
        """First round of every stream: block s on slot s, for every worker."""
        sends = []
        for r in range(self.n):
            for s in range(min(self.slots, self.num_blocks)):
                sends.append((r, self._send(r, s, s)))
        return sends

    def _send(self, rank: int, slot: int, block: int) -> bytes:
        self.current[rank][slot] = block * self.lanes
        payload = self._contribution(rank, slot, block)
        self.outstanding[rank][slot] = payload
        return payload

    def on_result(self, rank: int, payload: bytes) -> list[tuple[int, bytes]]:
        """A result reached worker `rank`: check it, store it, send the slot's next block."""
        h, data = decode(payload, self.layout)
        if h.msg_type != MsgType.RESULT or h.job_id != self.job_id or h.rank != rank:
            raise ProtocolViolation(f"worker {rank} got a packet not meant for it: {h}")
        if h.wire_token != self.wire_token:
            raise ProtocolViolation(f"worker {rank} got a result without its job's wire token: {h}")
        slot = h.slot
        if slot >= self.slots or self.current[rank][slot] != h.offset or self.ver[rank, slot] != h.ver:
            return []                                   # late duplicate of an older round
        block = h.offset // self.lanes
        self._check(h, data, block)
        self.out[rank, h.offset:h.offset + self.lanes] = data
        self.ver[rank, slot] ^= 1
        del self.outstanding[rank][slot]
        if h.next_offset == C.NEXT_NONE:
            self.current[rank][slot] = None
            return []
        return [(rank, self._send(rank, slot, h.next_offset // self.lanes))]

    def retransmissions(self) -> list[tuple[int, bytes]]:
        """What every worker resends on timeout: its unanswered contributions, flagged RETX."""
        out = []
        for r in range(self.n):
            for payload in self.outstanding[r].values():
                out.append((r, with_flags(payload, Flags.RETX)))
        return out

    def done(self) -> bool:
        return not any(self.outstanding[r] for r in range(self.n))

    def results(self) -> np.ndarray:
        """(workers, length) aggregated tensors as each worker assembled them."""
        return self.out[:, :self.length]

    # ---- what the protocol promises ---------------------------------------------------------
    def _check(self, h: Header, data: np.ndarray, block: int) -> None:
        slot = block % self.slots
        nexts = [self._next_block(r, slot, block) for r in range(self.n)]
        nexts = [b for b in nexts if b >= 0]
        want_next = min(nexts) * self.lanes if nexts else C.NEXT_NONE
        want_exp = max(self.exponent(r, block * self.lanes) for r in range(self.n))
        if self.mode == Mode.DENSE:
            want_bitmap = self.layout.full_bitmap
        else:
            want_bitmap = int(np.bitwise_or.reduce([int(bitmap_of(self.blocks[r, block].astype(np.int32), self.layout))
                                                    for r in range(self.n)]))
        want_flags_eot = bool(h.flags & Flags.EOT)
        problems = []
        if h.count != self.n:
            problems.append(f"count {h.count} != {self.n}")
        if h.next_offset != want_next:
            problems.append(f"next_offset {h.next_offset} != {want_next}")
        if h.exponent != want_exp:
            problems.append(f"exponent {h.exponent} != {want_exp}")
        if h.bitmap != want_bitmap:
            problems.append(f"bitmap {h.bitmap:#x} != {want_bitmap:#x}")
        if want_flags_eot != (want_next == C.NEXT_NONE):
            problems.append("EOT flag does not match next_offset")
        if problems:
            raise ProtocolViolation(f"result for slot {h.slot} offset {h.offset}: " + "; ".join(problems))
