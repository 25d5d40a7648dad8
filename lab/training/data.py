"""scikit-learn's bundled digits dataset (no download), standardized and split across workers."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Split:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int

    def shard(self, rank: int, n_workers: int) -> tuple[np.ndarray, np.ndarray]:
        """Rank's disjoint slice of the (already shuffled) training set."""
        idx = np.arange(rank, self.x_train.shape[0], n_workers)
        return self.x_train[idx], self.y_train[idx]


def load_digits_split(test_fraction: float = 0.25, seed: int = 0, limit: int | None = None) -> Split:
    """Shuffled, standardized (train statistics) 8x8 digits; ``limit`` keeps the first samples."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = d.data.astype(np.float32), d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    if limit:
        order = order[:limit]
    x, y = x[order], y[order]
    n_test = round(len(y) * test_fraction)
    xtr, ytr, xte, yte = x[n_test:], y[n_test:], x[:n_test], y[:n_test]
    mu, sd = xtr.mean(0), xtr.std(0) + 1e-3
    return Split((xtr - mu) / sd, ytr, (xte - mu) / sd, yte, 10)
