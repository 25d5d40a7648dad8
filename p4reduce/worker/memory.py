"""Error-feedback memory: what compression dropped is added back to the next gradient.

GRACE's Memory role: ``compensate`` before compressing, ``update`` after, with what this worker's
payload actually stands for. Keeps one residual per tensor key.
"""
from __future__ import annotations

import numpy as np


class NoMemory:
    """No error feedback (for unbiased compressors)."""

    def compensate(self, x: np.ndarray, key: str = "") -> np.ndarray:
        return x

    def update(self, compensated: np.ndarray, sent: np.ndarray, key: str = "") -> None:
        pass


class ErrorFeedback:
    """residual = compensated - sent;  next compensated = beta * residual + gradient."""

    def __init__(self, beta: float = 1.0):
        self.beta = np.float32(beta)
        self.residuals: dict[str, np.ndarray] = {}

    def compensate(self, x: np.ndarray, key: str = "") -> np.ndarray:
        r = self.residuals.get(key)
        if r is None or r.size != x.size:
            return x
        return x + self.beta * r

    def update(self, compensated: np.ndarray, sent: np.ndarray, key: str = "") -> None:
        self.residuals[key] = (compensated - sent).astype(np.float32)
