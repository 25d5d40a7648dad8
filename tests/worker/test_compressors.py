"""Every compressor's contract: summable, same decode on every worker, unbiased where claimed,
residual update, and the advertised sparsity/bytes."""
import numpy as np
import pytest
from testbed.simswitch import SimulatedReducer, SimulatedSwitch, run_workers

from p4reduce.protocol import constants as C
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.compressors import (
    COMPRESSORS,
    Diana,
    FixedPoint,
    RandomKBlocks,
    Ternary,
    TopKBlocks,
    make_compressor,
)
from p4reduce.worker.compressors.ternary import digits_per_lane, pack_balanced, unpack_balanced
from p4reduce.worker.compressors.topk import agreed_top_blocks
from p4reduce.worker.memory import ErrorFeedback
from p4reduce.worker.wirecost import WireCost

N = 4
WIRE = WireCost(C.LANES, C.SUBBLOCK)     # the simulated job's layout: the default build's


def _inputs(size=1000, seed=0, n=N):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(size).astype(np.float32) * (1 + r) for r in range(n)]


def _one_step(name, xs, **options):
    """allreduce xs through the simulated switch; per rank: (result, sent lanes decoded, ctx)."""
    def fn(red):
        comp, _ = make_compressor(name, seed=7, rank=red.rank, **options)
        x = xs[red.rank]
        src, ctx = comp.compress(x, red, key="t")
        sums, ctx.exponents = red.aggregate(src)
        return comp.decompress(sums, ctx), comp.decompress(src.sent, ctx), src.sent.copy()
    return run_workers(len(xs), fn, WIRE)


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_summable_and_identical_on_every_worker(name):
    """decompress(sum of lanes) == sum of decompress(lanes_i), and every rank decodes the same."""
    xs = _inputs(1000)
    res = _one_step(name, xs)
    for r in range(1, N):
        assert np.array_equal(res[0][0], res[r][0]), f"rank {r} decoded a different aggregate"
    own_sum = np.sum([r[1] for r in res], axis=0)
    np.testing.assert_allclose(res[0][0], own_sum, rtol=1e-5, atol=1e-5 * np.abs(own_sum).max())


def test_fixed_point_matches_float_sum_within_bound():
    xs = _inputs(5000, seed=3)
    got = _one_step("fixedpoint", xs)[0][0]
    exact = np.sum([x.astype(np.float64) for x in xs], axis=0)
    # 28 bits of headroom for 4 workers; the block max is at most ~4 sigma * 4: error << 1e-6
    assert np.abs(got - exact).max() < 4 * 2.0 ** -(28 + 1) * 2 ** 5 + 1e-6


@pytest.mark.parametrize("name", ["terngrad", "fixedpoint-sr"])
def test_unbiased_compressors_average_to_the_true_sum(name):
    """Mean over T independent compressions converges to the exact sum (5-sigma tolerance)."""
    xs = _inputs(256, seed=5)
    exact = np.sum([x.astype(np.float64) for x in xs], axis=0)
    trials = 300

    def fn(red):
        comp, _ = make_compressor(name, seed=11, rank=red.rank)
        comm = Communicator(red, comp)
        outs = np.array([comm.allreduce(xs[red.rank]) for _ in range(trials)])
        return outs
    outs = run_workers(N, fn, WIRE)[0]
    outs = outs.astype(np.float64)  # a float32 mean of 300 values would add its own error
    mean, sd = outs.mean(axis=0), outs.std(axis=0)
    # 5 standard errors, plus the float32 rounding of the output itself
    tol = 5 * sd / np.sqrt(trials) + 4 * np.finfo(np.float32).eps * np.abs(exact)
    assert np.mean(np.abs(mean - exact) <= tol) > 0.99
    if name == "terngrad":  # the variance is real: a biased test of a single draw would fail
        assert np.abs(outs[0] - exact).max() > 0.5


def test_3lc_is_biased_but_sparser_with_a_larger_multiplier():
    rng = np.random.default_rng(2)
    xs = [rng.uniform(-1, 1, 3200).astype(np.float32) for _ in range(N)]
    exact = np.sum(xs, axis=0)
    zeros = {}
    for m in (1.0, 1.9):
        res = _one_step("3lc", xs, sparsity_multiplier=m)
        own = res[0][1]
        zeros[m] = np.mean(own == 0)
    assert zeros[1.9] > zeros[1.0] + 0.2
    # deterministic rounding: two runs give the same thing, and the estimate is not the sum
    again = _one_step("3lc", xs, sparsity_multiplier=1.9)
    assert np.array_equal(res[0][0], again[0][0])
    assert np.abs(res[0][0] - exact).mean() > 0.1


def test_ternary_packing_round_trip_and_sum_without_carries():
    rng = np.random.default_rng(0)
    for n in (1, 2, 4, 8, 16):
        k = digits_per_lane(n)
        assert (2 * n + 1) ** k // 2 <= 2**31 - 1 < (2 * n + 1) ** (k + 1) // 2
        ts = [rng.integers(-1, 2, 1003).astype(np.int8) for _ in range(n)]
        packed = np.sum([pack_balanced(t, n).astype(np.int64) for t in ts], axis=0)
        assert np.abs(packed).max() <= 2**31 - 1
        assert np.array_equal(unpack_balanced(packed, n, 1003), np.sum(ts, axis=0))
    assert digits_per_lane(4) == 10


def test_ternary_sends_ten_values_per_lane_for_four_workers():
    xs = _inputs(C.LANES * 10 * 7, seed=1)
    lanes = _one_step("terngrad", xs)[0][2]
    assert lanes.shape == (7, C.LANES)


def test_topk_all_workers_pick_the_same_blocks_by_aggregated_norm():
    lanes = C.LANES
    xs = [np.zeros(lanes * 20, np.float32) for _ in range(N)]
    # block 3 big on one worker only, block 7 medium on all, block 12 small everywhere
    xs[0][3 * lanes:4 * lanes] = 10.0
    for x in xs:
        x[7 * lanes:8 * lanes] = 4.0
        x[12 * lanes:13 * lanes] = 0.5
    res = _one_step("topk", xs, k=2)
    got = res[0][0].reshape(20, lanes)
    assert set(np.flatnonzero(np.abs(got).sum(axis=1))) == {3, 7}
    for r in res:
        assert r[2].shape == (2, lanes)  # only k blocks on the wire
    assert np.allclose(got[7], 16.0) and np.allclose(got[3], 10.0)


def test_agreed_top_blocks_breaks_ties_by_index():
    assert list(agreed_top_blocks(np.array([5, 9, 5, 9, 1]), 3)) == [0, 1, 3]


def test_randomk_uses_the_job_seed_and_rescales_unbiasedly():
    comp_a, comp_b = RandomKBlocks(k=0.25, seed=42), RandomKBlocks(k=0.25, seed=42)
    assert np.array_equal(comp_a.indices("w", 3, 100), comp_b.indices("w", 3, 100))
    assert not np.array_equal(comp_a.indices("w", 3, 100), comp_a.indices("w", 4, 100))
    assert not np.array_equal(comp_a.indices("w", 3, 100), RandomKBlocks(k=0.25, seed=43).indices("w", 3, 100))
    xs = _inputs(C.LANES * 16, seed=9)
    exact = np.sum(xs, axis=0)
    trials = 400

    def fn(red):
        comm = Communicator(red, RandomKBlocks(k=0.25, seed=1, rescale=True))
        return np.array([comm.allreduce(xs[red.rank]) for _ in range(trials)])
    outs = run_workers(N, fn, WIRE)[0]
    assert np.mean(outs == 0) > 0.7  # three blocks in four are not sent
    z = np.abs(outs.mean(0) - exact) / (outs.std(0) / np.sqrt(trials))
    assert np.mean(z < 5) > 0.99


@pytest.mark.parametrize("name", ["topk", "randomk", "threshold", "3lc"])
def test_error_feedback_residual_is_what_was_not_sent(name):
    xs = _inputs(32 * 40, seed=4)

    def fn(red):
        comp, _ = make_compressor(name, seed=3, rank=red.rank, **({"threshold": 0.9} if name == "threshold" else {}))
        mem = ErrorFeedback()
        comm = Communicator(red, comp, mem)
        g = xs[red.rank]
        comm.allreduce(g, key="w")
        r1 = mem.residuals["w"].copy()
        comm.allreduce(g, key="w")
        return g, r1, mem.residuals["w"].copy()
    g, r1, r2 = run_workers(N, fn, WIRE)[1]
    assert 0 < np.count_nonzero(r1) < r1.size or name == "3lc"
    assert np.abs(r1).max() > 0.1
    # dropped values are kept whole: where the residual is non-zero for block-sparse methods,
    # residual == gradient (nothing of it was sent)
    if name in ("topk", "randomk", "threshold"):
        dropped = np.abs(r1) > 1e-4
        np.testing.assert_allclose(r1[dropped], g[dropped], rtol=1e-6)
    # the second step compensated g + r1: what was sent plus the new residual is exactly that
    assert not np.array_equal(r1, r2)


def test_error_feedback_sends_everything_eventually():
    """With EF, the running sum of top-k outputs tracks the running sum of true gradients."""
    xs = _inputs(32 * 30, seed=6)
    steps = 40

    def fn(red):
        comm = Communicator(red, TopKBlocks(k=3), ErrorFeedback())
        return np.sum([comm.allreduce(xs[red.rank]) for _ in range(steps)], axis=0)
    acc = run_workers(N, fn, WIRE)[0]
    exact = steps * np.sum(xs, axis=0)
    # without EF, blocks never chosen would be missing entirely; with EF the lag is bounded
    assert np.abs(acc - exact).max() < 0.25 * np.abs(exact).max()


def test_diana_shifts_learn_a_constant_gradient_and_variance_falls():
    xs = _inputs(32 * 10 * 4, seed=8)
    exact = np.mean(xs, axis=0)

    def fn(red):
        comm = Communicator(red, Diana(Ternary("terngrad", seed=[5, red.rank]), alpha=0.3))
        return np.array([comm.allreduce(xs[red.rank], average=True) for _ in range(60)])
    outs = run_workers(N, fn, WIRE)[0]
    err_first = np.abs(outs[0] - exact).mean()
    err_last = np.abs(outs[-10:] - exact).mean()
    assert err_last < 0.2 * err_first
    # plain TernGrad does not improve over time
    def fn2(red):
        comm = Communicator(red, Ternary("terngrad", seed=[5, red.rank]))
        return np.array([comm.allreduce(xs[red.rank], average=True) for _ in range(10)])
    plain = run_workers(N, fn2, WIRE)[0]
    assert np.abs(plain - exact).mean() > 3 * err_last


def test_int32_passes_through_exactly_with_no_saturation():
    rng = np.random.default_rng(0)
    xs = [rng.integers(-2**28, 2**28, size=(3, 7, 11), dtype=np.int32) for _ in range(N)]
    outs = run_workers(N, lambda red: Communicator(red).allreduce(xs[red.rank]), WIRE)
    want = np.sum([x.astype(np.int64) for x in xs], axis=0)
    for o in outs:
        assert o.dtype == np.int32 and o.shape == (3, 7, 11)
        assert np.array_equal(o, want)


def test_float_shapes_and_empty_arrays():
    xs = [np.full((2, 3, 5), r, np.float32) for r in range(N)]
    out = run_workers(N, lambda red: Communicator(red).allreduce(xs[red.rank], average=True), WIRE)[0]
    assert out.shape == (2, 3, 5) and np.allclose(out, 1.5)
    empty = run_workers(N, lambda red: Communicator(red).allreduce(np.zeros(0, np.float32)), WIRE)[0]
    assert empty.shape == (0,)


def test_sparse_wire_cost_skips_zero_blocks():
    x = np.zeros((100, C.LANES), np.int32)
    x[5, 3] = 1
    dense, sparse = WIRE, WireCost(C.LANES, C.SUBBLOCK, sparse=True, streams=4)
    assert dense.bytes_for(x) == 100 * (66 + 4 * C.LANES)
    assert sparse.bytes_for(x) == (1 + 4) * 66 + C.SUBBLOCK_BYTES   # headers, and one sub-block


def test_mismatched_calls_are_a_clear_error():
    from p4reduce.worker.reducer import AggregationError
    with pytest.raises(AggregationError, match="different operations/sizes"):
        run_workers(2, lambda red: red.sum_int32(np.zeros(10 + 2 * C.LANES * red.rank, np.int32)), WIRE, timeout=5)


def test_unknown_compressor_name():
    with pytest.raises(ValueError, match="unknown compressor 'nope'; choose one of fixedpoint"):
        make_compressor("nope")


@pytest.mark.parametrize("memory", [False, True])
def test_a_call_keeps_a_copy_of_what_it_sent_only_when_something_reads_it(memory):
    """Fixed point without error feedback reads no `sent`: the source keeps none (one copy of the
    tensor less per call); with an error-feedback memory it is kept, and the result is the same."""
    sources = []

    class Recording(SimulatedReducer):
        def aggregate(self, source):
            sources.append(source)
            return super().aggregate(source)

    x = _inputs(1000, seed=7, n=1)[0]
    comm = Communicator(Recording(SimulatedSwitch(1, WIRE), 0), FixedPoint(), ErrorFeedback() if memory else None)
    out = comm.allreduce(x, key="w")
    assert sources[0].keep_sent is memory and (sources[0].sent is not None) is memory
    np.testing.assert_allclose(out, x, atol=2.0 ** -20)
