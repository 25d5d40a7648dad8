"""A worker process that stopped can be replaced (issue #26, point 4): a new process on the same
host takes its rank once the old one has missed three heartbeats (a third of the lease), so a
restarted worker (torchelastic, a supervisor) re-joins the job instead of waiting for it to end.
Never from another host, never while the old process is alive."""
import pytest

from p4reduce.controller.errors import Conflict
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.slots import SlotPool
from tests.controller.test_ctl_job_api import TOPO, FakeClock


def _running(clock, logs):
    mgr = JobManager(SlotPool(128), topology=TOPO, clock=clock, log=logs.append)
    mgr.create("j", 2, lease_s=6.0)
    mgr.join("j", ip="127.0.0.1", udp_port=4000)
    mgr.join("j", ip="10.0.0.2", udp_port=4001)
    assert mgr.jobs["j"].state == "running"
    return mgr


def test_a_new_process_on_the_same_host_takes_a_silent_rank():
    clock, logs = FakeClock(), []
    mgr = _running(clock, logs)
    clock.t += 1.0
    mgr.heartbeat("j", 0)                       # rank 0 alive; rank 1's process stopped at t=0
    with pytest.raises(Conflict) as e:           # too soon: rank 1 may only be slow
        mgr.join("j", ip="10.0.0.2", udp_port=5001, rank=1)
    assert e.value.code == "rank_taken" and "once it is silent for 2 s" in e.value.message
    clock.t += 1.5                               # 2.5 s silent: three heartbeats missed
    mgr.heartbeat("j", 0)
    rank, job, _ = mgr.join("j", ip="10.0.0.2", udp_port=5001, rank=1)
    assert rank == 1 and job["state"] == "running"
    assert (mgr.jobs["j"].members[1].ip, mgr.jobs["j"].members[1].udp_port) == ("10.0.0.2", 5001)
    assert any("rank 1 taken over from 10.0.0.2:5001" in line and "silent for 2.5 s" in line for line in logs)
    assert mgr.reap() == []                      # the new process counts as alive
    mgr.heartbeat("j", 1)


def test_no_takeover_from_another_host_or_of_a_live_rank():
    clock, logs = FakeClock(), []
    mgr = _running(clock, logs)
    clock.t += 3.0
    mgr.heartbeat("j", 0)
    with pytest.raises(Conflict) as e:           # rank 1 silent, but the caller is another host
        mgr.join("j", ip="127.0.0.1", udp_port=5002, rank=1)
    assert e.value.code == "rank_taken" and "once it is silent" not in e.value.message
    with pytest.raises(Conflict):                # rank 0 is alive: its host cannot replace it
        mgr.join("j", ip="127.0.0.1", udp_port=5003, rank=0)
    assert (mgr.jobs["j"].members[1].udp_port, mgr.jobs["j"].members[0].udp_port) == (4001, 4000)
