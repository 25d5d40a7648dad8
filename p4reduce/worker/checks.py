"""What ``p4reduce-worker allreduce --check`` verifies: every compressor against what
docs/compressors.md promises, call by call and, for the unbiased ones, over the calls.

Every rank can rebuild every rank's input (the CLI's tensors come from (seed, rank, index)), so a
rank checks the switch's aggregate against the inputs of all ranks. Error feedback is followed for
every rank by the documented rule (``residual = compensated - what its lanes stand for``, the
lanes computed here with the documented quantizer, not by the compressor under test), so the
compensated inputs of the others are known too. What is checked, per family:

* int32 (no compressor): the sum is exact.
* ``fixedpoint``: the agreed exponent is the max of every rank's proposal, and every element is
  within ``quantize.error_bound`` (round to nearest) plus float32 rounding of the result;
  ``fixedpoint-sr``: the same with the stochastic bound (``2**-s`` per worker), and unbiased.
* ``topk`` / ``randomk``: k blocks agreed (k as documented), the aggregate is zero outside them
  and the sum of the compensated inputs on them (within the fixed-point bound), the exponents
  are the max over ranks of the selected values; top-k takes the k largest summed block norms;
  ``randomk`` with ``rescale`` and without error feedback: unbiased.
* ``threshold``: per rank the blocks with norm >= threshold * max norm; the aggregate is the sum of
  the kept blocks (bound) and zero where no rank kept one.
* ``terngrad`` / ``3lc``: the scale is ``m * 2**E`` with E the max of every rank's proposal per
  packet of ``lanes * K`` values, the aggregate is an integer multiple of it within [-N, N];
  3lc's is exactly the sum of ``rint(x / scale)``; terngrad's is unbiased.
* ``diana``: ``result - N * H`` (H the mean shift, followed by the documented rule from the
  results) is in the inner compressor's lattice; unbiased.
* error feedback (any compressor with a memory): ``residual + decode(own lanes) == compensated``
  (one float32 rounding).

Unbiasedness: over all calls, the elements are put in bins (by the exact value over its scale, and
by the error round-to-nearest would make) and in every bin ``|sum of errors|`` must stay within
``Z_TOLERANCE`` standard deviations of the documented variance (plus, where a deterministic error
remains, its bound). Only elements whose float32 result is exact enter (for fixed point: sums
below 2**24 quanta), so float32 output rounding cannot hide a bias. With 16 bins at 5 sigma a
correct compressor fails with probability below 1e-5.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import quantize as qz
from .compressors import Compressor, Diana, FixedPoint, RandomKBlocks, Ternary, ThresholdBlocks, TopKBlocks
from .compressors.base import Context
from .compressors.blocks import block_norms, count_for, gather, n_blocks
from .compressors.ternary import digits_per_lane
from .memory import ErrorFeedback

Z_TOLERANCE = 5.0       # standard deviations a bin's summed error may reach (unbiasedness)
BINS = 8                # bins per key (two keys: 16 tests)
EPS32 = 2.0 ** -23      # one float32 rounding, relative (with margin: 2**-24 is the unit roundoff)


class Recorder(Compressor):
    """Wraps the compressor under test to see what it agreed (ctx) and sent (own lanes); passes
    everything through unchanged. Only the check installs it (not on fixedpoint, whose fused path
    it would turn off: that one is checked from the inputs alone)."""

    needs_contribution = True      # keeps the lanes this worker sent

    def __init__(self, inner: Compressor):
        self.inner = inner
        self.name, self.unbiased = inner.name, inner.unbiased
        self.last: dict[str, Any] = {}

    def compress(self, x, reducer, key=""):
        src, ctx = self.inner.compress(x, reducer, key)
        self.last = {"compensated": np.asarray(x, np.float32).reshape(-1), "ctx": ctx}
        return src, ctx

    def decompress(self, lanes, ctx):
        return self.inner.decompress(lanes, ctx)

    def contribution(self, lanes, ctx, key=""):
        c = self.inner.contribution(lanes, ctx, key)
        self.last["sent"] = np.array(lanes, dtype=np.int32, copy=True)
        return c


class _FinishingRecorder(Recorder):
    """For compressors that post-process the mean (DIANA): the Communicator calls finish only on
    compressors whose class overrides it, so the plain Recorder must not."""

    def finish(self, mean, ctx, key=""):
        return self.inner.finish(mean, ctx, key)


class Unbiased:
    """Per-bin sums of errors, variances and deterministic allowances, accumulated over calls."""

    def __init__(self) -> None:
        self.err = np.zeros((2, BINS))
        self.var = np.zeros((2, BINS))
        self.allow = np.zeros((2, BINS))
        self.elements = 0

    def add(self, err, var, allow, value_key, round_key=None) -> None:
        """value_key in [-1, 1] (the exact value over its scale), round_key in [-0.5, 0.5]."""
        self.elements += int(np.size(err))
        keys = [(np.asarray(value_key), 1.0), (np.asarray(round_key) if round_key is not None else None, 0.5)]
        for j, (key, half) in enumerate(keys):
            if key is None:
                continue
            b = np.clip(((key + half) / (2 * half) * BINS).astype(np.int64), 0, BINS - 1)
            self.err[j] += np.bincount(b, weights=err, minlength=BINS)
            self.var[j] += np.bincount(b, weights=var, minlength=BINS)
            self.allow[j] += np.bincount(b, weights=allow, minlength=BINS)

    def verdict(self) -> tuple[list[str], dict[str, Any]]:
        problems, worst = [], 0.0
        for j, label in enumerate(("value", "rounding")):
            for b in range(BINS):
                sd = math.sqrt(self.var[j, b])
                if sd == 0 and self.err[j, b] == 0:
                    continue
                excess = abs(self.err[j, b]) - self.allow[j, b]
                z = excess / sd if sd > 0 else (math.inf if excess > 0 else 0.0)
                worst = max(worst, z)
                if z > Z_TOLERANCE:
                    problems.append(f"biased: the errors of {label} bin {b + 1}/{BINS} sum to "
                                    f"{self.err[j, b]:.4g}, {z:.1f} standard deviations (tolerance "
                                    f"{Z_TOLERANCE:g}; sd {sd:.3g}, deterministic allowance {self.allow[j, b]:.3g})")
        return problems, {"elements": self.elements, "max_z": round(worst, 2), "tolerance_z": Z_TOLERANCE,
                          "bins": 2 * BINS}


def _first_bad(mask: np.ndarray, got: np.ndarray, want: np.ndarray, bound: np.ndarray | None = None) -> str:
    i = int(np.flatnonzero(mask)[0])
    extra = f" (bound {bound[i]:.3g})" if bound is not None else ""
    return f"{int(mask.sum())} elements, first at {i}: got {got[i]!r}, expected {want[i]!r}{extra}"


class AllreduceCheck:
    """Checks one rank's allreduce results, call by call (``check``) and over the calls
    (``verdict``). Install it before the first call: it may wrap the communicator's compressor."""

    def __init__(self, communicator: Any, dtype: str, key: str = ""):
        self.comm, self.dtype, self.key = communicator, dtype, key
        self.n, self.lanes = communicator.n_workers, communicator.reducer.lanes
        comp = communicator.compressor
        self.inner: Compressor = comp.inner if isinstance(comp, Recorder) else comp
        self.recorder: Recorder | None = comp if isinstance(comp, Recorder) else None
        if dtype != "int32" and self.recorder is None and type(self.inner) is not FixedPoint:
            cls = Recorder if type(self.inner).finish is Compressor.finish else _FinishingRecorder
            self.recorder = cls(self.inner)
            communicator.compressor = self.recorder
        mem = communicator.memory
        self.ef = isinstance(mem, ErrorFeedback)
        self.beta = mem.beta if self.ef else np.float32(1)
        self.residuals: list[np.ndarray | None] = [None] * self.n
        self.drift: np.ndarray | None = None     # bound on |simulated - true| residual sums (stochastic + EF)
        self.stats = Unbiased()
        self.H: np.ndarray | None = None         # DIANA's mean shift, followed from the results
        self.unbiased_claim = self._unbiased_claim()
        self.calls = 0
        self.contract = self._contract()

    # -- what is claimed -------------------------------------------------------------------
    def _contract(self) -> str:
        c = self.inner
        if self.dtype == "int32":
            return "exact int32 sum"
        if isinstance(c, Diana):
            return "diana: shifted lattice, unbiased"
        for cls, text in ((FixedPoint, "fixed point bound"), (TopKBlocks, "top-k blocks"),
                          (RandomKBlocks, "random-k blocks"), (ThresholdBlocks, "threshold blocks"),
                          (Ternary, "ternary lattice")):
            if isinstance(c, cls):
                return text + (", unbiased" if self.unbiased_claim else "")
        return "none known"

    def _unbiased_claim(self) -> bool:
        c = self.inner
        if self.dtype == "int32" or self.ef:
            return False
        if isinstance(c, RandomKBlocks):
            return bool(c.rescale)          # docs: rescale makes the estimate unbiased
        if isinstance(c, (FixedPoint, Ternary, Diana)):
            return bool(c.unbiased)
        return False

    # -- per call ------------------------------------------------------------------------------
    def _compensated(self, xs: list[np.ndarray]) -> list[np.ndarray]:
        out = []
        for k, x in enumerate(xs):
            x = np.asarray(x, np.float32).reshape(-1)
            r = self.residuals[k]
            out.append(x if r is None or r.size != x.size else x + self.beta * r)
        return out

    def check(self, xs: list[np.ndarray], got: np.ndarray) -> list[str]:
        """Problems with ``got``, the result of allreducing (summing) ``xs[rank]`` on every rank."""
        self.calls += 1
        got = np.asarray(got).reshape(-1)
        if self.dtype == "int32":
            want = np.sum([np.asarray(v, np.int64).reshape(-1) for v in xs], axis=0)
            bad = got != want
            return [f"int32 sum not exact: {_first_bad(bad, got, want)}"] if bad.any() else []
        if not np.all(np.isfinite(got)):
            return [f"result not finite at element {int(np.flatnonzero(~np.isfinite(got))[0])}"]
        comps = self._compensated(xs)
        c = self.inner
        if isinstance(c, Diana):
            problems = self._diana(xs, got)
        elif isinstance(c, FixedPoint):
            problems = self._fixed_point(comps, got, c.stochastic)
        elif isinstance(c, (TopKBlocks, RandomKBlocks)):
            problems = self._selected_blocks(comps, got)
        elif isinstance(c, ThresholdBlocks):
            problems = self._threshold(comps, got)
        elif isinstance(c, Ternary):
            problems = self._ternary(comps, got)
        else:
            return []
        if self.ef and self.recorder is not None:
            problems += self._own_residual()
        return problems

    def _last(self) -> dict[str, Any]:
        if self.recorder is None or "ctx" not in self.recorder.last:
            raise RuntimeError("the check sees no call: install AllreduceCheck before allreducing")
        return self.recorder.last

    def _decode_own(self, sent: np.ndarray, ctx: Context, size: int) -> np.ndarray:
        """What this worker's lanes stand for, decoded by the documented rule (not the compressor)."""
        c = self.inner
        E = ctx.agreed_exponents()
        if isinstance(c, Ternary):
            return c.decompress(sent, ctx)   # unpacking digits: exercised by the lattice checks
        vals = qz.dequantize(sent.reshape(-1), E, self.n, self.lanes).astype(np.float32)
        if ctx.indices is None:
            return vals[:size]
        out = np.zeros((n_blocks(size, self.lanes), self.lanes), np.float32)
        out[ctx.indices] = vals.reshape(len(ctx.indices), self.lanes)
        return out.reshape(-1)[:size]

    def _own_residual(self) -> list[str]:
        last = self._last()
        comp, ctx, sent = last["compensated"], last["ctx"], last.get("sent")
        res = self.comm.memory.residuals.get(self.key)
        if sent is None or res is None:
            return ["error feedback: the memory kept no residual for this call"]
        own = self._decode_own(sent, ctx, comp.size).astype(np.float64)
        total = res.astype(np.float64) + own
        tol = EPS32 * (np.abs(comp) + np.abs(own)) + 1e-30
        bad = np.abs(total - comp) > tol
        return [f"error feedback: residual + sent != compensated input: {_first_bad(bad, total, comp)}"] \
            if bad.any() else []

    def _update(self, k: int, comp: np.ndarray, sent_value: np.ndarray) -> None:
        if self.ef:
            self.residuals[k] = (comp - sent_value).astype(np.float32)

    def _within(self, what: str, got: np.ndarray, want: np.ndarray, bound: np.ndarray) -> list[str]:
        bad = np.abs(got.astype(np.float64) - want) > bound
        return [f"{what}: {_first_bad(bad, got, want, bound)}"] if bad.any() else []

    def _drift(self, size: int) -> np.ndarray:
        return self.drift if self.drift is not None and self.drift.size == size else np.zeros(size)

    def _fixed_point(self, comps: list[np.ndarray], got: np.ndarray, stochastic: bool) -> list[str]:
        size, lanes, n = got.size, self.lanes, self.n
        E = np.max([qz.propose_exponents(v, lanes) for v in comps], axis=0)
        drift = self._drift(size)
        if drift.any():                     # simulated residuals may sit across a power of two
            E = np.minimum(E.astype(np.int32) + 1, qz.EXP_MAX).astype(np.int8)
        if self.recorder is not None and "ctx" in self.recorder.last and not drift.any():
            agreed = self.recorder.last["ctx"].exponents
            if agreed is not None and not np.array_equal(agreed, E):
                return [f"agreed exponents are not the max of every rank's proposal (block "
                        f"{int(np.flatnonzero(agreed != E)[0])})"]
        exact = np.sum([v.astype(np.float64) for v in comps], axis=0)
        bound = qz.error_bound(E, n, lanes, size, stochastic) + np.abs(exact) * EPS32 + drift
        problems = self._within("fixed point outside its documented bound", got, exact, bound)
        s = qz.shift_for(E, n).astype(np.float64)
        quantum = np.repeat(2.0 ** -s, lanes)[:size]
        for k, v in enumerate(comps):
            self._update(k, v, qz.dequantize(qz.quantize(v, E, n, lanes), E, n, lanes))
        if self.ef and stochastic:
            self.drift = 2 * n * quantum
        if self.unbiased_claim and not problems:
            scaled = [v.astype(np.float64) / quantum for v in comps]
            fr = [v - np.floor(v) for v in scaled]
            var = np.sum([f * (1 - f) for f in fr], axis=0) * quantum ** 2
            exact_ok = np.abs(got) / quantum < 2.0 ** 24          # the float32 result is the integer sum
            rnd = np.sum([np.rint(v) - v for v in scaled], axis=0) / n
            scale = np.repeat(np.ldexp(1.0, E.astype(np.int32)), lanes)[:size] * n
            m = exact_ok
            self.stats.add((got - exact)[m], var[m], np.zeros(int(m.sum())), (exact / scale)[m], rnd[m])
        return problems

    def _selected_blocks(self, comps: list[np.ndarray], got: np.ndarray) -> list[str]:
        c: TopKBlocks | RandomKBlocks = self.inner   # type: ignore[assignment]
        last = self._last()
        ctx: Context = last["ctx"]
        size, lanes, n = got.size, self.lanes, self.n
        nb = n_blocks(size, lanes)
        idx = np.asarray(ctx.indices if ctx.indices is not None else [], dtype=np.int64)
        k = count_for(c.k, nb)
        if len(idx) != k or len(np.unique(idx)) != k or (k and (idx.min() < 0 or idx.max() >= nb)):
            return [f"{c.name}: expected {k} distinct blocks of {nb}, the compressor agreed on {len(idx)} "
                    f"({', '.join(map(str, idx[:5]))}{'...' if len(idx) > 5 else ''})"]
        problems = []
        if isinstance(c, TopKBlocks):
            norms = np.sum([block_norms(v, lanes).astype(np.float64) for v in comps], axis=0)
            tol = n * norms.max() * 2.0 ** -(qz.headroom_bits(n) - 1) + norms.max() * 1e-6
            rest = np.setdiff1d(np.arange(nb), idx)
            if rest.size and norms[idx].min() < norms[rest].max() - tol:
                problems.append(f"topk: block {int(rest[np.argmax(norms[rest])])} (summed norm "
                                f"{norms[rest].max():.4g}) left out for block {int(idx[np.argmin(norms[idx])])} "
                                f"({norms[idx].min():.4g}): not the k largest")
        factor = np.float32(nb / k) if isinstance(c, RandomKBlocks) and c.rescale else None
        vals = []
        for v in comps:
            g = gather(v, idx, lanes)
            vals.append(g * factor if factor is not None else g)
        E = np.max([qz.propose_exponents(v, lanes) for v in vals], axis=0) if vals[0].size else np.zeros(0, np.int8)
        drift_full = self._drift(size)
        blocks_mask = np.zeros(nb, bool)
        blocks_mask[idx] = True
        sel = np.repeat(blocks_mask, lanes)[:size]
        if ctx.exponents is not None and not drift_full.any() and not np.array_equal(ctx.exponents, E):
            problems.append("agreed exponents are not the max of every rank's proposal for the selected blocks")
        outside = (got != 0) & ~sel
        if outside.any():
            problems.append(f"{c.name}: non-zero outside the agreed blocks: "
                            f"{_first_bad(outside, got, np.zeros(size))}")
        stochastic = getattr(c, "_rng", None) is not None
        exact_sel = np.sum([v.astype(np.float64) for v in vals], axis=0)
        exact = np.zeros(nb * lanes)
        exact.reshape(nb, lanes)[idx] = exact_sel.reshape(k, lanes)
        exact = exact[:size]
        Eb = np.full(nb, qz.EXP_MIN, np.int32)
        Eb[idx] = E.astype(np.int32) + (1 if drift_full.any() else 0)
        bound = qz.error_bound(Eb, n, lanes, size, stochastic) + np.abs(exact) * EPS32 + drift_full
        problems += self._within(f"{c.name}: the selected blocks are not the sum of the compensated inputs",
                                 np.where(sel, got, 0), exact, np.where(sel, bound, 0))
        for r, (v, val) in enumerate(zip(comps, vals)):
            q = qz.dequantize(qz.quantize(val, E, n, lanes), E, n, lanes).reshape(k, lanes)
            sent = np.zeros((nb, lanes), np.float32)
            sent[idx] = q
            self._update(r, v, sent.reshape(-1)[:size])
        if self.ef and stochastic:
            d = self._drift(size).copy()
            d[sel] = np.repeat(2.0 * n * 2.0 ** -qz.shift_for(Eb, n), lanes)[:size][sel]
            self.drift = d
        if self.unbiased_claim and not problems:
            # one Bernoulli(k/nb) per block: test block sums; rounding is deterministic (allowance)
            xs_sum = np.sum([qz.blocks_of(v.astype(np.float64), lanes).sum(axis=1) for v in comps], axis=0)
            got_b = qz.blocks_of(got.astype(np.float64), lanes).sum(axis=1)
            allow = qz.blocks_of(qz.error_bound(Eb, n, lanes, size) + np.abs(got) * EPS32, lanes).sum(axis=1)
            var = xs_sum ** 2 * (nb / k - 1)
            top = np.abs(xs_sum).max() or 1.0
            self.stats.add(got_b - xs_sum, var, allow, xs_sum / top)
        return problems

    def _threshold(self, comps: list[np.ndarray], got: np.ndarray) -> list[str]:
        c: ThresholdBlocks = self.inner   # type: ignore[assignment]
        ctx: Context = self._last()["ctx"]
        size, lanes, n = got.size, self.lanes, self.n
        nb = n_blocks(size, lanes)
        kept_any = np.zeros(nb, bool)
        vals = []
        for v in comps:
            norms = block_norms(v, lanes)
            keep = norms >= c.threshold * (norms.max() if norms.size else 0)
            kept_any |= keep
            xb = qz.blocks_of(v, lanes).copy()
            xb[~keep] = 0
            vals.append(xb.reshape(-1)[:size])
        E = np.max([qz.propose_exponents(v, lanes) for v in vals], axis=0)
        problems = []
        if ctx.exponents is not None and not np.array_equal(ctx.exponents, E):
            problems.append("agreed exponents are not the max of every rank's proposal of its kept blocks")
        dropped = np.repeat(~kept_any, lanes)[:size] & (got != 0)
        if dropped.any():
            problems.append(f"threshold: non-zero in blocks no rank kept: {_first_bad(dropped, got, np.zeros(size))}")
        exact = np.sum([v.astype(np.float64) for v in vals], axis=0)
        bound = qz.error_bound(E, n, lanes, size) + np.abs(exact) * EPS32
        problems += self._within("threshold: the aggregate is not the sum of the kept blocks", got, exact, bound)
        for k, (v, val) in enumerate(zip(comps, vals)):
            self._update(k, v, qz.dequantize(qz.quantize(val, E, n, lanes), E, n, lanes))
        return problems

    def _ternary(self, comps: list[np.ndarray], got: np.ndarray) -> list[str]:
        c: Ternary = self.inner   # type: ignore[assignment]
        ctx: Context = self._last()["ctx"]
        size, n = got.size, self.n
        per_block = self.lanes * digits_per_lane(n)
        E = np.max([qz.propose_exponents(v, per_block) for v in comps], axis=0)
        if ctx.exponents is None or not np.array_equal(ctx.exponents, E):
            return ["ternary: the agreed exponents are not the max of every rank's proposal per packet"]
        scale = np.repeat(np.ldexp(np.float64(c.m), E.astype(np.int32)), per_block)[:size]
        t = got.astype(np.float64) / scale
        off = (np.abs(t - np.rint(t)) > 1e-6) | (np.abs(t) > n + 1e-6)
        if off.any():
            return [f"ternary: the aggregate is not in the lattice scale * {{-{n}..{n}}}: "
                    f"{_first_bad(off, t, np.clip(np.rint(t), -n, n))} (in units of the scale)"]
        problems = []
        ts = [np.rint(v.astype(np.float64) / scale) for v in comps] if c.mode == "3lc" else None
        if ts is not None:
            want = np.sum(ts, axis=0)
            bad = np.rint(t) != want
            if bad.any():
                problems.append(f"3lc: the aggregate is not the sum of rint(x / scale): "
                                f"{_first_bad(bad, np.rint(t), want)} (in units of the scale)")
            for k, (v, tk) in enumerate(zip(comps, ts)):
                self._update(k, v, (tk * scale).astype(np.float32))
        elif self.ef:
            self.ef = False        # terngrad's draws of the other ranks cannot be followed: lattice only
        exact = np.sum([v.astype(np.float64) for v in comps], axis=0)
        if self.unbiased_claim and not problems:
            r = [v.astype(np.float64) / scale for v in comps]
            var = np.sum([np.abs(x) - x * x for x in r], axis=0) * scale ** 2
            rnd = np.sum([np.rint(x) - x for x in r], axis=0) / n
            self.stats.add(got - exact, var, np.zeros(size), exact / (n * scale), rnd)
        return problems

    def _diana(self, xs: list[np.ndarray], got: np.ndarray) -> list[str]:
        c: Diana = self.inner     # type: ignore[assignment]
        ctx: Context = self._last()["ctx"]
        size, n = got.size, self.n
        if self.H is None or self.H.size != size:
            self.H = np.zeros(size, np.float64)
        per_block = self.lanes * digits_per_lane(n)
        E = ctx.agreed_exponents()
        m = getattr(c.inner, "m", 1.0)
        scale = np.repeat(np.ldexp(np.float64(m), E.astype(np.int32)), per_block)[:size]
        delta = got.astype(np.float64) - n * self.H
        t = delta / scale
        tol = 1e-4 + (np.abs(n * self.H) + np.abs(got)) * 2.0 ** -20 / scale
        off = (np.abs(t - np.rint(t)) > tol) | (np.abs(t) > n + tol)
        exact = np.sum([np.asarray(v, np.float64).reshape(-1) for v in xs], axis=0)
        if off.any():
            return [f"diana: result - N * H is not in the inner lattice scale * {{-{n}..{n}}}: "
                    f"{_first_bad(off, t, np.clip(np.rint(t), -n, n))} (in units of the scale)"]
        if self.unbiased_claim:
            allow = (np.abs(n * self.H) + np.abs(got)) * 2.0 ** -20
            top = np.abs(exact).max() or 1.0
            self.stats.add(got - exact, n * scale ** 2 / 4, allow, exact / top)
        self.H = self.H + float(c.alpha) * (got.astype(np.float64) / n - self.H)
        return []

    # -- over the calls ------------------------------------------------------------------------
    def verdict(self) -> tuple[list[str], dict[str, Any]]:
        """(problems, summary) of the checks that need every call (unbiasedness)."""
        summary: dict[str, Any] = {"contract": self.contract}
        if not self.unbiased_claim:
            return [], summary
        problems, stats = self.stats.verdict()
        if stats["elements"] == 0:
            return ["unbiasedness: no element could be tested"], summary
        summary["unbiased"] = stats
        return problems, summary
