"""`python -m p4reduce.mininet_topos run` leaves a record that `stop` uses to end exactly what it started."""
import json
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from p4reduce.mininet_topos.ports import free_port

from .conftest import REPO

pytestmark = pytest.mark.root


def wait_for(path: pathlib.Path, timeout: float, proc) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return json.loads(path.read_text())
        if proc.poll() is not None:
            raise AssertionError(f"run exited early: {proc.communicate()[0]}")
        time.sleep(0.2)
    raise AssertionError(f"{path} did not appear within {timeout} s")


def alive(pid):
    return pathlib.Path(f"/proc/{pid}").exists() and "zombie" not in \
        pathlib.Path(f"/proc/{pid}/status").read_text().lower()


@pytest.mark.parametrize("how", ["stop", "sigterm"])
def test_stop_ends_a_killed_run(tmp_path, node_prefix, how):
    run_dir = tmp_path / "run"
    argv = [sys.executable, "-m", "p4reduce.mininet_topos", "run", "--no-controller", "--topo", "two-tier",
            "--workers", "3", "--target", "p4sim", "--grpc-port", str(free_port(3)),
            "--thrift-port", str(free_port(3)), "--run-dir", str(run_dir),
            "--log-dir", str(tmp_path / "logs"), "--pcap-dir", str(tmp_path / "pcaps"), "--prefix", node_prefix]
    proc = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        state = wait_for(run_dir / "state.json", 60, proc)
        topo = json.loads((run_dir / "topology.json").read_text())
        roles = [p["role"] for p in state["processes"]]
        assert roles.count("session") == 1 and sum(r.startswith("switch") for r in roles) == 3
        assert sum(r.startswith("host") for r in roles) == 3
        spine = next(s for s in topo["switches"] if s["role"] == "spine")
        leaves = [s for s in topo["switches"] if s["role"] == "leaf"]
        assert spine["aggregate"] and [p["port"] for p in spine["ports"]] == [1, 2]
        assert [s["uplink_port"] for s in leaves] == [3, 2]       # 2 hosts on leaf1, 1 on leaf2
        assert len(topo["links"]) == 2
        pids = [p["pid"] for p in state["processes"]]
        assert all(alive(pid) for pid in pids)
        if how == "stop":
            # A killed session (SIGKILL: no cleanup at all) is what `make stop` is for.
            proc.kill()
            proc.wait(10)
            out = subprocess.run([sys.executable, "-m", "p4reduce.mininet_topos", "stop", "--run-dir", str(run_dir)],
                                 cwd=REPO, capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            assert "switch" in out.stdout
        else:
            proc.send_signal(signal.SIGTERM)          # the session cleans up after itself
            assert proc.wait(30) is not None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(pid) for pid in pids):
            time.sleep(0.1)
        assert not any(alive(pid) for pid in pids)
        assert not any(pathlib.Path(f"/sys/class/net/{i}").exists() for i in state["interfaces"])
        assert not (run_dir / "state.json").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
