"""A compressor of your own: the contract of worker/compressors/base.py in 30 lines, registered
by name and used through the switch.

`FixedScale` sends every value as round(x * 2**bits) in an int32 lane (values clipped to
[-1, 1]): no exponent to agree on, so the sum of the lanes decodes by one division. The switch
adds int32, so N workers need N * 2**bits < 2**31.

    mininet> h1 .venv/bin/python examples/custom_compressor.py &      (and h2 .. h4)
"""
from __future__ import annotations

import sys

import numpy as np
from _common import fail, parse_args, report

from p4reduce import worker
from p4reduce.protocol.job_api import JobApiError
from p4reduce.worker.compressors import Compressor, Context
from p4reduce.worker.job import JobJoinError
from p4reduce.worker.reducer import BlockSource, IntSource, Reducer


class FixedScale(Compressor):
    """x in [-1, 1] -> round(x * 2**bits); linear, so the lanes' sum decodes to the sum of x."""

    name = "fixedscale"

    def __init__(self, bits: int = 16):
        self.bits = bits

    def compress(self, x: np.ndarray, reducer: Reducer, key: str = "") -> tuple[BlockSource, Context]:
        if reducer.n_workers << self.bits >= 1 << 31:
            raise ValueError(f"{reducer.n_workers} workers * 2**{self.bits} overflows int32 lanes")
        q = np.rint(np.clip(x, -1.0, 1.0) * (1 << self.bits)).astype(np.int32)
        return IntSource(q, reducer.lanes), Context(size=x.size, n_workers=reducer.n_workers)

    def decompress(self, lanes: np.ndarray, ctx: Context) -> np.ndarray:
        return (np.asarray(lanes, np.float64).reshape(-1)[: ctx.size] / (1 << self.bits)).astype(np.float32)


def main() -> int:
    args = parse_args(__doc__.splitlines()[0], [("--bits", dict(type=int, default=16, help="fraction bits"))])
    worker.register_compressor("fixedscale", lambda seed, rank, **kw: FixedScale(args.bits))
    try:
        agent = worker.init(args.controller, args.job, compressor="fixedscale")
    except (JobJoinError, JobApiError, OSError, ValueError) as e:
        return fail(str(e))
    try:
        size = 50_000
        x = np.random.default_rng(agent.rank).uniform(-1, 1, size).astype(np.float32)
        total = worker.allreduce(x)
        want = np.sum([np.random.default_rng(r).uniform(-1, 1, size).astype(np.float32)
                       for r in range(agent.n_workers)], axis=0, dtype=np.float64)
        err = float(np.max(np.abs(total - want)))
        bound = agent.n_workers * 2.0 ** -(args.bits + 1) + 1e-6     # rounding, per worker
        return report("custom_compressor", err <= bound, rank=agent.rank, workers=agent.n_workers,
                      compressor=agent.communicator.compressor.name, max_error=err, bound=bound)
    finally:
        worker.shutdown()


if __name__ == "__main__":
    sys.exit(main())
