"""`make demo`, the README's first command, run as a test (small tensors, unique names and ports)."""
import re
import shutil
import subprocess

import pytest

from p4reduce.mininet_topos.ports import free_port

from .conftest import REPO

pytestmark = pytest.mark.root


def test_make_demo_aggregates_exactly_and_stops_everything(tmp_path, node_prefix):
    args = (f"--elements 8192 --tensors 2 --epochs 2 --timeout 150 --quiet "
            f"--api-port {free_port(1)} --grpc-port {free_port(1)} "
            f"--thrift-port {free_port(1)} --prefix {node_prefix} --run-dir {tmp_path}/run "
            f"--log-dir {tmp_path}/logs --pcap-dir {tmp_path}/pcaps")
    out = subprocess.run(["make", "demo", f"ARGS={args}"], cwd=REPO, capture_output=True, text=True,
                         timeout=540)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    # The switch runs the program on p4sim-switch's default engine, the native backend, and says so.
    assert "(p4sim-switch, native backend (generated C), pid " in out.stderr, out.stderr[-3000:]
    assert text.count("exact: yes") == 3, text        # dense, sparse, dense again on 100 Mbit/s links
    # OmniReduce: the sparse phase skips zero blocks.
    saved = re.search(r"saved vs dense streaming \(.*\): (-?[\d.]+)%", text)
    assert saved and float(saved.group(1)) > 50.0, text
    vs_ring = re.search(r"saved vs a ring allreduce's payload alone \(.*\): (-?[\d.]+)%", text)
    assert vs_ring and float(vs_ring.group(1)) > 50.0, text
    # the dense job against gloo's ring on the same hosts, measured in the same run, per worker
    assert "ring allreduce (gloo) on the same hosts and switch, per worker and tensor: sent" in text, text
    against = re.search(r"p4reduce against the ring, per worker: ([\d.]+)% (fewer|more) bytes sent, "
                        r"([\d.]+)x the ring's time \((faster|slower)\)", text)
    assert against and float(against.group(3)) > 0, text
    # measured the same way on both sides, and said so; then again where the network is the bottleneck
    assert text.count("measured the same way on both: 1 warm-up call, then 2 back-to-back calls of 8,192") == 2, text
    assert "== dense on 100 Mbit/s links (demo-dense, 4 workers" in text, text
    assert len(re.findall(r"p4reduce against the ring, per worker: .*x the ring's time", text)) == 2, text
    acc = re.search(r"test accuracy ([\d.]+)% \(single-machine reference ([\d.]+)%\); replicas identical: yes", text)
    assert acc and float(acc.group(1)) > 80.0, text
    assert "everything it started is stopped" in text
    on = "simple_switch_grpc (BMv2," if shutil.which("simple_switch_grpc") else "p4sim-switch (the embedded target)"
    assert f"workers on {on}" in out.stderr and f" on {on}; everything it started is stopped" in text
    # Nothing left behind: no recorded state, no interfaces with our prefix.
    assert not (tmp_path / "run" / "state.json").exists()
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f"{node_prefix}s1" not in links and f"{node_prefix}h1" not in links
