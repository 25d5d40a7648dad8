"""DIANA-style shifted compression (Mishchenko et al.), in IntDIANA's integer form.

Each worker keeps a shift ``h_i`` and compresses ``x - h_i`` instead of ``x``; since the shifts
learn the gradients, the compressed differences shrink and so does the compression variance.
The server side of DIANA (the mean shift ``H``) is reconstructed on every worker from the
aggregate, identically, because it is only ever updated from the switch's integer sum:

    delta_i = C(x_i - h_i)          # integer payload with a shared scale (the inner compressor)
    h_i    += alpha * delta_i
    g_hat   = H + mean(delta)       # what the step uses
    H      += alpha * mean(delta)

With an unbiased inner compressor (TernGrad, stochastic fixed point) ``g_hat`` is unbiased.
"""
from __future__ import annotations

import numpy as np

from ..reducer import BlockSource, Reducer
from .base import Compressor, Context
from .ternary import Ternary


class Diana(Compressor):
    """Wraps an inner compressor; keeps per-tensor shifts (local h_i, shared H)."""

    needs_contribution = True

    def __init__(self, inner: Compressor | None = None, alpha: float = 0.05):
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        self.inner = inner or Ternary("terngrad")
        self.alpha = np.float32(alpha)
        self.name = f"diana-{self.inner.name}"
        self.unbiased = self.inner.unbiased
        self._h: dict[str, np.ndarray] = {}
        self._H: dict[str, np.ndarray] = {}

    def _state(self, key: str, size: int):
        if key not in self._h or self._h[key].size != size:
            self._h[key] = np.zeros(size, np.float32)
            self._H[key] = np.zeros(size, np.float32)
        return self._h[key], self._H[key]

    def compress(self, x: np.ndarray, reducer: Reducer, key: str = "") -> tuple[BlockSource, Context]:
        x = np.asarray(x, dtype=np.float32).reshape(-1)
        h, _ = self._state(key, x.size)
        src, ctx = self.inner.compress(x - h, reducer, key)
        return src, ctx

    def decompress(self, lanes: np.ndarray, ctx: Context) -> np.ndarray:
        return self.inner.decompress(lanes, ctx)

    def contribution(self, lanes: np.ndarray, ctx: Context, key: str = "") -> np.ndarray:
        """h_i (before this step's update) + this worker's decoded delta; updates h_i."""
        h, _ = self._state(key, ctx.size)
        delta = self.inner.decompress(lanes, ctx)
        ctx.extra["contribution"] = h + delta
        h += self.alpha * delta
        return ctx.extra["contribution"]

    def finish(self, mean: np.ndarray, ctx: Context, key: str = "") -> np.ndarray:
        _h, H = self._state(key, ctx.size)
        g_hat = H + mean
        H += self.alpha * mean
        return g_hat
