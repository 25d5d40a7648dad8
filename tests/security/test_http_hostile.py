"""Hostile HTTP clients against the job API, over raw sockets: slow senders, bad lengths, huge
numbers, bad names, methods http.server does not know, connection floods. Every one gets a JSON
4xx (or its connection closed) within the server's time limits; none hangs it, none gets a 500 or
an HTML page, and nothing is left half-made."""
import json
import socket
import time

import pytest

from p4reduce.controller.api_server import MAX_BODY

from .conftest import DEADLINE_S, HANG_S, connect, exchange, read_answer, request


def _error(status, headers, obj, want_status, want_code):
    assert status == want_status, (status, obj)
    assert headers["content-type"] == "application/json"
    assert obj["error"]["code"] == want_code, obj


def test_slowloris_head_is_cut_off(api):
    """A head dripping in a byte at a time (each byte within the idle timeout) is cut off at the
    request deadline, and the server still answers others meanwhile."""
    address, _ = api
    with connect(address) as sock:
        sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\n")
        t0 = time.monotonic()
        closed = False
        while time.monotonic() - t0 < HANG_S:
            try:
                sock.sendall(b"X")
                sock.settimeout(0.4)
                if sock.recv(1024) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:     # reset: cut off as well
                closed = True
                break
        assert closed, "a slow head held its connection open"
        assert time.monotonic() - t0 < HANG_S
    assert exchange(address, request("GET", "/v1/health"))[0] == 200


def test_idle_connection_and_short_body_are_closed(api):
    address, _ = api
    with connect(address) as sock:       # connects and says nothing
        assert read_answer(sock)[0] is None
    with connect(address) as sock:       # promises 100 bytes, sends 10
        sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"name\": 1")
        status, headers, body = read_answer(sock)
    assert status in (400, 408, None), body
    if status is not None:
        assert json.loads(body)["error"]["code"] in ("timeout", "bad_length")


@pytest.mark.parametrize("length, status, code", [
    ("-1", 400, "bad_length"), ("-99999", 400, "bad_length"), ("abc", 400, "bad_length"),
    ("0x10", 400, "bad_length"), (str(10 ** 9), 413, "too_large"), ("9" * 5000, 413, "too_large"),
    (str(MAX_BODY + 1), 413, "too_large"),
])
def test_bad_content_length_is_refused_at_once(api, length, status, code):
    """No body follows: an answer that waited for one would hang until the test's own timeout."""
    address, mgr = api
    raw = f"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode()
    with connect(address) as sock:
        sock.sendall(raw)
        sock.settimeout(DEADLINE_S / 2)    # well before the server's own deadline would close it
        answer = read_answer(sock)
    _error(answer[0], answer[1], json.loads(answer[2]), status, code)
    assert mgr.list() == []


def test_chunked_bodies_are_refused(api):
    address, _ = api
    raw = b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    _error(*exchange(address, raw), 411, "bad_length")


@pytest.mark.parametrize("body", [
    b'{"name": "j", "workers": ' + b"9" * 5000 + b"}",          # past Python's integer digit limit
    b'{"name": "j", "workers": 2, "lease_s": NaN}',
    b'{"name": "j", "workers": 2, "lease_s": Infinity}',
    b"[" * 30_000 + b"]" * 30_000,                              # nesting past the recursion limit
    b"\xff\xfe{}",
])
def test_hostile_json_is_a_400(api, body):
    address, mgr = api
    _error(*exchange(address, request("POST", "/v1/jobs", body)), 400, "bad_json")
    assert mgr.list() == [] and mgr.pool.free == 128


@pytest.mark.parametrize("field, value", [("workers", 10 ** 400), ("slots", -(10 ** 300)), ("lease_s", 1e308),
                                          ("workers", 2.5)])
def test_out_of_range_numbers_are_a_400_naming_the_field(api, field, value):
    address, _ = api
    body = {"name": "j", "workers": 2, field: value}
    status, headers, obj = exchange(address, request("POST", "/v1/jobs", body))
    _error(status, headers, obj, 400, "bad_field")
    assert obj["error"]["field"] == field


@pytest.mark.parametrize("name", [".", "..", "x\n", "-j", "_", "a" * 65, "", "x y"])
def test_bad_names_are_refused(api, name):
    address, mgr = api
    _error(*exchange(address, request("POST", "/v1/jobs", {"name": name, "workers": 1})), 400, "bad_field")
    quoted = "".join(f"%{b:02X}" for b in name.encode())
    status, headers, obj = exchange(address, request("POST", f"/v1/jobs/{quoted}/join", {}))
    assert status in (400, 404) and headers["content-type"] == "application/json", obj
    assert mgr.list() == [] and not mgr.ended


def test_path_names_are_judged_whole(api):
    """'$' in a route would match before a trailing newline; percent-escapes that are not UTF-8
    are a 400, not a 500."""
    address, _ = api
    assert exchange(address, request("GET", "/v1/jobs/x%0A"))[0] in (400, 404)
    _error(*exchange(address, request("POST", "/v1/jobs/%FF%FE/join", {})), 400, "bad_field")


@pytest.mark.parametrize("method", ["PATCH", "OPTIONS", "TRACE", "BREW", "HEAD", "PUT"])
def test_other_methods_get_json_405(api, method):
    address, _ = api
    status, headers, obj = exchange(address, request(method, "/v1/jobs"))
    assert status == 405 and headers["content-type"] == "application/json"
    if method != "HEAD":       # a HEAD answer has no body
        assert obj["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("raw", [b"GARBAGE\r\n\r\n", b"GET /v1/jobs HTTP/9.9\r\n\r\n",
                                 b"GET " + b"/x" * 40000 + b" HTTP/1.1\r\n\r\n",
                                 b"GET /v1/jobs HTTP/1.1\r\n" + b"X-A: b\r\n" * 200 + b"\r\n"])
def test_malformed_requests_get_json_not_html(api, raw):
    address, _ = api
    status, headers, obj = exchange(address, raw)
    assert (400 <= status < 500 or status == 505) and headers["content-type"] == "application/json", (status, obj)
    assert "error" in obj


def test_connection_flood_is_bounded_and_answered(api):
    """Past max_connections (8 here) the oldest connection that has sent nothing yields its place
    (issue #24): a caller that sends its request is answered at once; when the flood goes, the
    API serves again."""
    address, _ = api
    flood = [connect(address) for _ in range(8)]
    try:
        time.sleep(0.2)
        status, headers, obj = exchange(address, request("GET", "/v1/health"))
        assert status == 200, obj
    finally:
        for s in flood:
            s.close()
    deadline = time.monotonic() + HANG_S
    while exchange(address, request("GET", "/v1/health"))[0] != 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_a_join_on_a_job_that_just_ended_is_refused(api):
    address, mgr = api
    job = exchange(address, request("POST", "/v1/jobs", {"name": "j", "workers": 2}))[2]
    assert exchange(address, request("DELETE", "/v1/jobs/j", credential=job["credential"]))[0] == 200
    status, headers, obj = exchange(address, request("POST", "/v1/jobs/j/join", {}, credential=job["credential"]))
    _error(status, headers, obj, 409, "job_ended")
    status, headers, obj = exchange(address, request("POST", "/v1/jobs/j/join", {}))   # nor without a credential
    _error(status, headers, obj, 409, "job_ended")
    assert mgr.list() == [] and mgr.pool.free == 128    # not silently re-created


def test_server_survives_a_reset_mid_request(api):
    address, _ = api
    for _ in range(20):
        sock = connect(address)
        sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nContent-Length: 50\r\n\r\n{")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()     # RST
    deadline = time.monotonic() + HANG_S    # (a burst may briefly fill the 8 connection slots: 503 busy)
    while exchange(address, request("GET", "/v1/health"))[0] != 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)
