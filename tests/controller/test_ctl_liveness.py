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
    reads = []

    def probe(job):
        reads.append(clock.t)
        return 0 if len(reads) == 1 else 1          # the job stops after the first reading

    mgr.progress = probe
    _running(mgr)
    clock.t += 2.0
    mgr.reap()                                   # late: read once
    assert mgr.jobs["j"].progress_mark == 0
    for rank in (0, 1):
        mgr.heartbeat("j", rank)
    mgr.reap()                                   # on time again: the reading is dropped
    assert mgr.jobs["j"].progress_mark is None
    assert _passes(mgr, clock, 5.0) == []        # then silent, read at each late pass: never a change
    assert len(reads) > 3
    assert _passes(mgr, clock, 0.5) == ["j"]     # a whole lease without progress


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
    assert _passes(mgr, clock, 5.0) == []
    assert _passes(mgr, clock, 0.5) == ["j"]
    assert any("cannot read its progress" in line for line in logs)


def _passes(mgr, clock, seconds, step=0.5, advance=None):
    """Reaper passes every `step` s for `seconds` (the job advancing at each when `advance`);
    the names reclaimed."""
    reclaimed = []
    for _ in range(round(seconds / step)):
        clock.t += step
        if advance:
            advance()
        reclaimed += mgr.reap()
    return reclaimed


def test_a_controller_stall_is_not_the_jobs_silence():
    """The machine stalls: neither the controller nor the job runs for longer than the lease, so the
    first reading after the stall equals the one before it (the first ever gives no credit either).
    Time the controller could not look is nobody's silence: the job is kept while it advances, and
    reclaimed once the controller, looking on time, sees a whole lease without progress, stalls or not."""
    clock = FakeClock()
    mgr = JobManager(SlotPool(128), topology=TOPO, clock=clock)
    state = {"mark": 0}
    mgr.progress = lambda job: state["mark"]

    def advance():
        state["mark"] += 1

    _running(mgr)                                     # lease 5 s, heartbeats lost from here on
    assert _passes(mgr, clock, 1.5, advance=advance) == []   # not late yet: no reading
    clock.t += 6.0                                    # stalled before the first reading...
    assert mgr.reap() == []                           # ...which gives no credit: kept all the same
    assert _passes(mgr, clock, 10, advance=advance) == []    # the job advances: kept
    for _ in range(3):                                # stalls between passes that see it advance
        clock.t += 6.0
        assert mgr.reap() == []                       # the mark as before the stall: kept
        assert _passes(mgr, clock, 1.0, advance=advance) == []
    assert _passes(mgr, clock, 4.5) == []             # it stops: 4.5 s watched, under the lease
    assert _passes(mgr, clock, 1.0) == ["j"]          # a whole lease watched without progress
    assert "lease expired" in mgr.ended["j"][0]


def test_a_dead_job_is_reclaimed_through_repeated_stalls():
    """Stalls only pause the count: a job without heartbeat or progress is reclaimed once the
    controller's on-time looking adds up to its lease (here 0.5 s + 1 s of each 0.5 s + 6 s cycle)."""
    clock = FakeClock()
    mgr = JobManager(SlotPool(128), topology=TOPO, clock=clock)
    mgr.progress = lambda job: 0                      # the switch shows it stopped
    _running(mgr)
    mgr.reap()
    cycles = 0
    while "j" in mgr.jobs:
        cycles += 1
        assert cycles < 10, "a dead job kept forever by a stalling controller"
        clock.t += 0.5
        mgr.reap()
        clock.t += 6.0
        mgr.reap()
    assert cycles == 4                                # 1.5 s watched a cycle: over 5 s in the 4th
    assert "lease expired" in mgr.ended["j"][0]
