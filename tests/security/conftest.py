"""Helpers for the hostile test suite: a job API served on loopback with short time limits, and a
raw-socket client that sends exactly the bytes a test gives it."""
import json
import socket

import pytest

from p4reduce.controller.api_server import JobApi, JobApiServer
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.slots import SlotPool
from p4reduce.controller.topology import from_dict
from tests.worker.conftest import p4reduce_json  # noqa: F401 - the P4 program on p4sim's engine

TOPO = from_dict({
    "switches": {"s1": {"grpc_addr": "127.0.0.1:1", "ip": "10.0.0.254", "mac": "00:00:00:00:01:fe"}},
    "hosts": {"h1": {"ip": "127.0.0.1", "mac": "00:00:00:00:00:01", "switch": "s1", "port": 1},
              "h2": {"ip": "10.0.0.2", "mac": "00:00:00:00:00:02", "switch": "s1", "port": 2},
              "h3": {"ip": "10.0.0.3", "mac": "00:00:00:00:00:03", "switch": "s1", "port": 3}},
})
ADMIN = "admin-credential-for-tests-0123456789"
IDLE_S, DEADLINE_S = 1.0, 2.0     # the server's limits in these tests (defaults: 10 s, 20 s)
HANG_S = 15.0                     # a test waiting this long for an answer has found a hang


@pytest.fixture
def api():
    """(address, manager) of a job API on loopback with an admin credential and short time limits."""
    mgr = JobManager(SlotPool(128), topology=TOPO, default_workers=2, default_lease_s=5.0)
    server = JobApiServer(JobApi(mgr, admin_credential=ADMIN), ("127.0.0.1", 0), max_connections=8,
                          idle_timeout_s=IDLE_S, request_deadline_s=DEADLINE_S).start()
    yield server.address, mgr
    server.stop()


def connect(address):
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=HANG_S)
    return sock


def read_answer(sock):
    """(status, headers dict, body bytes) of one HTTP answer; (None, {}, b'') if the server closed
    the connection without answering. A socket.timeout here means the server hung."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None, {}, data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body


def exchange(address, raw: bytes):
    """Send `raw` on a fresh connection; the answer as (status, headers, parsed JSON body or None)."""
    with connect(address) as sock:
        sock.sendall(raw)
        status, headers, body = read_answer(sock)
    try:
        obj = json.loads(body) if body else None
    except ValueError:
        obj = None
    return status, headers, obj


def request(method, path, body=None, credential=None, extra=""):
    """A well-formed HTTP/1.1 request's bytes."""
    data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    auth = f"Authorization: Bearer {credential}\r\n" if credential else ""
    return (f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}{extra}"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data
