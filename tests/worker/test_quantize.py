"""Shared-exponent fixed point: no overflow by construction, documented error bound, exact int32."""
import numpy as np
import pytest

from p4reduce.worker import quantize as qz
from p4reduce.worker.reducer import saturate_int32 as wrap_int32


def _agree(xs, block):
    return np.max([qz.propose_exponents(x, block) for x in xs], axis=0)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8, 64])
def test_headroom_is_the_largest_overflow_free_width(n):
    k = qz.headroom_bits(n)
    assert n * 2**k <= 2**31 - 1 < n * 2 ** (k + 1)


def test_exponent_bounds_block_maximum():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(1000) * 10.0 ** rng.integers(-20, 20, 1000)).astype(np.float32)
    e = qz.propose_exponents(x, 10)
    amax = np.abs(x.reshape(100, 10)).max(axis=1)
    assert np.all(amax <= 2.0 ** e.astype(float))
    assert np.all(amax > 2.0 ** (e.astype(float) - 1))  # tight: not a wasteful bound


@pytest.mark.parametrize("n", [2, 4, 7])
def test_sum_within_error_bound_and_never_overflows(n):
    rng = np.random.default_rng(n)
    block = 32
    # heavy-tailed values across many magnitudes, worst case: every worker at the block maximum
    xs = [(rng.standard_normal(1000) * 10.0 ** rng.integers(-6, 6, 1000)).astype(np.float32) for _ in range(n)]
    for x in xs:
        x[::block] = np.float32(2.0 ** 20 - 1)  # same huge value at the start of each block on all workers
    exps = _agree(xs, block)
    qs = [qz.quantize(x, exps, n, block) for x in xs]
    total64 = np.sum([q.astype(np.int64) for q in qs], axis=0)
    assert np.abs(total64).max() <= 2**31 - 1
    got = qz.dequantize(wrap_int32(total64), exps, n, block)
    exact = np.sum([x.astype(np.float64) for x in xs], axis=0)
    bound = qz.error_bound(exps, n, block, exact.size)
    err = np.abs(got.astype(np.float64) - exact)
    assert np.all(err <= bound + np.abs(exact) * 2.0**-23)
    # and the bound is meaningful: relative to the block max it is below 2**-(headroom)
    assert np.all(bound <= n * 2.0 ** (exps.astype(float).repeat(block)[: exact.size] - qz.headroom_bits(n) - 1))


def test_overflow_free_at_the_extreme():
    """Every worker sends +max everywhere: the integer sum still fits in int32."""
    n, block = 4, 8
    x = np.full(64, np.float32(1.0e37))
    exps = _agree([x] * n, block)
    q = qz.quantize(x, exps, n, block)
    assert int(q.astype(np.int64).max()) * n <= 2**31 - 1
    assert np.allclose(qz.dequantize(q * n, exps, n, block), 4 * 1.0e37, rtol=1e-6)


def test_stochastic_rounding_is_unbiased():
    n, block = 4, 16
    x = np.full(block, np.float32(1.0))
    x[1:] = np.float32(1.0) / 3  # not representable: rounding to nearest is biased
    exps = qz.propose_exponents(x, block) + np.int8(20)  # coarse scale: large rounding steps
    step = 2.0 ** -int(qz.shift_for(exps, n)[0])
    rng = np.random.default_rng(0)
    trials = 4000
    mean = np.mean([qz.dequantize(qz.quantize(x, exps, n, block, rng), exps, n, block) for _ in range(trials)], axis=0)
    nearest = qz.dequantize(qz.quantize(x, exps, n, block), exps, n, block)
    # standard error of the mean is <= step / (2 sqrt(trials)); allow 5 sigma
    assert np.all(np.abs(mean[1:] - 1 / 3) < 5 * step / (2 * np.sqrt(trials)))
    assert abs(nearest[1] - 1 / 3) > 20 * step / (2 * np.sqrt(trials))  # the test could tell the difference


def test_zero_block_and_padding():
    x = np.zeros(70, np.float32)
    x[65] = 1.5
    e = qz.propose_exponents(x, 64)
    assert e[0] == qz.EXP_MIN and e[1] == 1
    q = qz.quantize(x, e, 4, 64)
    assert q.shape == (70,) and np.count_nonzero(q) == 1
    assert qz.dequantize(q, e, 4, 64)[65] == 1.5


@pytest.mark.parametrize("bad,msg", [(np.nan, "NaN or inf"), (np.inf, "NaN or inf")])
def test_non_finite_input_is_a_clear_error(bad, msg):
    x = np.ones(100, np.float32)
    x[70] = bad
    with pytest.raises(qz.QuantizationError, match=rf"block 1 \(elements 64..127\) contains {msg}"):
        qz.propose_exponents(x, 64)


def test_exponent_below_own_proposal_is_rejected():
    x = np.full(8, np.float32(100.0))
    e = qz.propose_exponents(x, 8) - np.int8(3)
    with pytest.raises(qz.QuantizationError, match="max over workers"):
        qz.quantize(x, e, 4, 8)
