"""The models and data the bench's `training` section trains (bench/train_worker.py runs them).

Three models, each with its data, its metric and the target the report times ("time to target"):

- ``mlp``: 64-1024-1024-10 ReLU MLP on scikit-learn's digits (1,126,410 parameters, 4.5 MB of
  gradients); metric: test accuracy.
- ``wide-mlp``: 64-4096-2560-10 on the same data (10,780,170 parameters, 43 MB of gradients);
  metric: test accuracy.
- ``embedding``: a click-style classifier with sparse gradients: an ``nn.EmbeddingBag`` of
  1,048,576 rows x 16 (sum of a bag's rows) and a 16-2 linear head (16,777,250 parameters). The
  data set is generated here, deterministically from the seed: 256 "hot" ids (spread over the
  table) carry a hidden weight each, a sample is 4 hot ids and 8 ids drawn uniformly from the
  whole table, its label whether the hot ids' weights sum above zero. A step of 32 samples touches
  at most 384 of the 1M rows, so the gradient (dense, ``sparse=False``: what DDP and every backend
  allreduce) is a 64 MB tensor with at most 384 non-zero rows: one 16-lane sub-block per row, at
  most 384 of 65,536 256-lane blocks per worker. Metric: test cross-entropy loss (lower is better).

Every worker builds the same initial model from the seed; digits shards are disjoint
(``Split.shard``); the embedding data of worker ``r`` at step ``i`` is drawn from ``(seed, r, i)``,
the test set from ``seed`` alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

VOCAB = 1 << 20          # embedding rows
EMBED_DIM = 16           # one 16-lane sub-block per row
HOT_IDS = 256
HOT_PER_SAMPLE = 4
COLD_PER_SAMPLE = 8
EMBED_TEST_SAMPLES = 2048


@dataclass(frozen=True)
class ModelSpec:
    name: str
    description: str
    metric: str             # "accuracy" (higher is better) or "loss" (lower is better)
    target: float           # time to target: the first evaluation at or past this
    lr: float
    momentum: float

    def met(self, value: float) -> bool:
        return value >= self.target if self.metric == "accuracy" else value <= self.target

    def target_text(self) -> str:
        return (f"test accuracy >= {self.target * 100:g} %" if self.metric == "accuracy"
                else f"test loss <= {self.target:g}")


MODELS = {
    "mlp": ModelSpec("mlp", "64-1024-1024-10 MLP on digits", "accuracy", 0.90, 0.05, 0.9),
    "wide-mlp": ModelSpec("wide-mlp", "64-4096-2560-10 MLP on digits", "accuracy", 0.80, 0.02, 0.9),
    "embedding": ModelSpec("embedding", "EmbeddingBag 1,048,576 x 16 + 16-2 head, synthetic clicks",
                           "loss", 0.65, 3.0, 0.0),
}


def build_model(torch: ModuleType, name: str, seed: int) -> Any:
    """The model, with the same initial weights on every worker."""
    torch.manual_seed(seed)
    nn = torch.nn
    if name == "mlp":
        return nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    if name == "wide-mlp":
        return nn.Sequential(nn.Linear(64, 4096), nn.ReLU(), nn.Linear(4096, 2560), nn.ReLU(), nn.Linear(2560, 10))
    if name == "embedding":
        return _BagClassifier(torch)
    raise ValueError(f"unknown model {name!r} (known: {', '.join(MODELS)})")


def _BagClassifier(torch: ModuleType) -> Any:
    nn = torch.nn

    class BagClassifier(nn.Module):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            # sparse=False: the gradient is a dense tensor whose untouched rows are zero
            self.bag = nn.EmbeddingBag(VOCAB, EMBED_DIM, mode="sum", sparse=False)
            nn.init.normal_(self.bag.weight, std=0.01)
            self.head = nn.Linear(EMBED_DIM, 2)

        def forward(self, ids: Any) -> Any:
            return self.head(self.bag(ids))

    return BagClassifier()


class ClickData:
    """The embedding model's synthetic data set (see the module's docstring)."""

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng([seed, 1])
        self.hot = rng.choice(VOCAB, HOT_IDS, replace=False).astype(np.int64)
        self.weight = rng.standard_normal(HOT_IDS)
        self.seed = seed

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        pick = rng.integers(0, HOT_IDS, size=(n, HOT_PER_SAMPLE))
        cold = rng.integers(0, VOCAB, size=(n, COLD_PER_SAMPLE), dtype=np.int64)
        ids = np.concatenate([self.hot[pick], cold], axis=1)
        labels = (self.weight[pick].sum(1) > 0).astype(np.int64)
        return ids, labels

    def batch(self, rank: int, step: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        return self.sample(np.random.default_rng([self.seed, 2, rank, step]), n)

    def test(self) -> tuple[np.ndarray, np.ndarray]:
        return self.sample(np.random.default_rng([self.seed, 3]), EMBED_TEST_SAMPLES)


class Task:
    """Batches for one worker and the test metric, for one model."""

    def __init__(self, torch: ModuleType, name: str, rank: int, world: int, batch: int, seed: int) -> None:
        self.torch, self.spec, self.batch_size, self.rank = torch, MODELS[name], batch, rank
        if name == "embedding":
            self.clicks: ClickData | None = ClickData(seed)
            xt, yt = self.clicks.test()
        else:
            from lab.training.data import load_digits_split
            self.clicks = None
            split = load_digits_split()
            x, y = split.shard(rank, world)
            self.xs, self.ys = torch.from_numpy(x), torch.from_numpy(y)
            self.steps = len(y) // batch
            xt, yt = split.x_test, split.y_test
        self.x_test, self.y_test = torch.from_numpy(xt), torch.from_numpy(yt)

    def batch(self, i: int) -> tuple[Any, Any]:
        if self.clicks is not None:
            x, y = self.clicks.batch(self.rank, i, self.batch_size)
            return self.torch.from_numpy(x), self.torch.from_numpy(y)
        lo = (i % self.steps) * self.batch_size
        return self.xs[lo:lo + self.batch_size], self.ys[lo:lo + self.batch_size]

    def evaluate(self, model: Any) -> float:
        """The test metric (accuracy, or mean cross-entropy loss) of ``model``."""
        torch = self.torch
        with torch.no_grad():
            logits = model(self.x_test)
            if self.spec.metric == "loss":
                return float(torch.nn.functional.cross_entropy(logits, self.y_test))
            return float((logits.argmax(1) == self.y_test).float().mean())


def parameters(name: str) -> int:
    """The model's parameter count, without building it."""
    return {"mlp": 64 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10,
            "wide-mlp": 64 * 4096 + 4096 + 4096 * 2560 + 2560 + 2560 * 10 + 10,
            "embedding": VOCAB * EMBED_DIM + EMBED_DIM * 2 + 2}[name]
