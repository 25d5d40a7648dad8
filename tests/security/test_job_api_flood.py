"""A flood of idle connections cannot keep members out of the job API (issue #24, points 1 and 6):
connections that have not sent a whole request yield their place, one source address holds at
most a share of the connections, and a client that resets its connection is one log line."""
import logging
import socket
import threading
import time

import pytest

from p4reduce.controller.api_server import JobApi, JobApiServer
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.slots import SlotPool
from p4reduce.protocol.job_api import JobApiClient, JobApiError

from .conftest import ADMIN, HANG_S, TOPO, connect, exchange, read_answer, request


def _server(**limits):
    mgr = JobManager(SlotPool(128), topology=TOPO, default_workers=2, default_lease_s=5.0)
    server = JobApiServer(JobApi(mgr, admin_credential=ADMIN), ("127.0.0.1", 0), **limits).start()
    return server, mgr


def _open_idle(address, count, source="127.0.0.1"):
    """`count` connections from `source` that never send a byte (those the server refuses at once
    are closed here)."""
    host, port = address.rsplit(":", 1)
    socks = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind((source, 0))
        sock.settimeout(HANG_S)
        try:
            sock.connect((host, int(port)))
        except OSError:
            sock.close()
            continue
        socks.append(sock)
    return socks


def _close(socks):
    for s in socks:
        s.close()


def test_300_idle_connections_do_not_starve_heartbeats():
    """The issue's flood: 300 connections that send nothing, from the workers' own address, at
    the default limits (256 at once). Every heartbeat and join still gets its answer."""
    server, mgr = _server(idle_timeout_s=30.0, request_deadline_s=60.0)
    client = JobApiClient(server.address)
    try:
        client.create("j", 2)
        r0 = client.join("j", ip="127.0.0.1", udp_port=5000)["rank"]
        flood = _open_idle(server.address, 300)
        try:
            time.sleep(0.5)       # the flood's connections are now old enough to yield
            for _ in range(20):   # a heartbeat every 50 ms, as a busy job's workers would send
                assert client.heartbeat("j", r0)["state"] == "waiting"
                time.sleep(0.05)
            assert client.join("j", ip="10.0.0.2", udp_port=5001)["job"]["state"] == "running"
            refreshed = _open_idle(server.address, 100)   # the flood goes on: still served
            time.sleep(0.3)
            assert client.heartbeat("j", r0)["state"] == "running"
            _close(refreshed)
        finally:
            _close(flood)
    finally:
        server.stop()


def test_one_address_cannot_take_every_connection():
    """With 16 connections at once and 6 per address, 40 idle connections from 127.0.0.1 hold at
    most 6 places: 6 connections from 127.0.0.2 and 4 from 127.0.0.3 are all admitted and answered."""
    server, _ = _server(max_connections=16, max_per_source=6, idle_timeout_s=30.0, request_deadline_s=60.0)
    try:
        flood = _open_idle(server.address, 20)
        time.sleep(0.4)
        flood += _open_idle(server.address, 20)
        try:
            others = _open_idle(server.address, 6, source="127.0.0.2") + \
                _open_idle(server.address, 4, source="127.0.0.3")
            try:
                for sock in others:
                    sock.sendall(request("GET", "/v1/health"))
                answers = [read_answer(sock)[0] for sock in others]
                assert answers == [200] * 10, answers
            finally:
                _close(others)
        finally:
            _close(flood)
    finally:
        server.stop()


def test_the_oldest_idle_connection_yields():
    """At the limit, a newcomer that sends its request displaces the oldest connection that has
    sent nothing (closed by the server), not a younger one."""
    server, _ = _server(max_connections=4, max_per_source=4, idle_timeout_s=30.0, request_deadline_s=60.0)
    try:
        flood = _open_idle(server.address, 4)
        time.sleep(0.2)
        status, _, obj = exchange(server.address, request("GET", "/v1/health"))
        assert status == 200, obj
        flood[0].settimeout(5)
        assert flood[0].recv(100) == b""             # the oldest was closed
        for sock in flood[1:]:                       # the others still wait for their request
            sock.sendall(request("GET", "/v1/health"))
            assert read_answer(sock)[0] == 200
        _close(flood)
    finally:
        server.stop()


def test_a_reset_is_one_log_line_without_traceback(caplog, capfd):
    server, _ = _server(idle_timeout_s=5.0, request_deadline_s=10.0)
    try:
        with caplog.at_level(logging.INFO, logger="p4reduce.controller.api"):
            for _ in range(3):
                sock = connect(server.address)
                sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nContent-Length: 50\r\n\r\n{")
                time.sleep(0.1)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                sock.close()     # RST
                sock = connect(server.address)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                sock.sendall(b"GET /v1/hea")
                time.sleep(0.1)
                sock.close()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and sum("reset" in r.getMessage() for r in caplog.records) < 3:
                time.sleep(0.05)
        assert exchange(server.address, request("GET", "/v1/health"))[0] == 200
    finally:
        server.stop()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ConnectionResetError" not in err, err
    resets = [r for r in caplog.records if "reset" in r.getMessage()]
    assert len(resets) >= 3, [r.getMessage() for r in caplog.records]
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in resets)


@pytest.mark.parametrize("bad", ["créd€ntial-0123456789", "cred\u2028ential-0123456789"])
def test_non_latin1_credential_is_a_clear_error(bad):
    """Point 7: a credential a header cannot carry is refused by the client, naming the problem."""
    with pytest.raises((JobApiError, ValueError)) as info:
        JobApiClient("127.0.0.1:1", credential=bad).heartbeat("j", 0)
    text = str(info.value)
    assert "credential" in text and "codec" not in text and "latin" not in text.lower(), text


def test_heartbeats_from_many_threads_under_flood_keep_a_lease():
    """Four workers' heartbeat threads, a lease of 1.5 s and 300 idle connections renewed all the
    time: the lease reaper never expires the job."""
    from p4reduce.controller.leases import LeaseReaper
    server, mgr = _server(idle_timeout_s=30.0, request_deadline_s=60.0)
    reaper = LeaseReaper(mgr, period=0.1).start()
    stop = threading.Event()
    try:
        client = JobApiClient(server.address)
        client.create("k", 4, lease_s=1.5)
        hosts = [("127.0.0.1", 6000), ("10.0.0.2", 6001), ("10.0.0.3", 6002), ("10.0.0.2", 6003)]
        ranks = []
        for ip, port in hosts[:3]:
            ranks.append(client.join("k", ip=ip, udp_port=port)["rank"])
        ranks.append(client.join("k", ip="10.0.0.3", udp_port=6004)["rank"])
        flood: list[socket.socket] = []

        def flooder():
            while not stop.is_set():
                flood.extend(_open_idle(server.address, 50))
                while len(flood) > 300:
                    flood.pop(0).close()
                stop.wait(0.2)

        threading.Thread(target=flooder, daemon=True).start()
        errors = []

        def beat(rank):
            while not stop.is_set():
                try:
                    client.heartbeat("k", rank)
                except JobApiError as e:
                    errors.append(e)
                stop.wait(0.5)

        threads = [threading.Thread(target=beat, args=(r,), daemon=True) for r in ranks]
        for t in threads:
            t.start()
        time.sleep(5.0)
        stop.set()
        for t in threads:
            t.join(5)
        assert "k" in mgr.jobs and "k" not in mgr.ended, mgr.ended
        assert not [e for e in errors if e.code != "busy"], errors
        assert len(errors) <= 2, errors
        _close(flood)
    finally:
        stop.set()
        reaper.stop()
        server.stop()
