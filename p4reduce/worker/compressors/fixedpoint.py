"""Fixed point: the baseline. Shared per-block exponent, int32 lanes, no other loss."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import quantize as qz
from ..reducer import BlockSource, QuantizedSource, Reducer
from .base import Compressor, Context


def dequantize_lanes(lanes: np.ndarray, ctx: Context) -> np.ndarray:
    """int32 (n_blocks, lanes) with ctx's agreed exponents -> flat float32 (all blocks)."""
    lanes = np.asarray(lanes)
    return qz.dequantize(lanes.reshape(-1), ctx.agreed_exponents(), ctx.n_workers, lanes.shape[-1])


class FixedPoint(Compressor):
    """SwitchML's scheme: float32 -> int32 with a shared exponent per packet (28 bits for 4 workers).

    ``stochastic=True`` rounds stochastically (unbiased); the default rounds to nearest, whose
    error is below 2**-(s+1) per element (see :mod:`worker.quantize`).
    """

    name = "fixedpoint"

    def __init__(self, stochastic: bool = False, seed: int | Sequence[int] = 0):
        self.stochastic = stochastic
        self.unbiased = stochastic
        if stochastic:
            self.name = "fixedpoint-sr"
        self._rng = np.random.default_rng(seed) if stochastic else None

    def compress(self, x: np.ndarray, reducer: Reducer, key: str = "") -> tuple[BlockSource, Context]:
        x = np.asarray(x, dtype=np.float32).reshape(-1)
        src = QuantizedSource(x, reducer.lanes, reducer.n_workers, self._rng)
        return src, Context(size=x.size, n_workers=reducer.n_workers)

    def decompress(self, lanes: np.ndarray, ctx: Context) -> np.ndarray:
        return dequantize_lanes(lanes, ctx)[: ctx.size]
