"""Global top-k blocks (gTop-k adapted to a switch).

Workers agree on the same k blocks with one cheap aggregation: the per-block L2 norms (one value
per block of ``lanes`` values, i.e. 1/lanes of the tensor) are summed through the switch in fixed
point; every worker gets the same integers, hence the same ranking (ties broken by the lower block
index). Then only the k chosen blocks are sent, in fixed point with shared exponents. The rest is
left to the error-feedback memory (biased: use with :class:`~worker.memory.ErrorFeedback`).
"""
from __future__ import annotations

import numpy as np

from ..reducer import BlockSource, QuantizedSource, Reducer
from .base import Compressor, Context
from .blocks import block_norms, count_for, gather, n_blocks, scatter
from .fixedpoint import dequantize_lanes


def agreed_top_blocks(summed_norms: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest aggregated norms, sorted; deterministic on identical inputs."""
    order = np.argsort(-np.asarray(summed_norms, dtype=np.int64), kind="stable")
    return np.sort(order[:k])


class TopKBlocks(Compressor):
    """Send the k blocks with the largest norm summed over workers (k absolute, or a ratio < 1)."""

    name = "topk"
    unbiased = False

    def __init__(self, k: float = 0.1):
        self.k = k

    def compress(self, x: np.ndarray, reducer: Reducer, key: str = "") -> tuple[BlockSource, Context]:
        x = np.asarray(x, dtype=np.float32).reshape(-1)
        lanes = reducer.lanes
        k = count_for(self.k, n_blocks(x.size, lanes))
        norm_sums, _ = reducer.sum_fixed_point(block_norms(x, lanes))
        idx = agreed_top_blocks(norm_sums, k)
        src = QuantizedSource(gather(x, idx, lanes), lanes, reducer.n_workers)
        return src, Context(size=x.size, n_workers=reducer.n_workers, indices=idx)

    def decompress(self, lanes: np.ndarray, ctx: Context) -> np.ndarray:
        lanes = np.asarray(lanes)
        return scatter(dequantize_lanes(lanes, ctx), ctx.agreed_indices(), lanes.shape[-1], ctx.size)
