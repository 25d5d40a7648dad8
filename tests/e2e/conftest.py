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
