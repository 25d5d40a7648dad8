"""The Compressor contract: what every aggregation-friendly compressor must provide.

Design after GRACE (Xu et al.): a Compressor turns a flat float32 tensor into a payload, a Memory
(error feedback) compensates for what was lost, a Communicator moves payloads. On a switch the
payload must be *summable*: int32 lanes whose element-wise sum over workers decodes to the sum of
what the workers meant. So every compressor here

* agrees with the other workers, through the :class:`~worker.reducer.Reducer`, on everything that
  is shared before encoding: block indices in ``compress`` (collective: all workers call it), the
  per-block scale exponents through the switch's exponent max during the aggregation itself;
* returns a :class:`~worker.reducer.BlockSource` with the same number of blocks on every worker;
* decodes linearly: ``decompress(a + b, ctx) == decompress(a, ctx) + decompress(b, ctx)`` (up to
  float rounding), so decoding the switch's sum gives the sum of the workers' contributions.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass, field

import numpy as np

from ..reducer import BlockSource, Reducer


@dataclass
class Context:
    """What the workers agreed for one compression of one tensor: enough to decode any payload."""

    size: int                                            # number of float values of the tensor
    n_workers: int = 1
    exponents: np.ndarray | None = None                  # agreed per-block exponents (set after aggregate)
    indices: np.ndarray | None = None                    # agreed block indices (block-sparse compressors)
    extra: dict = field(default_factory=dict)            # compressor-specific agreed values

    def agreed_exponents(self) -> np.ndarray:
        """The exponents, once the aggregation agreed them (decoding needs them)."""
        if self.exponents is None:
            raise ValueError("lanes cannot be decoded before the exponents are agreed")
        return self.exponents

    def agreed_indices(self) -> np.ndarray:
        """The block indices a block-sparse compressor agreed on."""
        if self.indices is None:
            raise ValueError("this context has no agreed block indices")
        return self.indices


class Compressor(abc.ABC):
    """Turns float32 tensors into switch-summable int32 blocks (collectively) and back."""

    #: short name used by the CLI, benchmarks and tables
    name: str = "?"
    #: True when E[decompress(payload)] == x over the compressor's randomness
    unbiased: bool = False
    #: True when :meth:`contribution` must run every step (it updates state), memory or not
    needs_contribution: bool = False

    @abc.abstractmethod
    def compress(self, x: np.ndarray, reducer: Reducer, key: str = "") -> tuple[BlockSource, Context]:
        """Flat float32 ``x`` -> (block source to aggregate, context). Collective.

        ``key`` names the tensor, for compressors that keep per-tensor state (seeds, shifts).
        """

    @abc.abstractmethod
    def decompress(self, lanes: np.ndarray, ctx: Context) -> np.ndarray:
        """int32 lanes (n_blocks, lanes) -- one worker's or the switch's sum -> flat float32 of ctx.size."""

    def contribution(self, lanes: np.ndarray, ctx: Context, key: str = "") -> np.ndarray:
        """What this worker's own lanes stand for in x's units (error feedback's reference)."""
        return self.decompress(lanes, ctx)

    def finish(self, mean: np.ndarray, ctx: Context, key: str = "") -> np.ndarray:
        """Post-process the decoded mean over workers (stateful schemes such as DIANA)."""
        return mean

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"
