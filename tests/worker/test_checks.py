"""`p4reduce-worker allreduce --check` has teeth (worker/checks.py): every registered compressor
passes its documented contract on the simulated switch, and each check fails on a compressor
broken on purpose (registered with worker.register_compressor, as a user would)."""
import numpy as np
import pytest
from testbed.simswitch import run_workers

from p4reduce import worker
from p4reduce.protocol import constants as C
from p4reduce.worker import cli
from p4reduce.worker.checks import AllreduceCheck
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.compressors import (
    COMPRESSORS,
    Diana,
    FixedPoint,
    RandomKBlocks,
    Ternary,
    ThresholdBlocks,
    TopKBlocks,
    make_compressor,
)
from p4reduce.worker.memory import ErrorFeedback, NoMemory
from p4reduce.worker.reducer import QuantizedSource
from p4reduce.worker.wirecost import WireCost

N = 4
WIRE = WireCost(C.LANES, C.SUBBLOCK)
BUILTIN = ("fixedpoint", "fixedpoint-sr", "terngrad", "3lc", "topk", "randomk", "threshold", "diana")


def run_checked(name, calls=6, size=40_000, dtype="float32", error_feedback=None, **options):
    """Every rank allreduces the CLI's tensors through `name` with the check installed; per rank
    (per-call problems, verdict problems, summary)."""
    def fn(red):
        comp, ef = make_compressor(name, seed=7, rank=red.rank, **options)
        use_ef = ef if error_feedback is None else error_feedback
        comm = Communicator(red, comp, ErrorFeedback() if use_ef else NoMemory())
        chk = AllreduceCheck(comm, dtype)
        problems = []
        for i in range(calls):
            xs = [cli.tensor_for(3, k, i, size, dtype) for k in range(N)]
            problems += chk.check(xs, comm.allreduce(xs[red.rank]))
        overall, summary = chk.verdict()
        return problems, overall, summary
    return run_workers(N, fn, WIRE)


@pytest.mark.parametrize("name, options", [(n, {}) for n in BUILTIN] + [
    ("randomk", {"rescale": True}), ("topk", {"k": 3}), ("3lc", {"sparsity_multiplier": 1.5}),
    ("threshold", {"threshold": 0.9})])
def test_every_real_compressor_passes_its_check(name, options):
    ef = False if options.get("rescale") else None      # randomk's unbiasedness is without error feedback
    for problems, overall, summary in run_checked(name, error_feedback=ef, **options):
        assert problems == [] and overall == [], (problems, overall)
        assert summary["contract"] != "none known"
        if name in ("fixedpoint-sr", "terngrad", "diana") or options.get("rescale"):
            assert summary["unbiased"]["elements"] > 500 and summary["unbiased"]["max_z"] < 5


def test_int32_is_checked_exactly():
    for problems, overall, summary in run_checked("fixedpoint", calls=2, dtype="int32"):
        assert problems == [] and overall == [] and summary["contract"] == "exact int32 sum"
    chk = AllreduceCheck(Communicator(type("R", (), {"n_workers": 2, "lanes": 256})()), "int32")
    xs = [np.arange(10, dtype=np.int32)] * 2
    assert chk.check(xs, 2 * xs[0]) == []
    bad = 2 * xs[0]
    bad[7] += 1
    assert "int32 sum not exact: 1 elements, first at 7" in chk.check(xs, bad)[0]


# -- compressors broken on purpose, one per check -------------------------------------------------
class ScaledFixedPoint(FixedPoint):        # decodes 0.1 % too large: outside the bound
    def decompress(self, lanes, ctx):
        return super().decompress(lanes, ctx) * np.float32(1.001)


class NearestClaimingStochastic(FixedPoint):  # says stochastic, rounds to nearest: biased
    def __init__(self):
        super().__init__(stochastic=True)
        self._rng = None


class LeakyTopK(TopKBlocks):               # a small value outside the agreed blocks
    def decompress(self, lanes, ctx):
        out = super().decompress(lanes, ctx)
        out[np.flatnonzero(out == 0)[:1]] = 1e-3
        return out


class LowTopK(TopKBlocks):                 # selects the k smallest summed norms, sends the true values
    def compress(self, x, reducer, key=""):
        from p4reduce.worker.compressors.base import Context
        from p4reduce.worker.compressors.blocks import block_norms, count_for, gather, n_blocks
        x = np.asarray(x, np.float32).reshape(-1)
        k = count_for(self.k, n_blocks(x.size, reducer.lanes))
        sums, _ = reducer.sum_fixed_point(block_norms(x, reducer.lanes))
        idx = np.sort(np.argsort(sums, kind="stable")[:k])
        return (QuantizedSource(gather(x, idx, reducer.lanes), reducer.lanes, reducer.n_workers),
                Context(size=x.size, n_workers=reducer.n_workers, indices=idx))


class HalfRescale(RandomKBlocks):          # rescales by nb/(2k): biased
    def compress(self, x, reducer, key=""):
        return super().compress(np.asarray(x, np.float32) * np.float32(0.5), reducer, key)


class LyingContribution(TopKBlocks):       # tells error feedback its lanes stand for half of them
    def contribution(self, lanes, ctx, key=""):
        return super().contribution(lanes, ctx, key) * np.float32(0.5)


class KeepsEverything(ThresholdBlocks):    # never zeroes a block
    def compress(self, x, reducer, key=""):
        src, ctx = super().compress(x, reducer, key)
        return QuantizedSource(np.asarray(x, np.float32), reducer.lanes, reducer.n_workers), ctx


class OffLatticeTernary(Ternary):          # decodes 1.5 scale units per digit: off the lattice
    def decompress(self, lanes, ctx):
        return super().decompress(lanes, ctx) * np.float32(1.5)


class RoundingTernGrad(Ternary):           # terngrad that rounds instead of drawing: biased
    def __init__(self, **kw):
        super().__init__("terngrad", **kw)

    def compress(self, x, reducer, key=""):
        self.mode = "3lc"                  # TernarySource rounds in 3lc mode
        src, ctx = super().compress(x, reducer, key)
        return src, ctx


class WrongScale3lc(Ternary):              # encodes with twice the agreed scale
    def __init__(self, **kw):
        super().__init__("3lc", **kw)

    def compress(self, x, reducer, key=""):
        src, ctx = super().compress(x, reducer, key)
        enc = src.encode
        src.encode = lambda blocks, exps: enc(blocks, exps + 1)    # type: ignore[method-assign]
        return src, ctx


class ForgetfulDiana(Diana):               # forgets to add the mean shift back
    def finish(self, mean, ctx, key=""):
        super().finish(mean, ctx, key)
        return mean


BROKEN = {
    "broken-fixedpoint": (lambda seed, rank, **kw: ScaledFixedPoint(), False, "outside its documented bound"),
    "broken-sr": (lambda seed, rank, **kw: NearestClaimingStochastic(), False, "biased"),
    "broken-topk-leak": (lambda seed, rank, **kw: LeakyTopK(), True, "non-zero outside the agreed blocks"),
    "broken-topk-choice": (lambda seed, rank, **kw: LowTopK(), True, "not the k largest"),
    "broken-randomk": (lambda seed, rank, **kw: HalfRescale(seed=seed, rescale=True), False, "biased"),
    "broken-ef": (lambda seed, rank, **kw: LyingContribution(), True,
                  "residual + sent != compensated input"),
    "broken-threshold": (lambda seed, rank, **kw: KeepsEverything(threshold=0.9), True,
                         "non-zero in blocks no rank kept"),
    "broken-ternary": (lambda seed, rank, **kw: OffLatticeTernary("terngrad", seed=[seed, rank]), False,
                       "not in the lattice"),
    "broken-terngrad": (lambda seed, rank, **kw: RoundingTernGrad(seed=[seed, rank]), False, "biased"),
    "broken-3lc": (lambda seed, rank, **kw: WrongScale3lc(), True, "not the sum of rint"),
    "broken-diana": (lambda seed, rank, **kw: ForgetfulDiana(Ternary("terngrad", seed=[seed, rank])), False,
                     "not in the inner lattice"),
}


@pytest.fixture(scope="module", autouse=True)
def registered():
    for name, (factory, ef, _) in BROKEN.items():
        if name not in COMPRESSORS:
            worker.register_compressor(name, factory, error_feedback=ef)
    yield
    for name in BROKEN:
        COMPRESSORS.pop(name, None)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_each_check_fails_on_a_broken_compressor(name):
    expected = BROKEN[name][2]
    for problems, overall, _ in run_checked(name):
        found = problems + overall
        assert any(expected in p for p in found), (expected, found[:3])


def test_an_unknown_compressor_is_said_unchecked():
    class Mine(FixedPoint):
        pass
    chk = AllreduceCheck(Communicator(type("R", (), {"n_workers": 2, "lanes": 256})(),
                                      type("Other", (TopKBlocks.__base__,), {
                                          "compress": lambda *a: None, "decompress": lambda *a: None})()),
                         "float32")
    assert chk.contract == "none known"
    assert AllreduceCheck(Communicator(type("R", (), {"n_workers": 2, "lanes": 256})(), Mine()),
                          "float32").contract == "fixed point bound"
