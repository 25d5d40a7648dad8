"""Sparse allreduce (OmniReduce): blocks that are zero on a worker never leave it.

The job must be a sparse one (`make run ARGS="--mode sparse"`, or in the make run CLI
`job sparse 4 sparse`); run one copy per worker:

    mininet> h1 .venv/bin/python examples/sparse_allreduce.py --job sparse &    (and h2 .. h4)

Each rank's int32 tensor has --density of its packet-sized blocks non-zero; the sum is exact and
the report compares the bytes sent with what the dense tensor would have cost.
"""
from __future__ import annotations

import sys

import numpy as np
from _common import fail, parse_args, report

from p4reduce import worker
from p4reduce.protocol import constants as C
from p4reduce.protocol.job_api import JobApiError
from p4reduce.worker.job import JobJoinError


def data(rank: int, size: int, block: int, density: float) -> np.ndarray:
    rng = np.random.default_rng(100 + rank)
    x = rng.integers(-50, 50, size, dtype=np.int32)
    n_blocks = -(-size // block)
    keep = rng.random(n_blocks) < density
    x[np.repeat(~keep, block)[:size]] = 0
    return x


def main() -> int:
    args = parse_args(__doc__.splitlines()[0], [
        ("--size", dict(type=int, default=1 << 20, help="int32 elements (default %(default)s)")),
        ("--density", dict(type=float, default=0.05, help="fraction of non-zero blocks (default %(default)s)"))])
    try:
        agent = worker.init(args.controller, args.job)
    except (JobJoinError, JobApiError, OSError) as e:
        return fail(str(e))
    try:
        if not agent.params.sparse:
            return fail(f"job {args.job!r} is dense: create a sparse job (make run CLI: `job NAME 4 sparse`)")
        lanes = agent.params.lanes
        x = data(agent.rank, args.size, lanes, args.density)
        total = worker.allreduce(x)
        want = np.sum([data(r, args.size, lanes, args.density) for r in range(agent.n_workers)], axis=0)
        exact = bool(np.array_equal(total, want))
        sent = agent.reducer.bytes_sent
        dense = -(-args.size // lanes) * (C.HEADER_BYTES + lanes * C.LANE_BYTES)   # every block, once
        return report("sparse_allreduce", exact and sent < dense, rank=agent.rank, workers=agent.n_workers,
                      size=args.size, density=args.density, exact=exact, bytes_sent=sent,
                      dense_payload_bytes=dense, saved_pct=round(100 * (1 - sent / dense), 1))
    finally:
        worker.shutdown()


if __name__ == "__main__":
    sys.exit(main())
