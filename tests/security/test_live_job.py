"""A running 4-worker job through the real controller completes exact whatever a local process does
to the job API or the P4Runtime channel (issue #24, points 1 and 2): 300 idle connections to the job
API; no heartbeat reaching the controller at all (liveness from the switch's slot registers); a
second P4Runtime client taking the switch over."""
import socket
import threading
import time

import pytest

from p4reduce.p4src.build import ProgramBuildError, compile_program

from .live_job import LiveJob

ROUNDS, SIZE = 600, 16384    # about 10 s of aggregation here: several 2 s leases


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    try:
        built = compile_program(tmp_path_factory.mktemp("p4reduce-build"))
    except ProgramBuildError as e:
        pytest.fail(f"p4src/p4reduce.p4 does not compile:\n{str(e)[-3000:]}")
    return built.p4info_path, built.json_path


@pytest.fixture
def live(build):
    job = LiveJob(build, lease_s=2.0)
    yield job
    job.close()


def _exact(live, results, name, took):
    if results != [True] * 4:     # what ended the job first: a short message survives CI's tail
        why = live.manager.ended.get(name, ("not ended",))[0]
        said = [line for line in live.logs if name in line and ("lease" in line or "progress" in line
                                                                 or "ended" in line)][-6:]
        pytest.fail(f"job {name}: {why}; front errors {live.front.errors[-3:]}; controller said {said}; "
                    f"workers: {[str(r)[:300] for r in results]}")
    assert live.manager.ended[name][0] == "all workers left", live.manager.ended   # not a lease
    assert took > 2.5 * 2.0, f"the job ran {took:.1f} s: too short to outlive its lease"


class IdleFlood:
    """`count` connections to `address` that never send a byte, reopened as the server closes them."""

    def __init__(self, address, count=300):
        host, port = address.rsplit(":", 1)
        self.target, self.count = (host, int(port)), count
        self.socks: list[socket.socket] = []
        self.stop = threading.Event()
        self.opened = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            alive = []
            for s in self.socks:
                try:
                    gone = s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                if gone:
                    s.close()
                else:
                    alive.append(s)
            self.socks = alive
            while len(self.socks) < self.count and not self.stop.is_set():
                try:
                    self.socks.append(socket.create_connection(self.target, timeout=5))
                    self.opened += 1
                except OSError:
                    break
            self.stop.wait(0.2)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)
        for s in self.socks:
            s.close()


def test_job_completes_exact_under_300_idle_connections(live):
    with IdleFlood(live.api) as flood:
        time.sleep(1.0)
        start = time.monotonic()
        results = live.run("flooded", ROUNDS, SIZE)
        took = time.monotonic() - start
    assert flood.opened >= 300
    _exact(live, results, "flooded", took)


def test_job_kept_alive_by_its_progress_when_no_heartbeat_arrives(live):
    """Every heartbeat is lost on the way (the controller answers but never hears it): the switch's
    slot registers show the job progressing, so its 2 s lease is kept for its whole run."""
    mgr = live.manager
    real = mgr.heartbeat

    def lost(name, rank, caller=None, **path):
        job = mgr.get(name)
        if job.state != "running":
            return real(name, rank, caller=caller, **path)
        return {"state": job.state, "lease_s": job.lease_s, "joined": len(job.members), "workers": job.workers}

    mgr.heartbeat = lost
    start = time.monotonic()
    results = live.run("silent", ROUNDS, SIZE)
    _exact(live, results, "silent", time.monotonic() - start)
    assert any("switch shows the job progressing" in line for line in live.logs), live.logs[-10:]


class Intruder:
    """A second P4Runtime client on a switch without TLS: every `period` s it arbitrates with an
    election id above the last one it saw, and, as primary, deletes the job's jobs-table entry
    and changes its wire token... everything it can to stop the job."""

    def __init__(self, live, name, times=4, period=1.0):
        import grpc
        from p4.v1 import p4runtime_pb2_grpc
        self.live, self.name, self.times, self.period = live, name, times, period
        self.channel = grpc.insecure_channel(live.grpc_addr)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.took_over = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        import queue

        from p4.v1 import p4runtime_pb2

        from p4reduce.controller.connection import Update, update
        from p4reduce.controller.job_entries import job_entry
        requests: queue.Queue = queue.Queue()
        stream = self.stub.StreamChannel(iter(requests.get, None))
        election = 1000
        programmer = self.live.manager.programmer.programmer    # the center switch's
        job = self.live.manager.jobs[self.name]
        for _ in range(self.times):
            election = max(election, self._primary_id() + 1)
            req = p4runtime_pb2.StreamMessageRequest()
            req.arbitration.device_id = 0
            req.arbitration.election_id.low = election
            requests.put(req)
            answer = next(stream)
            if answer.arbitration.status.code != 0:
                continue
            self.took_over += 1
            write = p4runtime_pb2.WriteRequest(device_id=0)
            write.election_id.low = election
            write.updates.append(update(Update.DELETE, programmer._entity(job_entry(job.spec).key())))
            try:
                self.stub.Write(write)
            except Exception:
                pass
            time.sleep(self.period)
        requests.put(None)

    def _primary_id(self):
        eid = self.live.manager.programmer.programmer.conn.election_id
        return (eid[0] << 64) | eid[1]

    def start(self):
        self.thread.start()

    def join(self):
        self.thread.join(60)
        self.channel.close()


def test_a_second_p4runtime_client_cannot_stop_the_job(live):
    """Without TLS, another local client arbitrates with a higher election id and deletes the job's
    entry, four times: the controller takes the switch back each time, restores the job, logs who
    displaced it, and the job completes exact."""
    intruders = []

    def intrude():
        intruder = Intruder(live, "contested")
        intruder.start()
        intruders.append(intruder)

    start = time.monotonic()
    results = live.run("contested", ROUNDS, SIZE, on_running=intrude)
    took = time.monotonic() - start
    intruders[0].join()
    assert intruders[0].took_over >= 2, live.logs[-10:]
    _exact(live, results, "contested", took)
    contests = [line for line in live.logs if "made itself primary; took the switch back" in line]
    assert len(contests) >= 2 and "election id 10" in contests[0], live.logs[-10:]
    assert any("job(s) restored after the takeover" in line for line in live.logs)
    assert live.controller.connections["s1"].primary
