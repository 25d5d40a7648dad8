"""Fixtures for end-to-end tests: real Mininet networks with p4sim-switch, on unique names/ports.

Every network gets a short random node-name prefix and free TCP ports, so tests never collide with
a `make run` on the same machine, and each test stops exactly what it started.
"""
import os
import random
import socket
import string

import pytest

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]


def free_port_block(count: int) -> int:
    """The first of `count` consecutive free TCP ports on 127.0.0.1."""
    for _ in range(200):
        base = random.randint(20000, 60000 - count)
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no block of free TCP ports")


@pytest.fixture
def node_prefix():
    """A 3-letter prefix for Mininet node and interface names (interface names are <= 15 chars)."""
    return "e" + "".join(random.choice(string.ascii_lowercase) for _ in range(2))


@pytest.fixture
def net_kwargs(tmp_path, node_prefix):
    """Keyword arguments for P4Network: unique names, free ports, logs and pcaps under tmp_path."""
    return dict(prefix=node_prefix, grpc_base=free_port_block(3), thrift_base=free_port_block(3),
                log_dir=str(tmp_path / "logs"), pcap_dir=str(tmp_path / "pcaps"), target="p4sim",
                description_path=str(tmp_path / "topology.json"))


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("PYTHONPATH", str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.fixture(scope="session")
def p4reduce_program(tmp_path_factory):
    """p4src/p4reduce.p4 compiled (p4c-bm2-ss if installed, else p4sim-compile): (json, p4info)."""
    import shutil
    import subprocess
    import sys
    out = tmp_path_factory.mktemp("build")
    json_path, p4info = out / "p4reduce.json", out / "p4reduce.p4info.txtpb"
    compiler = [shutil.which("p4c-bm2-ss")] if shutil.which("p4c-bm2-ss") else [sys.executable, "-m", "p4reduce.p4sim.compile"]
    result = subprocess.run(compiler + ["--p4v", "16", "--p4runtime-files", str(p4info), "-o", str(json_path),
                                        str(REPO / "p4src" / "p4reduce.p4")], capture_output=True, text=True)
    assert result.returncode == 0, f"compiling p4reduce.p4 failed:\n{result.stderr}"
    return str(json_path), str(p4info)


@pytest.fixture
def session_factory(tmp_path, node_prefix, p4reduce_program):
    """Start Sessions (network + controller + job-API relay) on unique names and ports; stops them all."""
    from p4reduce.mininet_topos.links import LinkOptions
    from p4reduce.mininet_topos.session import Session
    started = []

    def start(workers=4, link=LinkOptions(), topo="star", controller_args=None):
        session = Session(topo=topo, workers=workers, link=link, program=p4reduce_program[0], target="p4sim",
                          api_port=free_port_block(1), grpc_base=free_port_block(3),
                          thrift_base=free_port_block(3), prefix=node_prefix, log_dir=str(tmp_path / "logs"),
                          pcap_dir=None, run_dir=str(tmp_path / "run"),
                          controller_args=["--state-file", ""] + list(controller_args or []))
        started.append(session)
        return session.start()

    yield start
    for session in started:
        session.stop()
