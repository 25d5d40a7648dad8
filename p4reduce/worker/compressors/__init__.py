"""Switch-summable compressors (see docs/compressors.md) and a registry by name."""
from __future__ import annotations

from typing import Any

from .base import Compressor, Context
from .diana import Diana
from .fixedpoint import FixedPoint
from .randomk import RandomKBlocks
from .ternary import Ternary
from .threshold import ThresholdBlocks
from .topk import TopKBlocks

__all__ = [
    "COMPRESSORS",
    "Compressor",
    "Context",
    "Diana",
    "FixedPoint",
    "RandomKBlocks",
    "Ternary",
    "ThresholdBlocks",
    "TopKBlocks",
    "make_compressor",
]

#: name -> (factory(seed, rank, **options), error feedback recommended). ``seed`` is shared by the
#: job (random-k's block choice); per-worker randomness (stochastic rounding) uses (seed, rank).
COMPRESSORS = {
    "fixedpoint": (lambda seed, rank, **kw: FixedPoint(**kw), False),
    "fixedpoint-sr": (lambda seed, rank, **kw: FixedPoint(stochastic=True, seed=[seed, rank], **kw), False),
    "terngrad": (lambda seed, rank, **kw: Ternary("terngrad", seed=[seed, rank], **kw), False),
    "3lc": (lambda seed, rank, sparsity_multiplier=1.0, **kw: Ternary("3lc", sparsity_multiplier, **kw), True),
    "topk": (lambda seed, rank, **kw: TopKBlocks(**kw), True),
    "randomk": (lambda seed, rank, **kw: RandomKBlocks(seed=seed, **kw), True),
    "threshold": (lambda seed, rank, **kw: ThresholdBlocks(**kw), True),
    "diana": (lambda seed, rank, **kw: Diana(Ternary("terngrad", seed=[seed, rank]), **kw), False),
}


def make_compressor(name: str, seed: int = 0, rank: int = 0, **options: Any) -> tuple[Compressor, bool]:
    """(compressor, whether error feedback is recommended) for a registry name."""
    try:
        factory, ef = COMPRESSORS[name]
    except KeyError:
        raise ValueError(f"unknown compressor {name!r}; choose one of {', '.join(COMPRESSORS)}") from None
    return factory(seed, rank, **options), ef
