"""The job-API relay's view of a request head (mininet_topos/apirelay.py), without a network:
which job a request is about, whether it carries its own credential, where the granted credential goes,
and that a head too large or too slow is never forwarded."""
import socket
import threading

import pytest

from p4reduce.mininet_topos import apirelay
from p4reduce.mininet_topos.apirelay import has_authorization, job_of_request, read_head, with_credential


@pytest.mark.parametrize("line, job", [
    (b"POST /v1/jobs/j/join HTTP/1.1", "j"), (b"DELETE /v1/jobs/a%2Eb HTTP/1.1", "a.b"),
    (b"GET /v1/jobs/j?x=1 HTTP/1.1", "j"), (b"POST /v1/jobs HTTP/1.1", None), (b"GET /v1/health HTTP/1.1", None),
    (b"GET /v2/jobs/j HTTP/1.1", None), (b"GARBAGE", None), (b"POST /v1/jobs/%FF/join HTTP/1.1", None),
    (b"POST /v1/jobs//join HTTP/1.1", None),
])
def test_the_job_of_a_request(line, job):
    assert job_of_request(line + b"\r\nHost: x\r\n\r\n") == job


def test_authorization_is_found_in_any_case_and_only_in_the_head():
    assert has_authorization(b"GET / HTTP/1.1\r\nauthorization: Bearer x\r\n\r\n")
    assert has_authorization(b"GET / HTTP/1.1\r\nAUTHORIZATION : Bearer x\r\n\r\n")
    assert not has_authorization(b"POST / HTTP/1.1\r\nHost: x\r\n\r\nAuthorization: Bearer in-the-body")
    head = with_credential(b"POST /v1/jobs/j/join HTTP/1.1\r\nHost: x\r\n\r\n{}", "cred-of-j")
    assert head == b"POST /v1/jobs/j/join HTTP/1.1\r\nAuthorization: Bearer cred-of-j\r\nHost: x\r\n\r\n{}"


def test_a_head_too_large_or_never_ending_is_not_forwarded():
    a, b = socket.socketpair()
    try:
        a.sendall(b"GET /v1/jobs HTTP/1.1\r\n" + b"X-Pad: " + b"y" * (apirelay.HEAD_LIMIT + 10))
        assert read_head(b) is None
    finally:
        a.close()
        b.close()
    a, b = socket.socketpair()
    try:
        a.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n")
        a.shutdown(socket.SHUT_WR)      # the client stops before the head ends
        assert read_head(b) is None
    finally:
        a.close()
        b.close()


def test_a_slow_head_is_cut_off(monkeypatch):
    """A host dripping its head never reaches the controller, and its connection is closed."""
    monkeypatch.setattr(apirelay, "HEAD_TIMEOUT_S", 0.5)
    relay = apirelay.ApiRelay(("127.0.0.1", 9))      # nothing is ever forwarded in this test
    client, served = socket.socketpair()
    busy = threading.BoundedSemaphore(1)
    busy.acquire()
    thread = threading.Thread(target=relay._serve, args=(served, 1, busy))
    thread.start()
    client.sendall(b"POST /v1/jobs/j/join HTTP/1.1\r\n")
    thread.join(10)
    assert not thread.is_alive()
    client.settimeout(5)
    assert client.recv(10) == b""              # closed by the relay
    assert busy.acquire(blocking=False)        # and its connection slot given back
    client.close()
