"""Data-parallel SGD over any allreduce: every worker computes a gradient on its shard, the
gradients are averaged through the switch (or a simulation of it), every worker applies the same
update, so the replicas stay identical without ever exchanging parameters."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .data import Split
from .models import MODELS, Model

#: allreduce(grad, key) -> mean gradient over workers
AllreduceFn = Callable[[np.ndarray, str], np.ndarray]


@dataclass
class TrainConfig:
    model: str = "logreg"
    epochs: int = 30
    batch: int = 16           # per worker
    lr: float = 0.03
    momentum: float = 0.9
    seed: int = 0


@dataclass
class History:
    epoch: list = field(default_factory=list)
    train_loss: list = field(default_factory=list)
    test_acc: list = field(default_factory=list)
    seconds: float = 0.0
    params: np.ndarray | None = None      # the trained parameters (flat)

    @property
    def final_acc(self) -> float:
        return self.test_acc[-1] if self.test_acc else float("nan")


def make_model(cfg: TrainConfig, split: Split) -> Model:
    try:
        cls = MODELS[cfg.model]
    except KeyError:
        raise ValueError(f"unknown model {cfg.model!r}; choose one of {', '.join(MODELS)}") from None
    return cls(split.x_train.shape[1], split.n_classes)


def train_worker(rank: int, n_workers: int, split: Split, cfg: TrainConfig, allreduce: AllreduceFn) -> History:
    """SGD with momentum on this rank's shard; all ranks must run it together (collective)."""
    model = make_model(cfg, split)
    params = model.init(cfg.seed)
    velocity = np.zeros_like(params)
    x, y = split.shard(rank, n_workers)
    # every rank takes the same number of steps per epoch (the smallest shard decides)
    steps = min(len(range(r, split.x_train.shape[0], n_workers)) for r in range(n_workers)) // cfg.batch
    rng = np.random.default_rng([cfg.seed, rank])
    hist = History()
    t0 = time.perf_counter()
    for epoch in range(1, cfg.epochs + 1):
        order = rng.permutation(len(y))
        losses = []
        for s in range(steps):
            b = order[s * cfg.batch:(s + 1) * cfg.batch]
            loss, g = model.loss_and_grad(params, x[b], y[b])
            losses.append(loss)
            g = allreduce(g, "params")
            velocity = cfg.momentum * velocity + g
            params = params - np.float32(cfg.lr) * velocity
        hist.epoch.append(epoch)
        hist.train_loss.append(float(np.mean(losses)))
        hist.test_acc.append(model.accuracy(params, split.x_test, split.y_test))
    hist.seconds = time.perf_counter() - t0
    hist.params = params
    return hist
