"""How many bytes a worker puts on the wire for one aggregation (docs/protocol.md, section 2).

Every packet is a 66-byte frame (Ethernet 14 + IPv4 20 + UDP 8 + p4reduce header 24) plus its
present sub-blocks. Dense mode sends every block with every sub-block. Sparse mode (OmniReduce)
sends a block only if some worker has a non-zero there (this model counts the worker's own
non-zero blocks, plus one header-only packet per stream) and leaves zero sub-blocks out.
Float data needs the exponent of each stream's first block agreed first: one extra round per
stream (the others ride piggybacked on results), counted by :meth:`bytes_for_agreement`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from p4reduce.protocol import constants as C

FRAME_OVERHEAD = C.FRAME_HEADER_BYTES + C.HEADER_BYTES


@dataclass(frozen=True)
class WireCost:
    lanes: int                  # the job's packet layout: required, as for a real job
    sub_block: int
    sparse: bool = False
    streams: int = 64           # slots a worker streams on (pre-rounds for the first exponent)

    def bytes_for(self, lanes: np.ndarray) -> int:
        """Bytes to send int32 ``lanes`` of shape (n_blocks, lanes)."""
        nb = lanes.shape[0]
        if nb == 0:
            return 0
        if not self.sparse:
            return nb * (FRAME_OVERHEAD + 4 * self.lanes)
        sub = np.asarray(np.asarray(lanes).reshape(nb, -1, self.sub_block).any(axis=2))
        blocks = int(sub.any(axis=1).sum())
        return (blocks + min(nb, self.streams)) * FRAME_OVERHEAD + 4 * self.sub_block * int(sub.sum())

    def bytes_for_agreement(self, n_blocks: int) -> int:
        """Bytes of the first-exponent rounds (one per stream used)."""
        rounds = min(n_blocks, self.streams)
        per = FRAME_OVERHEAD if self.sparse else FRAME_OVERHEAD + 4 * self.lanes
        return rounds * per
