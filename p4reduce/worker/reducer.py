"""What the network offers a worker: block-wise integer sums with a shared exponent per block.

The switch (docs/protocol.md) sums packets of ``lanes`` int32 values and, per packet, returns the
maximum of the exponents the workers proposed. A :class:`Reducer` is one worker's handle on that.
What a worker contributes to one aggregation is a :class:`BlockSource`: per block, the exponent it
needs (``proposals``), whether the block may hold non-zeros (``nonzero``, for sparse mode), and an
``encode`` callback that turns blocks into int32 lanes *once the agreed exponents are known* (on
the wire they arrive piggybacked on the previous round's result, so encoding is lazy).

Every worker of a job calls the same sequence of ``aggregate`` calls with sources of the same
number of blocks; each returns the element-wise sums (saturating int32, like the switch) and the
agreed exponents. Compressors only use this interface, so the same code runs on the in-process
simulated switch (:mod:`testbed.simswitch`) and over UDP (:mod:`worker.streaming`).
"""
from __future__ import annotations

import abc

import numpy as np

from . import quantize as qz


class AggregationError(RuntimeError):
    """The job cannot complete an aggregation (peer gone, switch gone, mismatched calls)."""


class BlockSource(abc.ABC):
    """One worker's contribution to one aggregation, in blocks of ``lanes`` int32 values."""

    n_blocks: int
    #: int8 exponent each block needs (see worker.quantize), or None for exact integer data
    proposals: np.ndarray | None = None
    #: bool per block: False = certainly all zero after encoding (sparse mode skips it)
    nonzero: np.ndarray

    #: int32 (n_blocks, lanes): what :meth:`take` handed out so far (error feedback's reference)
    sent: np.ndarray | None = None
    #: whether :meth:`take` keeps :attr:`sent` (the Communicator turns it off when neither the
    #: compressor nor an error-feedback memory reads it: one copy of the tensor less per call)
    keep_sent: bool = True

    @abc.abstractmethod
    def encode(self, blocks: np.ndarray, exponents: np.ndarray | None) -> np.ndarray:
        """int32 lanes, shape (len(blocks), lanes), of the given block indices, scaled by the
        agreed exponents (one per block; None for exact integer data)."""

    def take(self, blocks: np.ndarray, exponents: np.ndarray | None, lanes: int) -> np.ndarray:
        """:meth:`encode` and remember the result in :attr:`sent` (reducers call this)."""
        out = np.asarray(self.encode(blocks, exponents), dtype=np.int32).reshape(len(blocks), lanes)
        if not self.keep_sent:
            return out
        if self.sent is None:
            self.sent = np.zeros((self.n_blocks, lanes), np.int32)
        self.sent[blocks] = out
        return out


class IntSource(BlockSource):
    """Exact int32 data: no exponent, passed through unchanged."""

    def __init__(self, values: np.ndarray, lanes: int):
        self.blocks = qz.blocks_of(np.ascontiguousarray(values, dtype=np.int32), lanes)
        self.n_blocks = self.blocks.shape[0]
        self.proposals = None
        self.nonzero = np.asarray(self.blocks.any(axis=1))

    def encode(self, blocks: np.ndarray, exponents: np.ndarray | None) -> np.ndarray:
        return self.blocks[blocks]


class QuantizedSource(BlockSource):
    """float32 data in fixed point with the shared per-block exponent (worker.quantize)."""

    def __init__(self, x: np.ndarray, lanes: int, n_workers: int, rng: np.random.Generator | None = None):
        x = np.asarray(x, dtype=np.float32).reshape(-1)
        self.blocks = qz.blocks_of(x, lanes)
        self.n_blocks = self.blocks.shape[0]
        amax = qz.block_maxima(x, lanes)
        self.proposals = qz.exponents_for(amax)
        self.nonzero = amax > 0
        self.n_workers = n_workers
        self.rng = rng

    def encode(self, blocks: np.ndarray, exponents: np.ndarray | None) -> np.ndarray:
        if exponents is None:
            raise ValueError("fixed-point blocks are encoded with agreed exponents")
        return qz.quantize_blocks(self.blocks[blocks], exponents, self.n_workers, self.rng)


class FloatSource(QuantizedSource):
    """float32 data in fixed point (round to nearest, or stochastic with ``rng``) whose result is
    float32 too: :meth:`Reducer.aggregate_float` writes the dequantized sums, divided by the
    number of workers when ``average``, straight into ``dest`` (flat float32 of x's size,
    C-contiguous; it may be ``x`` itself). Why: on the native loop the conversion then runs in C
    as each block is sent and each result arrives (worker/native/wloop.c), so a bucket is read
    once into the packets and written once from the results, with no array the size of the
    tensor in between; the Python loop quantizes through :meth:`encode` and dequantizes at the
    end (quantize.dequantize_into), the reference the native loop is tested against.

    ``proposed``: (exponent proposals, non-zero blocks) computed already, e.g. by the C pass
    native_loop.propose (the same values and errors as quantize.block_maxima and exponents_for);
    None computes them here with numpy."""

    def __init__(self, x: np.ndarray, lanes: int, n_workers: int, dest: np.ndarray, average: bool = False,
                 rng: np.random.Generator | None = None, proposed: tuple[np.ndarray, np.ndarray] | None = None):
        self.x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
        if dest.dtype != np.float32 or dest.size != self.x.size or not dest.flags.c_contiguous:
            raise ValueError(f"dest must be a C-contiguous float32 array of {self.x.size} elements")
        self.lanes, self.n_workers, self.rng = lanes, n_workers, rng
        self.dest, self.average = dest.reshape(-1), average
        self.n_blocks = -(-self.x.size // lanes)
        if proposed is not None:
            self.proposals, self.nonzero = proposed
        else:
            amax = qz.block_maxima(self.x, lanes)
            self.proposals, self.nonzero = qz.exponents_for(amax), amax > 0
        self._padded: np.ndarray | None = None

    def encode(self, blocks: np.ndarray, exponents: np.ndarray | None) -> np.ndarray:
        if exponents is None:
            raise ValueError("fixed-point blocks are encoded with agreed exponents")
        if self._padded is None:      # only the Python loop (or stochastic rounding) reads blocks here
            self._padded = qz.blocks_of(self.x, self.lanes)
        return qz.quantize_blocks(self._padded[blocks], exponents, self.n_workers, self.rng)


class Reducer(abc.ABC):
    """One worker's handle on the switch."""

    rank: int
    n_workers: int
    lanes: int          # the job's lanes per packet: every reducer sets it from its job, none is assumed
    #: bytes this worker put (or would put) on the wire, headers included
    bytes_sent: int = 0

    @abc.abstractmethod
    def aggregate(self, source: BlockSource, out: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray | None]:
        """(sums int32 of shape (n_blocks, lanes), agreed exponents int8 (n_blocks,) or None).

        `out`: an int32 array of n_blocks * lanes elements, C-contiguous, to write the sums into
        (returned reshaped); None allocates one. Why: a caller that allreduces the same shape
        again and again (a benchmark, a training loop) keeps one buffer instead of the system
        handing it fresh pages each call (zeroing a 64 MiB array's pages cost a fifth of a
        worker's CPU at 16M elements)."""

    def sum_int32(self, values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Exact element-wise sum over workers of a flat int32 array (into flat `out` when given,
        of the same size, which may be `values` itself)."""
        values = np.asarray(values).reshape(-1)
        source = IntSource(values, self.lanes)
        source.keep_sent = False     # exact sums need no copy of what was sent (no error feedback)
        if out is None:
            sums, _ = self.aggregate(source)
            return sums.reshape(-1)[: values.size]
        flat = sums_buffer(out, values.size)
        if values.size == source.n_blocks * self.lanes:
            self.aggregate(source, out=flat)
        else:   # the last block is padded: sum into a buffer of whole blocks, then copy
            flat[:] = self.aggregate(source)[0].reshape(-1)[: values.size]
        return flat

    def aggregate_float(self, source: FloatSource) -> np.ndarray:
        """Aggregate `source` and write its float32 result into `source.dest`; returns the agreed
        exponents. This is the reference: the sums, then quantize.dequantize_into (reducers
        that convert as they go, UdpReducer's native loop, give the same bits)."""
        sums, exps = self.aggregate(source)
        if exps is None:
            raise AggregationError("a fixed-point aggregation returned no agreed exponents")
        qz.dequantize_into(sums, exps, self.n_workers, source.average, source.dest)
        return exps

    def sum_fixed_point(self, x: np.ndarray, rng: np.random.Generator | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
        """Fixed-point sum of flat float32 ``x``: (int32 sums, flat, of x.size; agreed exponents)."""
        x = np.asarray(x, dtype=np.float32).reshape(-1)
        sums, exps = self.aggregate(QuantizedSource(x, self.lanes, self.n_workers, rng))
        if exps is None:
            raise AggregationError("a fixed-point aggregation returned no agreed exponents")
        return sums.reshape(-1)[: x.size], exps

    def close(self) -> None:
        """Release sockets/threads; the default has nothing to release."""
        return


def sums_buffer(out: np.ndarray, size: int) -> np.ndarray:
    """`out` as a flat int32 view of `size` elements to write sums into; TypeError/ValueError
    naming what is wrong (dtype, size, layout) otherwise."""
    if not isinstance(out, np.ndarray) or out.dtype != np.int32:
        raise TypeError(f"out must be an int32 numpy array, got {getattr(out, 'dtype', type(out).__name__)}")
    if out.size != size:
        raise ValueError(f"out has {out.size} elements, the sums have {size}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be a writeable C-contiguous array")
    return out.reshape(-1)


def fill_out(sums: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """`sums` copied into `out` (reshaped like it) when given: for reducers that compute the sums
    elsewhere."""
    if out is None:
        return sums
    flat = sums_buffer(out, sums.size)
    flat[:] = sums.reshape(-1)
    return flat.reshape(sums.shape)


def saturate_int32(total: np.ndarray) -> np.ndarray:
    """int64 sums -> int32 saturating like the switch's ``|+|``."""
    return np.clip(np.asarray(total, dtype=np.int64), -2**31, 2**31 - 1).astype(np.int32)
