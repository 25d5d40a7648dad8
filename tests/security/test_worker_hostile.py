"""A worker facing a broken or hostile controller ends with one clear line and exit status 2, never
a traceback or a hang; a worker waiting for its peers keeps its lease, so peers may start late."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from testbed.fakeswitch import FakeSwitch

from p4reduce.controller.api_server import JobApi, JobApiServer
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.leases import LeaseReaper
from p4reduce.controller.slots import SlotPool
from p4reduce.protocol.job_api import JobApiClient
from p4reduce.worker.agent import Agent
from p4reduce.worker.streaming import RetryPolicy

from .conftest import TOPO

JOB = {"name": "x", "job_id": 1, "state": "running", "mode": "dense", "workers": 1, "lanes": 32, "subblock": 8,
       "slots": {"base": 0, "count": 4}, "lease_s": 10.0, "joined": 1, "members": [],
       "switch": {"ip": "127.0.0.1", "udp_port": 48864, "mac": "00:00:00:00:01:fe"}, "wire_token": 7}


class FakeController:
    """Answers every request with the same status and body bytes (or raw bytes, not HTTP)."""

    def __init__(self, body: bytes, status=200, raw=False):
        answer = (status, body, raw)

        class Handler(BaseHTTPRequestHandler):
            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                status, body, raw = answer
                if raw:
                    self.wfile.write(body)
                    self.close_connection = True
                    return
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _any

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _join_answer(**job_changes):
    job = json.loads(json.dumps(JOB))
    for key, value in job_changes.items():
        target = job
        *path, last = key.split("__")
        for p in path:
            target = target[p]
        target[last] = value
    return json.dumps({"rank": 0, "job": job}).encode()


@pytest.mark.parametrize("controller_args, words", [
    ((b"<html>hello</html>",), "bad_answer"),
    ((b"[1, 2, 3]",), "not a JSON object"),
    ((b"garbage that is not HTTP\r\n\r\n", 200, True), "bad_answer"),
    ((b"", 200, True), "unreachable"),                       # closes without a word
    ((_join_answer(slots__count=-1),), "slots.count is -1"),
    ((_join_answer(workers=0),), "workers is 0"),
    ((_join_answer(slots__count="many"),), "garbles"),
    ((_join_answer(switch__ip="not-an-ip"),), "switch.ip"),
    ((_join_answer(lease_s=-1),), "lease_s"),
    ((_join_answer(wire_token=None),), "no wire_token"),               # as a GET without the job credential
    ((_join_answer(wire_token=1 << 32),), "wire_token is 4294967296"),
    ((_join_answer(wire_token="secret"),), "wire_token is 'secret'"),
    ((json.dumps({"rank": "zero", "job": JOB}).encode(),), "integer 'rank'"),
    ((json.dumps({"rank": 0}).encode(),), "no job description"),
    ((json.dumps({"error": {"code": "teapot", "message": "no\x1b[2J\x07way"}}).encode(), 418), "teapot: no?[2J?way"),
    ((json.dumps({"error": {"code": "x" * 5000, "message": 5}}).encode(), 500), "x" * 64 + "...: 5"),
])
def test_a_broken_controller_gives_a_clear_error_and_exit_2(controller_args, words):
    fake = FakeController(*controller_args)
    try:
        p = subprocess.run([sys.executable, "-m", "p4reduce.worker", "allreduce", "--controller", fake.address,
                            "--job", "x", "--bind", "127.0.0.1", "--count", "1", "--size", "10"],
                           capture_output=True, text=True, timeout=60)
    finally:
        fake.close()
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("worker: error: ") and words in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_a_silent_controller_does_not_hang_the_worker():
    """Accepts the connection and never answers: the client's timeout ends the join."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        p = subprocess.run([sys.executable, "-c",
                            "import sys; from p4reduce.worker.job import JobSession, JobJoinError\n"
                            "try:\n JobSession(sys.argv[1], 'x', timeout=1.0)\n"
                            "except JobJoinError as e:\n print(e); sys.exit(2)",
                            f"127.0.0.1:{listener.getsockname()[1]}"],
                           capture_output=True, text=True, timeout=60)
    finally:
        listener.close()
    assert p.returncode == 2 and "unreachable" in p.stdout and "timed out" in p.stdout, p.stdout + p.stderr


def test_a_worker_whose_peers_start_late_keeps_the_job():
    """Lease 1 s; rank 1 starts 3 s after rank 0. Rank 0's wait renews its lease, the job is not
    reclaimed, and both aggregate exactly."""
    mgr = JobManager(SlotPool(64), topology=TOPO, default_lease_s=1.0)
    server = JobApiServer(JobApi(mgr), ("127.0.0.1", 0)).start()
    reaper = LeaseReaper(mgr, period=0.1).start()
    results, errors = {}, []
    try:
        credential = JobApiClient(server.address).create("late", 2, lease_s=1.0, slots=4)["credential"]
        with FakeSwitch() as sw:
            def worker(delay):
                time.sleep(delay)
                try:
                    with Agent(server.address, "late", switch_addr=sw.addr, bind_ip="127.0.0.1", credential=credential,
                               retry=RetryPolicy(timeout=0.02, deadline=5)) as ag:
                        results[ag.rank] = ag.allreduce(np.arange(100, dtype=np.int32) * (ag.rank + 1))
                except Exception as e:  # reported below
                    errors.append(e)

            threads = [threading.Thread(target=worker, args=(d,)) for d in (0.0, 3.0)]
            for t in threads:
                t.start()
            deadline = time.monotonic() + 30
            while not (mgr.jobs.get("late") and mgr.jobs["late"].state == "running"):
                assert not errors and time.monotonic() < deadline, errors
                time.sleep(0.05)
            job = JobApiClient(server.address).job("late")
            sw.add_job(job["job_id"], 2, job["slots"]["count"], wire_token=mgr.jobs["late"].wire_token)
            for m in job["members"]:
                sw.add_worker(job["job_id"], m["rank"], m["ip"], m["udp_port"])
            for t in threads:
                t.join(60)
    finally:
        reaper.stop()
        server.stop()
    assert not errors, errors
    assert sorted(results) == [0, 1]
    for got in results.values():
        assert np.array_equal(got, np.arange(100, dtype=np.int32) * 3)


def test_the_worker_takes_its_credential_from_the_environment(monkeypatch):
    mgr = JobManager(SlotPool(64), topology=TOPO)
    server = JobApiServer(JobApi(mgr), ("127.0.0.1", 0)).start()
    try:
        credential = JobApiClient(server.address).create("env", 2)["credential"]
        from p4reduce.worker.job import JobJoinError, JobSession
        with pytest.raises(JobJoinError, match="credential_required"):
            JobSession(server.address, "env", wait_timeout=0.2)
        monkeypatch.setenv("P4REDUCE_JOB_CREDENTIAL", credential)
        with pytest.raises(JobJoinError, match="timeout"):       # admitted; its peer never comes
            JobSession(server.address, "env", wait_timeout=0.3)
        assert mgr.ended["env"][0] == "all workers left"         # admitted, and left when it gave up
    finally:
        server.stop()
        os.environ.pop("P4REDUCE_JOB_CREDENTIAL", None)
