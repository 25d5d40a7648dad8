"""Run one Python module per Mininet host at once and collect each one's JSON record.

Each process is started in its host's namespace with ``host.popen`` and the same interpreter as
the harness. A process that overruns the deadline is killed by its PID (only processes this
module started), and the failure names the host and shows the tail of its stderr.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class HostRunError(RuntimeError):
    """A benchmark process failed, timed out or printed no record."""


@dataclass
class HostJob:
    host: Any              # a mininet Node
    module: str            # e.g. "lab.bench.baselines.gloo_allreduce"
    args: Sequence[object]    # made strings on the command line
    wait: bool = True      # False: a server: started before the others, collected after them


ENV_DEFAULTS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def _last_json(text: str):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def run_jobs(jobs: list[HostJob], timeout: float, start_delay: float = 0.0) -> list[dict]:
    """Start every job (background ones first, `start_delay` s before the rest); return records.

    Records come back in `jobs` order. Any failure raises HostRunError after every process this
    call started has exited or been killed.
    """
    env = dict(os.environ, **ENV_DEFAULTS)
    procs = []
    ordered = sorted(range(len(jobs)), key=lambda i: jobs[i].wait)
    try:
        for pos, i in enumerate(ordered):
            job = jobs[i]
            if pos and job.wait and not jobs[ordered[pos - 1]].wait and start_delay:
                time.sleep(start_delay)
            out = tempfile.TemporaryFile(mode="w+")
            err = tempfile.TemporaryFile(mode="w+")
            cmd = [sys.executable, "-m", job.module, *map(str, job.args)]
            proc = job.host.popen(cmd, stdout=out, stderr=err, env=env, cwd=os.getcwd())
            procs.append((i, job, proc, out, err))
        deadline = time.monotonic() + timeout
        results: list[dict] = [{}] * len(jobs)
        failures = []
        for i, job, proc, out, err in sorted(procs, key=lambda p: not p[1].wait):
            remaining = max(0.1, deadline - time.monotonic())
            try:
                rc = proc.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                rc = "timeout"
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
            record = _last_json(stdout)
            if rc != 0 or record is None:
                tail = "\n    ".join(stderr.strip().splitlines()[-8:])
                what = f"timed out after {timeout:.0f}s" if rc == "timeout" else f"exit status {rc}"
                failures.append(f"{job.host.name}: {job.module} {what}"
                                + ("" if record else ", no JSON record") + (f"\n    {tail}" if tail else ""))
            results[i] = record
        if failures:
            raise HostRunError("; ".join(failures))
        return results
    finally:
        for _i, _job, proc, out, err in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            out.close()
            err.close()
