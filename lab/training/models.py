"""Two small numpy models with flat parameter vectors (what the allreduce moves)."""
from __future__ import annotations

import numpy as np


def _softmax_xent(logits: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy and its gradient with respect to the logits."""
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    n = len(y)
    loss = float(-np.log(p[np.arange(n), y] + 1e-12).mean())
    p[np.arange(n), y] -= 1
    return loss, p / n


class Model:
    """Parameters live in one flat float32 vector; views give the layers."""

    name = "?"
    shapes: list[tuple[int, ...]]

    def init(self, seed: int = 0) -> np.ndarray:
        """Initial parameters (a flat float32 vector of `size`)."""
        raise NotImplementedError

    def logits(self, params: np.ndarray, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def loss_and_grad(self, params: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean loss on (x, y) and its gradient, flat like `params`."""
        raise NotImplementedError

    @property
    def size(self) -> int:
        return sum(int(np.prod(s)) for s in self.shapes)

    def unflatten(self, params: np.ndarray) -> list[np.ndarray]:
        out, i = [], 0
        for s in self.shapes:
            n = int(np.prod(s))
            out.append(params[i:i + n].reshape(s))
            i += n
        return out

    def accuracy(self, params: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
        return float((self.logits(params, x).argmax(axis=1) == y).mean())


class LogisticRegression(Model):
    """Multinomial logistic regression (softmax), with a small L2 penalty."""

    name = "logreg"

    def __init__(self, n_features: int, n_classes: int, l2: float = 1e-4):
        self.shapes = [(n_features, n_classes), (n_classes,)]
        self.l2 = l2

    def init(self, seed: int = 0) -> np.ndarray:
        return np.zeros(self.size, np.float32)

    def logits(self, params: np.ndarray, x: np.ndarray) -> np.ndarray:
        w, b = self.unflatten(params)
        return x @ w + b

    def loss_and_grad(self, params: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = self.unflatten(params)
        loss, g = _softmax_xent(x @ w + b, y)
        gw = x.T @ g + self.l2 * w
        return loss + 0.5 * self.l2 * float((w * w).sum()), np.concatenate([gw.ravel(), g.sum(0)]).astype(np.float32)


class MLP(Model):
    """One hidden ReLU layer."""

    name = "mlp"

    def __init__(self, n_features: int, n_classes: int, hidden: int = 64):
        self.shapes = [(n_features, hidden), (hidden,), (hidden, n_classes), (n_classes,)]

    def init(self, seed: int = 0) -> np.ndarray:
        rng = np.random.default_rng(seed)
        parts = []
        for s in self.shapes:
            parts.append((rng.standard_normal(s) * np.sqrt(2.0 / s[0])).ravel() if len(s) == 2 else np.zeros(s))
        return np.concatenate(parts).astype(np.float32)

    def logits(self, params: np.ndarray, x: np.ndarray) -> np.ndarray:
        w1, b1, w2, b2 = self.unflatten(params)
        return np.maximum(x @ w1 + b1, 0) @ w2 + b2

    def loss_and_grad(self, params: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        w1, b1, w2, b2 = self.unflatten(params)
        h_pre = x @ w1 + b1
        h = np.maximum(h_pre, 0)
        loss, g = _softmax_xent(h @ w2 + b2, y)
        gw2, gb2 = h.T @ g, g.sum(0)
        gh = (g @ w2.T) * (h_pre > 0)
        gw1, gb1 = x.T @ gh, gh.sum(0)
        return loss, np.concatenate([gw1.ravel(), gb1, gw2.ravel(), gb2]).astype(np.float32)


MODELS = {"logreg": LogisticRegression, "mlp": MLP}
