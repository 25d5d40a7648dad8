"""A job on the host fallback as the controller sees it (issue #26): ranks say where their calls
run in their heartbeats; the job shows degraded; the controller re-arms it on the switch (new
wire token, slots reset, generation + 1) only when every rank is on the fallback, for a second,
while the switch serves; /v1/health is not ok while the controller is not primary everywhere."""
import threading

import pytest
from test_ctl_job_api import TOPO, FakeClock

from p4reduce.controller.api_server import JobApi, JobApiServer
from p4reduce.controller.jobs import REARM_QUIET_S, JobManager
from p4reduce.controller.report import jobs_text
from p4reduce.controller.slots import SlotPool
from p4reduce.protocol.job_api import JobApiClient, JobApiError


class Programmer:
    """Records what the re-arm writes to the switch."""

    def __init__(self):
        self.writes = []

    def restore_job(self, job):
        self.writes.append(("restore", job.name, job.wire_token))

    def reset_slots(self, spec):
        self.writes.append(("reset", spec.job_id, spec.wire_token))

    def reinstall_job(self, job):
        self.writes.append(("reinstall", job.name, job.slots.count))

    def rearm_job(self, job):         # as controller.network.JobNetwork: restore, then reset
        self.restore_job(job)
        self.reset_slots(job.spec)

    def __getattr__(self, name):
        return lambda *a, **k: None


class Connection:
    def __init__(self, name, primary=True):
        self.name, self.grpc_addr, self.primary = name, f"127.0.0.1:{9559 + len(name)}", primary
        self.lost = threading.Event()


@pytest.fixture
def served():
    clock = FakeClock()
    mgr = JobManager(SlotPool(128), programmer=Programmer(), topology=TOPO, default_workers=2,
                     default_lease_s=5.0, join_timeout_s=30.0, clock=clock)
    conns = [Connection("s1")]
    server = JobApiServer(JobApi(mgr, conns), ("127.0.0.1", 0)).start()
    client = JobApiClient(server.address)
    client.create("j", 2)
    client.join("j", ip="127.0.0.1", udp_port=5000)
    client.join("j", ip="10.0.0.2", udp_port=5000)
    yield client, mgr, clock, conns
    server.stop()


def test_a_rank_on_the_fallback_makes_the_job_degraded_with_its_reason(served):
    client, mgr, _, _ = served
    beat = client.heartbeat("j", 0)
    assert beat["generation"] == 0 and beat["switch_serving"] is True
    assert client.job("j")["path"] == "switch" and "degraded" not in jobs_text(client.jobs())
    client.heartbeat("j", 1, "fallback", "the switch stopped answering in call 7", 0)
    job = client.job("j")
    assert job["path"] == "fallback" and "rank 1 on the host fallback" in job["path_reason"]
    assert "call 7" in job["path_reason"] and [m["path"] for m in job["members"]] == ["switch", "fallback"]
    text = jobs_text(client.jobs())
    assert " degraded " in text and "j: rank 1 on the host fallback (the switch stopped answering in call 7)" in text
    client.heartbeat("j", 1, "switch", None, 0)
    assert client.job("j")["path"] == "switch"


@pytest.mark.parametrize("body,field", [
    ({"rank": 0, "path": "ring"}, "path"),
    ({"rank": 0, "path": "fallback", "reason": "x" * 501}, "reason"),
    ({"rank": 0, "path": "fallback", "reason": 7}, "reason"),
    ({"rank": 0, "path": "fallback", "generation": "0"}, "generation"),
    ({"rank": 0, "path": "fallback", "generation": -1}, "generation"),
    ({"rank": 0, "paths": "fallback"}, "paths"),
])
def test_a_bad_heartbeat_is_a_400_naming_the_field(served, body, field):
    client, mgr, _, _ = served
    with pytest.raises(JobApiError) as e:
        client.request("POST", "/jobs/j/heartbeat", body, client.credential_for("j"))
    assert e.value.status == 400 and e.value.field == field, (e.value.status, e.value.field, e.value.message)
    assert all(m.path == "switch" for m in mgr.jobs["j"].members.values())     # nothing half-applied


def test_re_armed_only_with_every_rank_on_the_fallback_for_a_second_while_the_switch_serves(served):
    client, mgr, clock, _ = served
    job = mgr.jobs["j"]
    token = job.wire_token
    client.heartbeat("j", 0, "fallback", "stuck", 0)
    clock.t += 5
    assert mgr.rearm() == []                                # rank 1 still on the switch
    client.heartbeat("j", 1, "fallback", "stuck", 0)
    clock.t += REARM_QUIET_S / 2
    assert mgr.rearm() == []                                # a late datagram may still be queued
    mgr.switch_lost("switch s1 unreachable")
    clock.t += REARM_QUIET_S
    assert mgr.rearm() == [] and client.heartbeat("j", 0, "fallback", "stuck", 0)["switch_serving"] is False
    assert client.job("j")["path_reason"] == "switch s1 unreachable"
    mgr.switch_restored()
    assert mgr.rearm() == ["j"]
    assert job.generation == 1 and job.wire_token != token
    assert mgr.programmer.writes == [("restore", "j", job.wire_token), ("reset", job.job_id, job.wire_token)]
    assert mgr.rearm() == []                                # once per generation
    beat = client.heartbeat("j", 0, "fallback", "stuck", 0)
    assert beat["generation"] == 1 and client.job("j")["wire_token"] == job.wire_token


def test_health_is_not_ok_while_the_controller_is_not_primary_everywhere(served):
    client, mgr, _, conns = served
    assert client.health()["ok"] is True and "problems" not in client.health()
    conns[0].primary = False
    h = client.health()
    assert h["ok"] is False and h["switches"][0]["primary"] is False
    assert h["problems"] == [f"switch s1 ({conns[0].grpc_addr}): this controller is not its primary"]
    conns[0].primary = True
    conns[0].lost.set()
    assert client.health()["problems"] == [f"switch s1 ({conns[0].grpc_addr}): connection lost"]
    conns[0].lost.clear()
    client.heartbeat("j", 0, "fallback", "stuck", 0)
    assert client.health()["ok"] is True and client.health()["degraded_jobs"] == 1


def test_admission_gives_fewer_slots_or_none_instead_of_refusing(served):
    """Slots are a wish: a job asking more than is free gets what is free (a smaller window); with
    none free it is created off the switch, saying why, and gets slots once some are freed."""
    client, mgr, clock, _ = served            # job "j" holds the default 64 of 128
    client.create("big", 2, slots=100)        # 64 free: it gets them
    big = client.job("big")
    assert big["slots"]["count"] == 64 and big["path"] == "switch"
    assert client.create("big", 2, slots=100)["slots"]["count"] == 64      # the same job again: idempotent
    with pytest.raises(JobApiError) as e:
        client.create("big", 2, slots=32)
    assert e.value.code == "job_exists" and "slots=100" in e.value.message
    off = client.create("off", 2, slots=8)    # nothing free
    assert off["slots"]["count"] == 0 and off["path"] == "fallback"
    assert "no free slots on the switch (all 128 held by other jobs)" in off["path_reason"]
    assert mgr.programmer.writes == []        # nothing of it written to the switch
    with pytest.raises(JobApiError) as e:
        client.create("huge", 2, slots=129)   # more than the switch has: never satisfiable
    assert e.value.status == 400 and e.value.field == "slots", e.value.message
    mgr.rearm()
    assert client.job("off")["slots"]["count"] == 0
    client.end("big")
    mgr.rearm()
    job = client.job("off")
    assert job["slots"]["count"] == 8 and mgr.jobs["off"].on_switch
    assert [w[0] for w in mgr.programmer.writes] == ["reinstall"]
