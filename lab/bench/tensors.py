"""Deterministic benchmark tensors whose sums are exact and cheap to check.

Every worker can rebuild every other worker's tensor from (rank, size, seed), so each worker checks
the allreduce result it got against the exact sum without extra traffic. Values are small integers
stored as float32, so any summation order (ring, tree, switch) gives the same bits.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import DTypeLike

VALUE_RANGE = 129  # values in [-64, 64]: sums of up to 2**16 workers stay exact in float32


def _block_mask(size: int, density: float, block: int, seed: int) -> np.ndarray:
    """Boolean per-element mask keeping round(density * blocks) whole blocks (the same for all ranks).

    The same non-zero blocks on every worker make the union density equal the per-worker density,
    so the ideal sparse speed-up is exactly 1/density.
    """
    if not 0.0 < density <= 1.0:
        raise ValueError(f"density must be in (0, 1], got {density}")
    if block <= 0:
        raise ValueError(f"block must be positive, got {block}")
    nblocks = -(-size // block)
    keep = max(1, round(density * nblocks))
    rng = np.random.default_rng(seed)
    chosen = np.zeros(nblocks, dtype=bool)
    chosen[rng.choice(nblocks, size=keep, replace=False)] = True
    return np.repeat(chosen, block)[:size]


def _dense_int(rank: int, size: int, seed: int) -> np.ndarray:
    idx = np.arange(size, dtype=np.int64)
    return ((idx * 7 + (rank + 1) * 13 + seed * 31) % VALUE_RANGE) - VALUE_RANGE // 2


def make_tensor(rank: int, size: int, density: float = 1.0, block: int = 32, seed: int = 0,
                dtype: DTypeLike = np.float32) -> np.ndarray:
    """The tensor of worker `rank`: dense small integers, with (1 - density) of its blocks zeroed."""
    if size <= 0:
        raise ValueError(f"size must be positive, got {size}")
    values = _dense_int(rank, size, seed)
    if density < 1.0:
        values = np.where(_block_mask(size, density, block, seed), values, 0)
    return values.astype(dtype)


def expected_sum(world: int, size: int, density: float = 1.0, block: int = 32, seed: int = 0,
                 dtype: DTypeLike = np.float32) -> np.ndarray:
    """The exact elementwise sum of all `world` workers' tensors."""
    total = np.zeros(size, dtype=np.int64)
    for rank in range(world):
        total += _dense_int(rank, size, seed)
    if density < 1.0:
        total = np.where(_block_mask(size, density, block, seed), total, 0)
    return total.astype(dtype)
