"""`make run`'s Mininet CLI as a user at a terminal sees it (a pty): host commands print their
output, the banner says how to run workers and start jobs, `workers` runs the agents on every host
with their reports and a summary, and the job runs again after it ended."""
import re
import sys

import pexpect
import pytest

from p4reduce.mininet_topos.ports import free_port

from .conftest import REPO

pytestmark = pytest.mark.root
PROMPT = "mininet> "


@pytest.fixture
def run_cli(tmp_path, node_prefix, p4reduce_program):
    argv = ["-m", "p4reduce.mininet_topos", "run", "--workers", "4", "--target", "p4sim",
            "--program", p4reduce_program[0], "--api-port", str(free_port(1)), "--grpc-port", str(free_port(1)),
            "--thrift-port", str(free_port(1)), "--run-dir", str(tmp_path / "run"),
            "--log-dir", str(tmp_path / "logs"), "--pcap-dir", str(tmp_path / "pcaps"), "--prefix", node_prefix]
    child = pexpect.spawn(sys.executable, argv, cwd=str(REPO), encoding="utf-8", timeout=90,
                          dimensions=(50, 200))
    try:
        yield child, node_prefix
    finally:
        if child.isalive():
            child.sendline("exit")
            child.expect(pexpect.EOF, timeout=60)
        child.close()


def _command(child, line, timeout=90):
    """Send one CLI line; the text it printed up to the next prompt."""
    child.sendline(line)
    child.expect_exact(PROMPT, timeout=timeout)
    return child.before.replace("\r", "")


def test_cli_shows_host_output_runs_workers_and_reruns_the_job(run_cli):
    child, p = run_cli
    child.expect_exact(PROMPT)
    banner = child.before
    assert "workers " in banner and "job NAME [N] [MODE]" in banner and "make shell [SWITCH=name]" in banner

    out = _command(child, f"{p}h1 echo output-of-h1")
    assert "output-of-h1\n" in out.split("\n", 1)[1]                  # not only the echoed command line
    out = _command(child, f"{p}h1 ping -c1 -W2 {p}h2")
    assert "1 packets transmitted, 1 received" in out, out

    for attempt in ("first", "again"):
        out = _command(child, "workers --count 2 --size 3000 --check")
        rows = [line.split() for line in out.splitlines() if re.match(rf"{p}h\d ", line)]
        assert sorted(r[1] for r in rows) == ["0", "1", "2", "3"], (attempt, out)
        assert all(r[2] == "ok" for r in rows), (attempt, out)
        for k in range(1, 5):                                      # every host's own JSON report
            assert re.search(rf'^{p}h{k}\| {{"rank": \d, "workers": 4, .*"check": "ok"', out, re.M), out
        if attempt == "again":                                     # the job had ended: made again
            assert "job 'default' created (again" in out, out

    out = _command(child, "job other 2 sparse")
    assert "job 'other' created: 2 workers, sparse" in out
    out = _command(child, "jobs")
    assert re.search(r"^other\s+waiting\s+0/2\s+sparse", out, re.M), out
    out = _command(child, "job other 9")
    assert "WORKERS must be in 1..4" in out
    out = _command(child, "workers other --count 1 --size 100 --check")
    rows = [line.split() for line in out.splitlines() if re.match(rf"{p}h\d ", line)]
    assert [r[0] for r in rows] == [f"{p}h1", f"{p}h2"] and all(r[2] == "ok" for r in rows), out
    out = _command(child, "workers --count 0")
    assert "--count: must be >= 1" in out and "exit 2" in out, out
    child.sendline("exit")
    child.expect(pexpect.EOF, timeout=60)
