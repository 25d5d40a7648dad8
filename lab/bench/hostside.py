"""The measurement loop every benchmark worker runs inside its Mininet host.

All systems (gloo, parameter server, p4reduce) are measured the same way: warm up, synchronise,
snapshot the host interface's kernel counters, run the timed allreduces, synchronise again
(so bytes still queued in socket buffers at the end are counted), snapshot
again, verify the last result against the exact sum, print one JSON line on stdout.

`switch_ifaces` (the hierarchy section's uplinks) are switch interfaces, read at the same two
points from ``/proc/PID/net/dev`` of a process in the switches' namespace (`switch_pid`: the
harness, in the root namespace where the switches' ports live). Read by one worker (rank 0),
after the barriers, they count the timed loop's bytes on the links between switches, which no
host's own counters see.
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

from lab.bench import interface_counters


def measure(*, system: str, rank: int, world: int, iface: str, size: int, reps: int, warmup: int,
            allreduce: Callable[[], np.ndarray], barrier: Callable[[], None],
            expected: np.ndarray, extra: dict | None = None, switch_ifaces: Sequence[str] = (),
            switch_pid: int | str = 1) -> dict:
    """Run `allreduce` warmup+reps times; return timings, counter deltas and the check."""
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    for _ in range(warmup):
        allreduce()
    barrier()
    before = interface_counters.read_proc(iface)
    switch_before = {name: interface_counters.read_proc(name, switch_pid) for name in switch_ifaces}
    times = []
    result = None
    for _ in range(reps):
        t0 = time.perf_counter()
        result = allreduce()
        times.append(time.perf_counter() - t0)
    barrier()  # every peer has its result, so every byte of the timed loop has left this host
    after = interface_counters.read_proc(iface)
    switch_after = {name: interface_counters.read_proc(name, switch_pid) for name in switch_ifaces}
    delta = after - before
    flat = np.asarray(result).reshape(-1)
    wrong = np.flatnonzero(flat != expected)
    mismatches = int(wrong.size)
    record = {
        "system": system, "rank": rank, "world": world, "iface": iface, "size": size,
        "reps": reps, "warmup": warmup, "times_s": times,
        "counters": delta.as_dict(), "verified": mismatches == 0, "mismatches": mismatches,
    }
    if switch_ifaces:
        record["switch_counters"] = {name: (switch_after[name] - switch_before[name]).as_dict()
                                     for name in switch_ifaces}
    if mismatches:  # enough to start debugging from, not the whole tensor
        first = wrong[:5].tolist()
        record["first_mismatches"] = {"index": first, "got": flat[first].tolist(),
                                      "expected": expected[first].tolist()}
    if extra:
        record.update(extra)
    return record


def emit(record: dict) -> None:
    """Print the record as the last line of stdout, where the harness looks for it."""
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()
