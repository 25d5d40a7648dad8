"""The README's interactive path: `run` starts topology + controller + default job; workers started
inside the hosts with only the controller address and the job name (the job-API relay tells the
controller which host calls) aggregate exactly; `stop` ends it."""
import json
import subprocess
import sys
import time

import pytest

from p4reduce.mininet_topos.ports import free_port

from .conftest import REPO

pytestmark = pytest.mark.root


def test_run_then_workers_in_hosts_then_stop(tmp_path, node_prefix, p4reduce_program):
    api = free_port(1)
    run_dir = tmp_path / "run"
    argv = [sys.executable, "-m", "p4reduce.mininet_topos", "run", "--workers", "4", "--target", "p4sim",
            "--program", p4reduce_program[0], "--api-port", str(api), "--grpc-port", str(free_port(1)),
            "--thrift-port", str(free_port(1)), "--run-dir", str(run_dir), "--log-dir", str(tmp_path / "logs"),
            "--pcap-dir", str(tmp_path / "pcaps"), "--prefix", node_prefix]
    session = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while not (run_dir / "state.json").exists() or "default job" not in _peek(tmp_path):
            assert session.poll() is None, session.stdout.read()
            assert time.monotonic() < deadline, "run did not come up"
            time.sleep(0.3)
        topo = json.loads((run_dir / "topology.json").read_text())
        workers = []
        for h in topo["hosts"]:
            cmd = ["mnexec", "-a", str(h["pid"]), sys.executable, "-m", "p4reduce.worker", "allreduce",
                   "--controller", f"127.0.0.1:{api}", "--job", "default",
                   "--count", "2", "--size", "5000", "--check"]
            workers.append(subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        reports = []
        for w in workers:
            out, err = w.communicate(timeout=120)
            assert w.returncode == 0, err
            reports.append(json.loads(out.strip().splitlines()[-1]))
        assert sorted(r["rank"] for r in reports) == [0, 1, 2, 3]
        assert all(r["check"] == "ok" for r in reports), reports
        stop = subprocess.run([sys.executable, "-m", "p4reduce.mininet_topos", "stop", "--run-dir", str(run_dir)],
                              cwd=REPO, capture_output=True, text=True, timeout=60)
        assert stop.returncode == 0 and "stop: session" in stop.stdout, stop.stdout + stop.stderr
        assert session.wait(30) is not None
        assert not (run_dir / "state.json").exists()
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()


def _peek(tmp_path):
    log = tmp_path / "logs" / "controller.log"
    return "default job" if log.exists() and "default" in log.read_text() else ""
