"""Lossy block sparsification by threshold (OmniReduce-style, each worker on its own).

A block (one packet, ``lanes`` values) whose L2 norm is below ``threshold`` times the largest
block norm of the tensor is zeroed before fixed-point encoding; the switch's sparse mode then skips
it. No index agreement is needed: zero blocks are simply not sent. Biased: use with error feedback.
"""
from __future__ import annotations

import numpy as np

from .. import quantize as qz
from ..reducer import BlockSource, QuantizedSource, Reducer
from .base import Compressor, Context
from .blocks import block_norms
from .fixedpoint import dequantize_lanes


class ThresholdBlocks(Compressor):
    """Zero the blocks with ``norm < threshold * max norm``, send the rest in fixed point."""

    name = "threshold"
    unbiased = False

    def __init__(self, threshold: float = 0.1):
        if not 0 <= threshold <= 1:
            raise ValueError(f"threshold must be in [0, 1] (relative to the largest block norm), got {threshold}")
        self.threshold = threshold

    def compress(self, x: np.ndarray, reducer: Reducer, key: str = "") -> tuple[BlockSource, Context]:
        x = np.asarray(x, dtype=np.float32).reshape(-1)
        lanes = reducer.lanes
        norms = block_norms(x, lanes)
        keep = norms >= self.threshold * (norms.max() if norms.size else 0)
        xb = qz.blocks_of(x, lanes).copy()
        xb[~keep] = 0
        src = QuantizedSource(xb.reshape(-1)[: x.size], lanes, reducer.n_workers)
        return src, Context(size=x.size, n_workers=reducer.n_workers, extra={"kept": int(keep.sum())})

    def decompress(self, lanes: np.ndarray, ctx: Context) -> np.ndarray:
        return dequantize_lanes(lanes, ctx)[: ctx.size]
