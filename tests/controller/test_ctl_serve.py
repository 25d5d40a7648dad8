"""`python -m p4reduce.controller serve` as a user runs it, against `python -m p4sim.simple_switch` subprocesses on
loopback: pipeline push, job API, SIGTERM, restart resuming the job, a second controller refused."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from p4reduce.mininet_topos.ports import free_port
from p4reduce.protocol.job_api import JobApiClient, JobApiError


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def switch_proc():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "p4sim.simple_switch", "--no-p4", "--",
                             "--grpc-server-addr", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    yield f"127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)


def start_controller(topo, build, api_port, state, *extra):
    p4info, bmv2 = build
    return subprocess.Popen([sys.executable, "-m", "p4reduce.controller", "serve", "--topology", str(topo),
                             "--p4info", str(p4info), "--bmv2-json", str(bmv2), "--api-addr",
                             f"127.0.0.1:{api_port}", "--state-file", str(state), "--wait", "20", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    return out


def test_serve_restart_and_second_controller(switch_proc, p4reduce_build, tmp_path):
    topo = tmp_path / "topology.json"
    topo.write_text(json.dumps({
        "switches": {"s1": {"grpc_addr": switch_proc, "ip": "10.0.0.254", "mac": "00:00:00:00:01:fe"}},
        "hosts": {"h1": {"ip": "127.0.0.1", "mac": "00:00:00:00:00:01", "switch": "s1", "port": 1},
                  "h2": {"ip": "10.0.0.2", "mac": "00:00:00:00:00:02", "switch": "s1", "port": 2}}}))
    api_port = free_port()
    client = JobApiClient(f"127.0.0.1:{api_port}")

    def up():
        try:
            return client.health()["ok"]
        except JobApiError:
            return False

    ctl = start_controller(topo, p4reduce_build, api_port, tmp_path / "state.json", "--default-workers", "2")
    try:
        wait_for(up, 60, "the job API")
        assert client.join("train")["rank"] == 0  # nothing but a job name
        client.join("train", ip="10.0.0.2")
    finally:
        out = stop(ctl)
    assert "pipeline pushed" in out and "job train: rank 1 joined" in out

    ctl = start_controller(topo, p4reduce_build, api_port, tmp_path / "state.json")
    try:
        wait_for(up, 60, "the restarted job API")
        job = client.job("train")
        assert job["state"] == "running" and [m["ip"] for m in job["members"]] == ["127.0.0.1", "10.0.0.2"]
        # another controller with a lower election id is refused, and says why
        other = subprocess.run([sys.executable, "-m", "p4reduce.controller", "serve", "--grpc-addr", switch_proc,
                                "--election-id", "3", "--api-addr", f"127.0.0.1:{free_port()}",
                                "--state-file", ""], capture_output=True, text=True, timeout=60)
        assert other.returncode == 1 and "is not primary" in other.stderr and "election id 10" in other.stderr
        client.end("train")
    finally:
        out = stop(ctl)
    assert "already runs this pipeline" in out and "resumed 1 job(s) from the switch: train" in out
    assert os.path.exists(tmp_path / "state.json")
