"""examples/ run as a user runs them: one copy per worker host inside a Mininet network with the
controller and the job-API relay (the hosts join with only the controller address and job name).
Each example checks its own result; here every rank must report ok, with the figures asserted.
(ddp_torch runs from the make run CLI: tests/e2e/test_run_cli.py.)"""
import json
import subprocess
import sys

import pytest

from .conftest import REPO

pytestmark = pytest.mark.root


def _run_example(session, script, job, *args, timeout=240):
    """Start `script` on every host at once; every rank's JSON report."""
    argv = [sys.executable, str(REPO / "examples" / script), "--controller", session.api_addr, "--job", job, *args]
    procs = [h.popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                     cwd=str(REPO)) for h in session.network.hosts]
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, f"{script}: exit {p.returncode}\n{out}\n{err[-3000:]}"
        reports.append(json.loads(out.strip().splitlines()[-1]))
    assert sorted(r["rank"] for r in reports) == list(range(len(procs)))
    assert all(r["ok"] and r["workers"] == len(procs) for r in reports), reports
    return reports


def test_examples_in_mininet(session_factory):
    session = session_factory(workers=4)
    session.create_job("ex-numpy", 4, "dense")
    reports = _run_example(session, "allreduce_numpy.py", "ex-numpy", "--size", "20000")
    assert all(r["int32_exact"] and r["float32_max_error"] < 1e-4 for r in reports)

    session.create_job("ex-sparse", 4, "sparse")
    reports = _run_example(session, "sparse_allreduce.py", "ex-sparse", "--size", "262144", "--density", "0.05")
    assert all(r["exact"] and r["saved_pct"] > 70 for r in reports), reports

    session.create_job("ex-custom", 4, "dense")
    reports = _run_example(session, "custom_compressor.py", "ex-custom", "--bits", "16")
    assert all(r["compressor"] == "fixedscale" and r["max_error"] <= r["bound"] for r in reports)
