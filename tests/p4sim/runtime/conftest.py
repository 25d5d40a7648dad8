"""Fixtures for the P4Runtime tests: an in-process server on a free loopback port, clients,
and the reference programs (real p4c output) from ../shared/p4-reference."""
import json

import pytest
from backend_param import engine_backend  # noqa: F401 - every test on both backends (tests/backend_param.py)

from p4sim.runtime import P4RuntimeServer

from .p4rt_client import RawClient, load_p4info

CPU_PORT = 64
DEVICE_ID = 1


class Harness:
    """A started server plus the frames its pipeline sent to front-panel ports."""

    def __init__(self, server):
        self.server = server
        self.address = f"127.0.0.1:{server.port}"
        self.sent = []
        server.packet_path.port_sink = lambda port, frame: self.sent.append((port, frame))
        self.clients = []

    def client(self, **kwargs):
        kwargs.setdefault("device_id", DEVICE_ID)
        client = RawClient(self.address, **kwargs)
        self.clients.append(client)
        return client

    def inject(self, port, frame):
        """A frame arriving on a front-panel port; returns what the switch sent out."""
        self.sent.clear()
        self.server.packet_path.inject(port, frame)
        return sorted(self.sent)


@pytest.fixture
def harness():
    server = P4RuntimeServer("127.0.0.1:0", DEVICE_ID, cpu_port=CPU_PORT)
    server.start()
    h = Harness(server)
    yield h
    for client in h.clients:
        client.close()
    server.stop(0.2)


class Reference:
    """One reference program: P4Info, JSON bytes, case and expected results."""

    def __init__(self, root, name):
        self.name = name
        self.p4info_path = root / "p4c-out" / f"{name}.p4info.txtpb"
        self.json_path = root / "p4c-out" / f"{name}.json"
        self.p4info = load_p4info(self.p4info_path)
        self.device_config = self.json_path.read_bytes()
        self.case = json.loads((root / "programs" / f"{name}.case.json").read_text())
        self.expected = json.loads((root / "expected" / f"{name}.json").read_text())


@pytest.fixture
def reference(reference_dir):
    return lambda name: Reference(reference_dir, name)
