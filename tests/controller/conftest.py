"""Fixtures: a p4sim P4Runtime server on loopback (in-process, real gRPC) and compiled programs."""
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def p4rt_server():
    """A fresh p4sim P4Runtime server on 127.0.0.1 (ephemeral port); yields (server, 'host:port')."""
    from p4reduce.p4sim.runtime import P4RuntimeServer
    server = P4RuntimeServer("127.0.0.1:0")
    port = server.start()
    yield server, f"127.0.0.1:{port}"
    server.stop(grace=0.2)


@pytest.fixture(scope="session")
def p4reduce_build(tmp_path_factory):
    """p4src/p4reduce.p4 compiled by p4sim-compile: (p4info path, json path)."""
    out = tmp_path_factory.mktemp("p4reduce-build")
    p4info, bmv2 = out / "p4reduce.p4info.txtpb", out / "p4reduce.json"
    proc = subprocess.run([sys.executable, "-m", "p4reduce.p4sim.compile", "--p4v", "16", "--p4runtime-files", str(p4info),
                           "-o", str(bmv2), str(REPO / "p4src" / "p4reduce.p4")],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    if proc.returncode != 0:
        pytest.fail(f"p4src/p4reduce.p4 does not compile:\n{proc.stderr[-3000:]}")
    return p4info, bmv2
