"""Fixtures for end-to-end tests: real Mininet networks with p4sim-switch, on unique names/ports.

Every network gets a short random node-name prefix and free TCP ports, so tests never collide with
a `make run` on the same machine, and each test stops exactly what it started.
"""
import os
import pathlib
import random
import string

import pytest

from p4reduce.mininet_topos.ports import free_port
from p4reduce.p4src.build import compile_program

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def node_prefix():
    """A 3-letter prefix for Mininet node and interface names (interface names are <= 15 chars)."""
    return "e" + "".join(random.choice(string.ascii_lowercase) for _ in range(2))


@pytest.fixture
def net_kwargs(tmp_path, node_prefix):
    """Keyword arguments for P4Network: unique names, free ports, logs and pcaps under tmp_path."""
    return dict(prefix=node_prefix, grpc_base=free_port(3), thrift_base=free_port(3),
                log_dir=str(tmp_path / "logs"), pcap_dir=str(tmp_path / "pcaps"), target="p4sim",
                description_path=str(tmp_path / "topology.json"))


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("PYTHONPATH", str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.fixture(scope="session")
def p4reduce_program(tmp_path_factory):
    """p4src/p4reduce.p4 compiled (p4c-bm2-ss if installed, else p4sim-compile): (json, p4info)."""
    built = compile_program(tmp_path_factory.mktemp("build"), prefer_real=True)
    return str(built.json_path), str(built.p4info_path)


@pytest.fixture
def session_factory(tmp_path, node_prefix, p4reduce_program):
    """Start Sessions (network + controller + job-API relay) on unique names and ports; stops them all."""
    from p4reduce.mininet_topos.links import LinkOptions
    from p4reduce.mininet_topos.session import Session
    started = []

    def start(workers=4, link=LinkOptions(), topo="star", controller_args=None, program=None, supervise=False,
              say=None, uplink=LinkOptions(), topo_options=None):
        # gRPC and Thrift ports: base + device id, a block for up to 16 switches
        session = Session(topo=topo, workers=workers, link=link, program=program or p4reduce_program[0],
                          target="p4sim", supervise=supervise, say=say, uplink=uplink, topo_options=topo_options,
                          api_port=free_port(1), grpc_base=free_port(16),
                          thrift_base=free_port(16), prefix=node_prefix, log_dir=str(tmp_path / "logs"),
                          pcap_dir=None, run_dir=str(tmp_path / "run"),
                          controller_args=["--state-file", ""] + list(controller_args or []))
        started.append(session)
        return session.start()

    yield start
    for session in started:
        session.stop()
