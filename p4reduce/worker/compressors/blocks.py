"""Helpers shared by the block-sparse compressors: gather/scatter whole blocks of a flat tensor."""
from __future__ import annotations

import numpy as np

from .. import quantize as qz


def n_blocks(size: int, block: int) -> int:
    return -(-size // block)


def gather(x: np.ndarray, indices: np.ndarray, block: int) -> np.ndarray:
    """Flat concatenation of the selected blocks of flat ``x`` (the last block zero-padded)."""
    return qz.blocks_of(x, block)[indices].reshape(-1)


def scatter(values: np.ndarray, indices: np.ndarray, block: int, size: int) -> np.ndarray:
    """Inverse of :func:`gather`: selected blocks put back in place, zeros elsewhere."""
    out = np.zeros((n_blocks(size, block), block), dtype=np.float32)
    out[indices] = np.asarray(values, dtype=np.float32).reshape(len(indices), block)
    return out.reshape(-1)[:size]


def block_norms(x: np.ndarray, block: int) -> np.ndarray:
    """L2 norm of every block (float32)."""
    xb = qz.blocks_of(np.asarray(x, dtype=np.float32), block)
    return np.sqrt(np.einsum("ij,ij->i", xb, xb))


def count_for(ratio_or_k: float, total: int) -> int:
    """k from an absolute count (>= 1) or a ratio in (0, 1); at least one, at most ``total``."""
    if ratio_or_k <= 0:
        raise ValueError(f"k/ratio must be > 0, got {ratio_or_k}")
    k = int(ratio_or_k) if ratio_or_k >= 1 else int(np.ceil(ratio_or_k * total))
    return max(1, min(total, k))
