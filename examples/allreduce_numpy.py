"""Allreduce numpy arrays through the switch: float32 (fixed point, shared exponent) and int32 (exact).

Run one copy per worker of the job, e.g. inside `make run` (job `default`, 4 workers):

    mininet> h1 .venv/bin/python examples/allreduce_numpy.py &
    ... the same on h2, h3, h4 (or: `py` / xterm); each prints a JSON line.

Every rank builds its own data from its rank, so each can check the switch's sum against numpy.
"""
from __future__ import annotations

import sys

import numpy as np
from _common import fail, parse_args, report

from p4reduce import worker
from p4reduce.protocol.job_api import JobApiError
from p4reduce.worker.job import JobJoinError


def data(rank: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(rank)
    return rng.normal(0, 1, size).astype(np.float32), rng.integers(-1000, 1000, size, dtype=np.int32)


def main() -> int:
    args = parse_args(__doc__.splitlines()[0], [("--size", dict(type=int, default=100_000, help="elements"))])
    try:
        agent = worker.init(args.controller, args.job)
    except (JobJoinError, JobApiError, OSError) as e:
        return fail(str(e))
    try:
        x, y = data(agent.rank, args.size)
        total_x = worker.allreduce(x)                 # float32: through the compressor (fixed point)
        total_y = worker.allreduce(y)                 # int32: exact
        mean_x = worker.allreduce(x, average=True)
        ranks = [data(r, args.size) for r in range(agent.n_workers)]
        want_x = np.sum([r[0] for r in ranks], axis=0, dtype=np.float64)
        want_y = np.sum([r[1] for r in ranks], axis=0, dtype=np.int64)
        err = float(np.max(np.abs(total_x - want_x)))
        exact = bool(np.array_equal(total_y, want_y))
        mean_err = float(np.max(np.abs(mean_x - want_x / agent.n_workers)))
        return report("allreduce_numpy", exact and err < 1e-4 and mean_err < 1e-4, rank=agent.rank,
                      workers=agent.n_workers, size=args.size, float32_max_error=err, int32_exact=exact,
                      mean_max_error=mean_err)
    finally:
        worker.shutdown()


if __name__ == "__main__":
    sys.exit(main())
