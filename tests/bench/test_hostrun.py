"""Running benchmark processes: records collected in order, failures and timeouts named clearly."""
import subprocess
import time

import pytest

from lab.bench import hostrun


class LocalHost:
    """Stands in for a Mininet host: popen runs in our own namespace."""

    def __init__(self, name):
        self.name = name
        self.started = []

    def popen(self, cmd, **kwargs):
        proc = subprocess.Popen(cmd, **kwargs)
        self.started.append(proc)
        return proc


def job(host, code, wait=True):
    """A job running tests/bench/snippet.py (importable as a module from the repo root, pytest's cwd)."""
    return hostrun.HostJob(host, "tests.bench.snippet", [code], wait=wait)


def test_records_come_back_in_job_order_with_servers_collected_last():
    a, b, s = LocalHost("h1"), LocalHost("h2"), LocalHost("srv")
    jobs = [job(a, "print('{\"who\": 1}')"), job(s, "import time; time.sleep(0.3); print('{\"who\": \"s\"}')", wait=False),
            job(b, "print('noise'); print('{\"who\": 2}')")]
    assert hostrun.run_jobs(jobs, timeout=30) == [{"who": 1}, {"who": "s"}, {"who": 2}]


def test_failure_names_host_status_and_stderr_tail():
    a, b = LocalHost("h1"), LocalHost("h2")
    jobs = [job(a, "print('{}')"), job(b, "import sys; sys.stderr.write('boom: bad things\\n'); sys.exit(3)")]
    with pytest.raises(hostrun.HostRunError, match=r"h2: tests.bench.snippet exit status 3, no JSON record\s+boom: bad things"):
        hostrun.run_jobs(jobs, timeout=30)


def test_timeout_kills_only_our_processes_and_says_so():
    a = LocalHost("h1")
    t0 = time.monotonic()
    with pytest.raises(hostrun.HostRunError, match="h1: tests.bench.snippet timed out after 1s"):
        hostrun.run_jobs([job(a, "import time; time.sleep(60)")], timeout=1)
    assert time.monotonic() - t0 < 10
    assert all(p.poll() is not None for p in a.started)
