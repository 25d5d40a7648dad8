"""The float32 allreduce path of one worker, measured on its own: fixed point in the native loop
(the default) against the generic compressor path (quantization and dequantization in numpy,
lanes through a Python callback per batch of rounds), in the same run.

    python -m lab.bench.float_path [--elements 1M,4M] [--reps 7] [--loop native] [--quick] [--json]

One worker against the reflector of bench/worker_rate.py (its own process: it answers every
contribution with itself as a one-worker result), the call torch.distributed's backend makes for
a DDP bucket: ``Communicator.allreduce(x, average=True, out=x)`` on a float32 array, in place.
The two paths alternate call by call, so machine load hits both alike. Reported per case: the
median and best milliseconds per allreduce and the worker's CPU time per element (the process's
user + system time over the timed calls: the reflector is another process). The last line of
stdout is one JSON document (``--json``: nothing else).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from p4reduce.protocol import constants as C
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.job import JobParams
from p4reduce.worker.streaming import RetryPolicy, UdpReducer

from .worker_rate import Reflector

PATHS = {"fused": True, "generic": False}     # Communicator.fused_fixed_point


def measure(reflector: Reflector, elements: int, reps: int, loop: str, sparse: bool = False) -> list[dict]:
    """Both paths on one reducer, alternating: one row per path."""
    job = JobParams(1, 0, 1, 64, reflector.addr[0], reflector.addr[1], sparse=sparse, name="float-path",
                    lanes=C.LANES, subblock=C.SUBBLOCK,   # the reflector echoes any layout: the default build's
                    wire_token=0x5EC0_0001)
    red = UdpReducer(job, bind=("127.0.0.1", 0), retry=RetryPolicy(timeout=0.2, deadline=30.0), loop=loop)
    x = np.random.default_rng(1).standard_normal(elements).astype(np.float32)
    if sparse:   # half the packet-sized blocks zero
        blocks = -(-elements // C.LANES)
        x[np.repeat(np.random.default_rng(2).random(blocks) < 0.5, C.LANES)[:elements]] = 0
    want = x.copy()
    comm = Communicator(red)
    secs: dict[str, list[float]] = {p: [] for p in PATHS}
    cpu: dict[str, float] = {p: 0.0 for p in PATHS}
    try:
        for fused in PATHS.values():   # warm-up: window, timeout, pages
            comm.fused_fixed_point = fused
            comm.allreduce(x, average=True, out=x)
        for _ in range(reps):
            for path, fused in PATHS.items():
                comm.fused_fixed_point = fused
                c0, t0 = time.process_time(), time.perf_counter()
                comm.allreduce(x, average=True, out=x)
                secs[path].append(time.perf_counter() - t0)
                cpu[path] += time.process_time() - c0
        if not np.allclose(x, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max())):
            raise RuntimeError("the reflected float32 allreduce is off by more than its quantization")
    finally:
        red.close()
    return [{"case": f"float32 {'sparse' if sparse else 'dense'}", "path": path, "loop": red.loop,
             "elements": elements, "ms_median": round(1e3 * statistics.median(s), 2),
             "ms_best": round(1e3 * min(s), 2), "cpu_ns_per_element": round(1e9 * cpu[path] / (reps * elements), 2)}
            for path, s in secs.items()]


def _count(v: str) -> int:
    return int(float(v[:-1]) * (1 << 20)) if v[-1:] in "mM" else int(v)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.bench.float_path", description=__doc__.split("\n\n")[0])
    ap.add_argument("--elements", default="1M,4M", help="comma-separated tensor sizes (e.g. 1M,4M,1000000)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--loop", choices=["native", "python"], default="native")
    ap.add_argument("--sparse", action="store_true", help="also a sparse job (half the blocks zero)")
    ap.add_argument("--quick", action="store_true", help="256K elements, 2 repetitions (a harness test)")
    ap.add_argument("--json", action="store_true", help="only the JSON document on stdout")
    args = ap.parse_args(argv)
    sizes = [256 << 10] if args.quick else [_count(v) for v in args.elements.split(",")]
    reps = 2 if args.quick else args.reps
    reflector = Reflector()
    rows = []
    try:
        for elements in sizes:
            for sparse in (False, True) if args.sparse else (False,):
                for row in measure(reflector, elements, reps, args.loop, sparse):
                    rows.append(row)
                    if not args.json:
                        print(f"{row['loop']:6s} {row['case']:14s} {row['elements']:>9,} {row['path']:7s} "
                              f"{row['ms_median']:8.2f} ms median {row['ms_best']:8.2f} ms best "
                              f"{row['cpu_ns_per_element']:6.2f} ns CPU/element", file=sys.stderr)
    finally:
        reflector.close()
    print(json.dumps({"cpu_count": os.cpu_count(), "loadavg": list(os.getloadavg()), "reps": reps, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
