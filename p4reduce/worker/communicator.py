"""The Communicator: compressor + error-feedback memory + reducer = one gradient allreduce.

    compensated   = memory.compensate(g)
    source, ctx   = compressor.compress(compensated, reducer)     # collective index agreement
    sums, exps    = reducer.aggregate(source)                     # exponent max + integer sum
    memory.update(compensated, compressor.contribution(source.sent))  # residual = what was lost
    result        = compressor.finish(compressor.decompress(sums) / N)

int32 tensors skip compression and are summed exactly.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from . import native_loop
from .compressors import Compressor, FixedPoint
from .compressors.base import Context
from .memory import ErrorFeedback, NoMemory
from .reducer import FloatSource, Reducer


def deliver(result: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """`result` itself, or copied into the caller's `out` (any shape of the same size), which is
    returned shaped like `result`."""
    if out is None:
        return result
    shaped = out if out.shape == result.shape else out.reshape(result.shape)
    shaped[...] = result
    return shaped


class Communicator:
    """Allreduce of float32 (compressed) and int32 (exact) arrays of any shape over a Reducer."""

    #: FixedPoint's allreduce through Reducer.aggregate_float (the conversion in the reducer's
    #: loop: in C on the native loop, no array the size of the tensor); False: the generic
    #: compressor path below, the same bits (for comparisons: bench/float_path.py)
    fused_fixed_point: bool = True

    def __init__(self, reducer: Reducer, compressor: Compressor | None = None,
                 memory: ErrorFeedback | NoMemory | None = None):
        self.reducer = reducer
        self.compressor = compressor or FixedPoint()
        self.memory = memory or NoMemory()

    @property
    def n_workers(self) -> int:
        return self.reducer.n_workers

    def allreduce(self, array: ArrayLike, average: bool = False, key: str = "",
                  out: np.ndarray | None = None) -> np.ndarray:
        """Sum (or mean with ``average``) over workers; same shape as ``array``.

        float32 goes through the compressor (other float dtypes are computed in float32 and cast
        back); int32 is summed exactly (``average`` floor-divides). ``out``: an array of the
        input's size and dtype that receives the result (and is returned, shaped like the input);
        it may be the input itself (an in-place allreduce, as torch.distributed's). Reusing one
        spares the system handing a large result fresh pages every call.
        """
        a = np.asarray(array)
        if out is not None and (not isinstance(out, np.ndarray) or out.dtype != a.dtype or out.size != a.size):
            raise ValueError(f"out must be a numpy array of {a.size} {a.dtype} elements, got "
                             f"{getattr(out, 'size', '?')} of {getattr(out, 'dtype', type(out).__name__)}")
        if a.dtype == np.int32:
            if out is None:
                total = self.reducer.sum_int32(a.reshape(-1)).reshape(a.shape)
            else:
                self.reducer.sum_int32(a.reshape(-1), out=out)
                total = out if out.shape == a.shape else out.reshape(a.shape)
            if not average:
                return total
            if out is None:
                return total // np.int32(self.n_workers)
            np.floor_divide(total, np.int32(self.n_workers), out=total)
            return total
        if not np.issubdtype(a.dtype, np.floating):
            raise TypeError(f"allreduce supports float32 and int32 arrays, got dtype {a.dtype}")
        if self.fused_fixed_point and type(self.compressor) is FixedPoint:
            return self._fixed_point(a, self.compressor, average, key, out)
        x = a.astype(np.float32, copy=False).reshape(-1)
        comp = self.memory.compensate(x, key)
        src, ctx = self.compressor.compress(comp, self.reducer, key)
        src.keep_sent = self.compressor.needs_contribution or not isinstance(self.memory, NoMemory)
        sums, ctx.exponents = self.reducer.aggregate(src)
        if src.keep_sent:
            sent = src.sent if src.sent is not None else np.zeros_like(sums)
            self.memory.update(comp, self.compressor.contribution(sent, ctx, key), key)
        total = self.compressor.decompress(sums, ctx)
        n = np.float32(self.n_workers)
        if type(self.compressor).finish is Compressor.finish:
            out_f = total / n if average else total
        else:
            mean = self.compressor.finish(total / n, ctx, key)
            out_f = mean if average else mean * n
        return deliver(out_f.astype(a.dtype, copy=False).reshape(a.shape), out)

    def _fixed_point(self, a: np.ndarray, fp: FixedPoint, average: bool, key: str,
                     out: np.ndarray | None) -> np.ndarray:
        """allreduce of a float array with FixedPoint: what the generic path computes, bit for bit,
        with the result written by the reducer straight into `out` (float32, contiguous: the
        caller's buffer or the input itself) or one new array. Error feedback as there: the
        compensated input, the lanes sent (kept by the source), the residual."""
        x = a.astype(np.float32, copy=False).reshape(-1)
        comp = self.memory.compensate(x, key)
        keep_sent = fp.needs_contribution or not isinstance(self.memory, NoMemory)
        direct = (out is not None and out.dtype == np.float32 and out.flags.c_contiguous
                  and out.flags.writeable and not (keep_sent and np.may_share_memory(out, comp)))
        dest = out.reshape(-1) if direct and out is not None else np.empty(x.size, np.float32)
        lanes = self.reducer.lanes
        proposed = native_loop.propose(comp, lanes) if getattr(self.reducer, "loop", None) == "native" else None
        src = FloatSource(comp, lanes, self.n_workers, dest, average, fp._rng, proposed)
        src.keep_sent = keep_sent
        exps = self.reducer.aggregate_float(src)
        if keep_sent:
            ctx = Context(size=x.size, n_workers=self.n_workers, exponents=exps)
            sent = src.sent if src.sent is not None else np.zeros((src.n_blocks, lanes), np.int32)
            self.memory.update(comp, fp.contribution(sent, ctx, key), key)
        if direct and out is not None:
            return out if out.shape == a.shape else out.reshape(a.shape)
        return deliver(dest.astype(a.dtype, copy=False).reshape(a.shape), out)
