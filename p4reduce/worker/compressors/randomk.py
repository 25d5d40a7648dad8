"""Random-k blocks with a seed shared by the job: no agreement round needed for the indices.

Every worker draws the same k block indices from ``(seed, key, step)``. With ``rescale=True`` the
kept blocks are multiplied by nb/k, which makes the estimate unbiased (at the price of variance);
with error feedback use ``rescale=False``.
"""
from __future__ import annotations

import zlib

import numpy as np

from ..reducer import BlockSource, QuantizedSource, Reducer
from .base import Compressor, Context
from .blocks import count_for, gather, n_blocks, scatter
from .fixedpoint import dequantize_lanes


class RandomKBlocks(Compressor):
    """Send k blocks chosen by a job-shared pseudo-random sequence."""

    name = "randomk"

    def __init__(self, k: float = 0.1, seed: int = 0, rescale: bool = False, stochastic: bool = False):
        self.k = k
        self.seed = seed
        self.rescale = rescale
        self.unbiased = rescale and stochastic
        self._rng = np.random.default_rng([seed, 1]) if stochastic else None
        self._step: dict[str, int] = {}

    def indices(self, key: str, step: int, nb: int) -> np.ndarray:
        """The agreed block indices of tensor ``key`` at ``step`` (same on every worker)."""
        rng = np.random.default_rng([self.seed, zlib.crc32(key.encode()), step])
        return np.sort(rng.choice(nb, size=count_for(self.k, nb), replace=False))

    def compress(self, x: np.ndarray, reducer: Reducer, key: str = "") -> tuple[BlockSource, Context]:
        x = np.asarray(x, dtype=np.float32).reshape(-1)
        lanes = reducer.lanes
        nb = n_blocks(x.size, lanes)
        step = self._step.get(key, 0)
        self._step[key] = step + 1
        idx = self.indices(key, step, nb)
        vals = gather(x, idx, lanes)
        if self.rescale:
            vals = vals * np.float32(nb / len(idx))
        src = QuantizedSource(vals, lanes, reducer.n_workers, self._rng)
        return src, Context(size=x.size, n_workers=reducer.n_workers, indices=idx)

    def decompress(self, lanes: np.ndarray, ctx: Context) -> np.ndarray:
        lanes = np.asarray(lanes)
        return scatter(dequantize_lanes(lanes, ctx), ctx.agreed_indices(), lanes.shape[-1], ctx.size)
