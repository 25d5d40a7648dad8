"""Liveness from the data plane (issue #24, point 1): a job whose heartbeats do not arrive is kept
while the switch shows it progressing (its slot registers change), and reclaimed a lease after
they stop changing; the switch is read only for jobs whose heartbeats are late."""
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.slots import SlotPool
from tests.controller.test_ctl_job_api import TOPO, FakeClock


def _running(mgr):
    mgr.create("j", 2, lease_s=5.0)
    mgr.join("j", ip="127.0.0.1", udp_port=4000)
    mgr.join("j", ip="10.0.0.2", udp_port=4001)
    assert mgr.jobs["j"].state == "running"


def test_progress_on_the_switch_keeps_a_job_without_heartbeats():
    clock = FakeClock()
    logs = []
    mgr = JobManager(SlotPool(128), topology=TOPO, clock=clock, log=logs.append)
    reads = []
    state = {"mark": 0}

    def probe(job):
        reads.append(clock.t)
        return state["mark"]

    mgr.progress = probe
    _running(mgr)
    mgr.reap()
    assert reads == []                      # heartbeats on time: the switch is not read
    for _ in range(40):                     # 20 s without a heartbeat, the job advancing
        clock.t += 0.5
        state["mark"] += 1
        assert mgr.reap() == []
    assert "j" in mgr.jobs and any("progressing" in line for line in logs)
    for _ in range(9):                      # it stalls: kept for one lease more
        clock.t += 0.5
        assert mgr.reap() == []
    clock.t += 1.1
    assert mgr.reap() == ["j"]
    assert "lease expired" in mgr.ended["j"][0]


def test_a_stale_reading_gives_no_credit():
    """Readings from an earlier stretch of late heartbeats are not compared with new ones."""
    clock = FakeClock()
    mgr = JobManager(SlotPool(128), topology=TOPO, clock=clock)
    marks = iter(range(1000))
    mgr.progress = lambda job: next(marks)
    _running(mgr)
    clock.t += 2.0
    mgr.reap()                                   # late: read once
    assert mgr.jobs["j"].progress_mark is not None
    for rank in (0, 1):
        mgr.heartbeat("j", rank)
    mgr.reap()                                   # on time again: the reading is dropped
    assert mgr.jobs["j"].progress_mark is None
    clock.t += 5.5                               # then silent for a whole lease, one reading only
    assert mgr.reap() == ["j"]


def test_without_a_probe_heartbeats_alone_decide():
    clock = FakeClock()
    mgr = JobManager(SlotPool(128), topology=TOPO, clock=clock)
    _running(mgr)
    clock.t += 5.5
    assert mgr.reap() == ["j"]


def test_a_failing_probe_is_logged_and_heartbeats_decide():
    clock = FakeClock()
    logs = []
    mgr = JobManager(SlotPool(128), topology=TOPO, clock=clock, log=logs.append)

    def broken(job):
        raise RuntimeError("switch gone")

    mgr.progress = broken
    _running(mgr)
    clock.t += 3
    assert mgr.reap() == []
    clock.t += 3
    assert mgr.reap() == ["j"]
    assert any("cannot read its progress" in line for line in logs)
