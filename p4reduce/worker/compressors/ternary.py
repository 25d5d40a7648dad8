"""Ternary with a shared scale: TernGrad (stochastic, unbiased) and 3LC (sparsity multiplier).

Every worker uses the same per-packet scale ``S = 2**E`` (E = the switch's max of the proposed
exponents, so ``|x| <= S`` on every worker: TernGrad's scaler sharing) and sends values in
{-1, 0, 1}:

* ``mode="terngrad"``: ``t = sign(x) * Bernoulli(|x| / S)`` -- unbiased, ``E[t * S] = x``;
* ``mode="3lc"``: ``t = round(x / (m * S))`` with 3LC's sparsity multiplier ``1 <= m < 2``: a
  larger ``m`` rounds more values to zero (biased; use with error feedback).

Packing: the sum of N ternary values lies in [-N, N], so ``K`` of them are packed into one int32
lane as balanced base-``b`` digits (``b = 2N + 1``, largest ``K`` with ``(b**K - 1)/2 < 2**31``:
K = 10 for 4 workers). Summing packed lanes sums the digits without carries, the switch needs no
change, zeros stay zeros (sparse mode still skips them), and the payload is K times smaller.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import quantize as qz
from ..reducer import BlockSource, Reducer
from .base import Compressor, Context


def digits_per_lane(n_workers: int) -> int:
    """Largest K with sum of N packed ternary lanes inside int32: (b**K - 1) / 2 <= 2**31 - 1."""
    b = 2 * n_workers + 1
    k = 0
    while (b ** (k + 1) - 1) // 2 <= qz.INT32_MAX:
        k += 1
    return k


def pack_balanced(t: np.ndarray, n_workers: int) -> np.ndarray:
    """Flat small ints (|t| <= N) -> int32 lanes holding K balanced base-(2N+1) digits each."""
    k, b = digits_per_lane(n_workers), 2 * n_workers + 1
    lanes = -(-t.size // k)
    d = np.zeros(lanes * k, dtype=np.int64)
    d[: t.size] = t
    weights = b ** np.arange(k, dtype=np.int64)
    return (d.reshape(lanes, k) @ weights).astype(np.int32)


def unpack_balanced(v: np.ndarray, n_workers: int, size: int) -> np.ndarray:
    """Inverse of :func:`pack_balanced` for sums of up to N packed lanes (digits in [-N, N])."""
    k, b = digits_per_lane(n_workers), 2 * n_workers + 1
    v = np.asarray(v, dtype=np.int64).copy()
    out = np.empty((v.size, k), dtype=np.int8)
    for i in range(k):
        d = (v + n_workers) % b - n_workers
        out[:, i] = d
        v = (v - d) // b
    return out.reshape(-1)[:size]


class TernarySource(BlockSource):
    """Ternarized, packed blocks: one packet = ``lanes * K`` values sharing one scale exponent."""

    def __init__(self, comp: Ternary, x: np.ndarray, lanes: int, n_workers: int):
        self.comp, self.lanes, self.n = comp, lanes, n_workers
        self.per_block = lanes * digits_per_lane(n_workers)
        self.xb = qz.blocks_of(x, self.per_block)
        self.n_blocks = self.xb.shape[0]
        amax = qz.block_maxima(x, self.per_block)
        self.proposals = qz.exponents_for(amax)
        self.nonzero = amax > 0

    def encode(self, blocks: np.ndarray, exponents: np.ndarray | None) -> np.ndarray:
        if exponents is None:
            raise ValueError("ternary blocks are encoded with agreed exponents")
        r = self.xb[blocks] / self.comp.scales(exponents)[:, None]  # |r| <= 1 (terngrad), <= 1/m (3lc)
        if self.comp.mode == "terngrad":
            t = np.sign(r) * (self.comp.rng.random(r.shape, dtype=np.float32) < np.abs(r))
        else:
            t = np.rint(r)
        return pack_balanced(t.astype(np.int8).reshape(-1), self.n).reshape(len(blocks), self.lanes)


class Ternary(Compressor):
    """Values in {-1, 0, +1} times a shared power-of-two scale per packet, packed K per lane."""

    def __init__(self, mode: str = "terngrad", sparsity_multiplier: float = 1.0, seed: int | Sequence[int] = 0):
        if mode not in ("terngrad", "3lc"):
            raise ValueError(f"mode must be 'terngrad' or '3lc', got {mode!r}")
        if not 1.0 <= sparsity_multiplier < 2.0:
            raise ValueError(f"sparsity_multiplier must be in [1, 2), got {sparsity_multiplier}")
        self.mode = mode
        self.name = mode
        self.m = sparsity_multiplier if mode == "3lc" else 1.0
        self.unbiased = mode == "terngrad"
        self.rng = np.random.default_rng(seed)

    def scales(self, exps: np.ndarray) -> np.ndarray:
        """Per-block scale ``m * 2**E`` from the agreed exponents."""
        return np.ldexp(np.float32(self.m), np.asarray(exps, dtype=np.int32)).astype(np.float32)

    def compress(self, x: np.ndarray, reducer: Reducer, key: str = "") -> tuple[BlockSource, Context]:
        x = np.asarray(x, dtype=np.float32).reshape(-1)
        context = Context(size=x.size, n_workers=reducer.n_workers)
        return TernarySource(self, x, reducer.lanes, reducer.n_workers), context

    def decompress(self, lanes: np.ndarray, ctx: Context) -> np.ndarray:
        lanes = np.asarray(lanes)
        nb, n_lanes = lanes.shape
        per_block = n_lanes * digits_per_lane(ctx.n_workers)
        t = unpack_balanced(lanes.reshape(-1), ctx.n_workers, nb * per_block).astype(np.float32)
        return (t.reshape(nb, per_block) * self.scales(ctx.agreed_exponents())[:, None]).reshape(-1)[: ctx.size]
