"""Float32 <-> int32 fixed point with a shared exponent (SwitchML's scheme).

The switch can only add integers. Each worker proposes, per block of values, the exponent ``e``
with ``max|x| <= 2**e`` of its block (:func:`propose_exponents`); the network returns the maximum
over workers; every worker then scales its block by the same power of two ``2**s`` with
``s = headroom_bits(n) - e`` (:func:`shift_for`). ``headroom_bits(n)`` is the largest ``k`` with
``n * 2**k <= 2**31 - 1``, so each worker's integers satisfy ``|q| <= 2**k`` and the sum of ``n``
of them cannot overflow int32, by construction, whatever the values.

Error bound (documented in docs/compressors.md, tested in tests/worker/test_quantize.py): with
round-to-nearest, every element of a worker's block is off by at most ``2**-(s+1)``; the sum of
``n`` workers is off by at most ``n * 2**-(s+1)`` before the final float32 rounding of the result
(relative ``2**-24``). Relative to the largest value in the block across workers (``m``, with
``2**(e-1) < m <= 2**e``) one element is off by less than ``m * 2**-k``. Stochastic rounding
keeps the per-element error below ``2**-s`` and makes it unbiased.
"""
from __future__ import annotations

import numpy as np

#: Smallest exponent proposed: blocks whose values are all below 2**EXP_MIN are scaled as if
#: their maximum were 2**EXP_MIN (keeps 2**s inside float32's range). Also the "all zero" proposal.
EXP_MIN = -96
#: Largest exponent (the wire carries e + EXP_BIAS in 8 bits); |x| >= 2**127 cannot be quantized.
EXP_MAX = 127
INT32_MAX = 2**31 - 1


class QuantizationError(ValueError):
    """The input cannot be turned into switch-summable integers (NaN, inf, too large)."""


def nonfinite_error(bad: int, block: int) -> QuantizationError:
    return QuantizationError(f"block {bad} (elements {bad * block}..{bad * block + block - 1}) "
                             "contains NaN or inf: cannot quantize")


def too_large_error(bad: int, amax: float) -> QuantizationError:
    return QuantizationError(f"block {bad} has |x| = {amax:g} >= 2**{EXP_MAX}: too large to quantize")


def overflow_error() -> QuantizationError:
    return QuantizationError("agreed exponent is smaller than a worker's own: values exceed the "
                             "overflow-free range (the exponent must be the max over workers)")


def headroom_bits(n_workers: int) -> int:
    """Largest k with n_workers * 2**k <= 2**31 - 1: bits each worker may use without overflow."""
    if int(n_workers) < 1:
        raise ValueError(f"n_workers must be >= 1, got {n_workers}")
    return (INT32_MAX // int(n_workers)).bit_length() - 1


def blocks_of(x: np.ndarray, block: int) -> np.ndarray:
    """View of flat float32 ``x`` as (n_blocks, block), zero-padded when the size is not a multiple."""
    x = np.asarray(x).reshape(-1)
    nb = -(-x.size // block)
    if nb * block == x.size:
        return x.reshape(nb, block)
    out = np.zeros(nb * block, dtype=x.dtype)
    out[: x.size] = x
    return out.reshape(nb, block)


def block_maxima(x: np.ndarray, block: int) -> np.ndarray:
    """max |x| of every block (float32), checked: NaN or inf is an error naming the block."""
    xb = blocks_of(np.asarray(x, dtype=np.float32), block)
    amax = np.zeros(xb.shape[0], np.float32)
    # in chunks of ~1 MiB: |x| goes through a buffer that stays in cache (3x faster at 16M
    # elements than one |x| array the size of the tensor)
    rows = max(1, (1 << 18) // max(block, 1))
    buf = np.empty((min(rows, xb.shape[0]), block), np.float32)
    for i in range(0, xb.shape[0], rows):
        chunk = xb[i:i + rows]
        np.abs(chunk, out=buf[:len(chunk)]).max(axis=1, out=amax[i:i + rows])
    if not np.all(np.isfinite(amax)):
        bad = int(np.flatnonzero(~np.isfinite(amax))[0])
        raise nonfinite_error(bad, block)
    return amax


def exponents_for(amax: np.ndarray) -> np.ndarray:
    """Per block, the exponent e (int8 range) with max|x| <= 2**e, from the block maxima."""
    _, e = np.frexp(amax)  # amax = m * 2**e with 0.5 <= m < 1, so amax < 2**e (amax == 0 -> e == 0)
    e = np.where(amax == 0, EXP_MIN, e)
    if e.size and e.max() > EXP_MAX:
        bad = int(np.argmax(e))
        raise too_large_error(bad, float(amax[bad]))
    return np.clip(e, EXP_MIN, EXP_MAX).astype(np.int8)


def propose_exponents(x: np.ndarray, block: int) -> np.ndarray:
    """Per block, the exponent e (int8 range) with max|x| <= 2**e, what a worker sends to the switch."""
    return exponents_for(block_maxima(x, block))


def shift_for(exponents: np.ndarray, n_workers: int) -> np.ndarray:
    """Shift s per block (scale 2**s) from the agreed (max) exponents, for n_workers summands."""
    return headroom_bits(n_workers) - np.asarray(exponents, dtype=np.int32)


def quantize_blocks(xb: np.ndarray, exponents: np.ndarray, n_workers: int,
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """float32 blocks (n_blocks, block) -> int32 blocks scaled by the agreed per-block exponents.

    ``rng`` given: stochastic rounding (unbiased); otherwise round to nearest. The agreed exponent
    must be >= this worker's own proposal for its block (it is: the switch returns the max).
    """
    xb = np.asarray(xb, dtype=np.float32)
    s = shift_for(exponents, n_workers)
    if s.shape != (xb.shape[0],):
        raise ValueError(f"expected {xb.shape[0]} exponents for {xb.shape[0]} blocks, got {s.shape}")
    scale = np.ldexp(np.float32(1), s).astype(np.float32)
    v = xb * scale[:, None]
    if rng is None:
        q = np.rint(v, out=v)
    else:
        # floor(v) + Bernoulli(frac): exact in float32 (v + u would round when |v| >= 2**23)
        q = np.floor(v)
        q += rng.random(v.shape, dtype=np.float32) < (v - q)
    if q.size and max(q.max(), -q.min()) > 2.0 ** headroom_bits(n_workers):
        raise overflow_error()
    return q.astype(np.int32)


def quantize(x: np.ndarray, exponents: np.ndarray, n_workers: int, block: int,
             rng: np.random.Generator | None = None) -> np.ndarray:
    """Flat float32 ``x`` -> flat int32 of the same size, scaled per block of ``block`` values."""
    x = np.asarray(x, dtype=np.float32).reshape(-1)
    return quantize_blocks(blocks_of(x, block), exponents, n_workers, rng).reshape(-1)[: x.size]


def dequantize(q: np.ndarray, exponents: np.ndarray, n_workers: int, block: int) -> np.ndarray:
    """Flat int32 (one worker's values, or the switch's sum) -> float32 with the same per-block scale."""
    q = np.asarray(q).reshape(-1)
    n = q.size
    qb = blocks_of(q, block).astype(np.float32)
    s = shift_for(exponents, n_workers)
    inv = np.ldexp(np.float32(1), -s).astype(np.float32)
    return (qb * inv[:, None]).reshape(-1)[:n]


def dequantize_into(sums: np.ndarray, exponents: np.ndarray, n_workers: int, average: bool,
                    dest: np.ndarray) -> np.ndarray:
    """The switch's int32 sums (n_blocks, block) -> flat float32 ``dest`` (the tensor's size, may be
    the input itself), scaled back with the agreed exponents and divided by ``n_workers`` when
    ``average``: ``dequantize(sums) / n`` bit for bit, in chunks of ~1 MiB instead of arrays the
    size of the tensor. The native loop (worker/native/wloop.c) does the same per result."""
    sums = np.asarray(sums)
    nb, block = sums.shape
    inv = np.ldexp(np.float32(1), -shift_for(exponents, n_workers)).astype(np.float32)
    n = np.float32(n_workers)
    rows = max(1, (1 << 18) // max(block, 1))
    buf = np.empty((min(rows, nb), block), np.float32)
    for i in range(0, nb, rows):
        chunk = buf[:min(rows, nb - i)]
        chunk[...] = sums[i:i + rows]
        chunk *= inv[i:i + rows, None]
        if average:
            chunk /= n
        start = i * block
        stop = min(start + chunk.size, dest.size)
        dest[start:stop] = chunk.reshape(-1)[:stop - start]
    return dest


def error_bound(exponents: np.ndarray, n_workers: int, block: int, size: int,
                stochastic: bool = False) -> np.ndarray:
    """Per-element bound on |dequantize(sum of q) - sum of x| for ``size`` elements (before float32 output rounding)."""
    s = shift_for(exponents, n_workers).astype(np.float64)
    per_worker = 2.0 ** (-s) if stochastic else 2.0 ** (-s - 1)
    return np.repeat(n_workers * per_worker, block)[:size]
