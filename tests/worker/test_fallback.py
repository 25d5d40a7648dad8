"""The host fallback (worker/fallback.py, Agent): when the switch stops answering mid-run, every
worker moves to gloo, they agree on the call to redo, and every call's result is still exact;
a worker that died is named; without torch a worker says so once at join.

Agents run in threads against the real job API (bookkeeping mode) and the switch stand-in over
UDP on loopback; stopping the stand-in is the switch dying."""
import os
import subprocess
import sys
import threading
import time

import needs
import numpy as np
import pytest

needs.module("torch")

from test_agent import _create, _program_when_running  # noqa: E402 - after the torch check
from testbed.fakeswitch import FakeSwitch  # noqa: E402 - after the torch check

from p4reduce.mininet_topos.ports import free_port  # noqa: E402 - after the torch check
from p4reduce.worker.agent import Agent  # noqa: E402 - after the torch check
from p4reduce.worker.reducer import AggregationError  # noqa: E402 - after the torch check
from p4reduce.worker.streaming import RetryPolicy  # noqa: E402 - after the torch check

N = 3


def tensor(rank, call, size=5000, dtype=np.int32):
    rng = np.random.default_rng([rank, call])
    if dtype == np.int32:
        return rng.integers(-2**20, 2**20, size, dtype=np.int32)
    return rng.standard_normal(size).astype(np.float32)


def exact(call, size=5000, dtype=np.int32):
    return np.sum([tensor(r, call, size, dtype).astype(np.float64 if dtype != np.int32 else np.int64)
                   for r in range(N)], axis=0)


def _run(controller, job, body, n=N, **agent_kw):
    addr, _ = controller
    credential = _create(addr, job, n)
    port = free_port()
    results, errors = {}, {}
    with FakeSwitch() as sw:
        def run():
            try:
                with Agent(addr, job, switch_addr=sw.addr, bind_ip="127.0.0.1", credential=credential,
                           fallback_port=port, retry=RetryPolicy(timeout=0.02, deadline=1.0), **agent_kw) as ag:
                    results[ag.rank] = body(ag, sw)
            except Exception as e:
                errors[threading.current_thread().name] = e
        threads = [threading.Thread(target=run, name=f"w{i}") for i in range(n)]
        for t in threads:
            t.start()
        _program_when_running(controller, job, sw)
        for t in threads:
            t.join(120)
    return results, errors


def test_the_switch_dies_mid_run_and_every_call_is_still_exact(controller):
    calls, killed = 8, threading.Event()

    def body(ag, sw):
        got, paths = [], []
        for c in range(calls):
            if c == 3 and ag.rank == 0 and not killed.is_set():
                killed.set()
                sw.stop()                       # the switch dies between rank 0's calls 2 and 3
            out = np.empty(5000, np.int32)
            got.append(ag.allreduce(tensor(ag.rank, c), out=out).copy())
            paths.append(ag.path)
        mean = ag.allreduce(tensor(ag.rank, 99, dtype=np.float32), average=True)
        return got, paths, mean, dict(ag.calls_by_path), ag.path_reason

    t0 = time.monotonic()
    results, errors = _run(controller, "fb-kill", body)
    assert not errors, errors
    assert sorted(results) == list(range(N))
    for _rank, (got, paths, mean, by_path, reason) in results.items():
        for c in range(calls):
            assert np.array_equal(got[c].astype(np.int64), exact(c)), f"call {c}"
        assert paths[-1] == "fallback" and by_path["switch"] >= 2 and by_path["fallback"] >= calls - 3
        assert by_path["switch"] + by_path["fallback"] == calls + 1
        assert "the switch stopped answering in call" in reason
        assert np.abs(mean - exact(99, dtype=np.float32) / N).max() < 1e-5
    assert time.monotonic() - t0 < 60


def test_a_worker_that_died_is_named_by_its_peers(controller):
    def body(ag, sw):
        ag.allreduce(tensor(ag.rank, 0))           # one call on the switch, all ranks
        if ag.rank == 2:
            ag.fallback.close()
            ag.fallback = None                     # this rank "dies": it never reaches the fallback
            ag.path = "dead"
            return "dead"
        try:
            ag.allreduce(tensor(ag.rank, 1))
        except AggregationError as e:
            return str(e)
        return "no error"

    t0 = time.monotonic()
    results, errors = _run(controller, "fb-dead", body, fallback_agree_timeout_s=3.0)
    assert not errors, errors
    for r in (0, 1):
        assert "rank 2 did not reach the host fallback" in results[r], results[r]
    assert any("rank 2 did not reach the host fallback within 3 s" in results[r] for r in (0, 1))   # rank 0, at least
    assert time.monotonic() - t0 < 60


def test_a_late_peer_is_waited_for_not_taken_for_a_stopped_one(controller):
    """Rank 0 spends 6 s between two calls (an evaluation, a checkpoint) while its peers are in the
    next one: they take the stall for a dead switch and move to the fallback, where rank 0 (whose
    store is made only when it needs the fallback itself) is not there for 6 s, three times the
    agreement's limit. The controller says rank 0 is alive, so they wait: every call exact."""
    calls = 4

    def body(ag, sw):
        got = []
        for c in range(calls):
            if c == 1 and ag.rank == 0:
                time.sleep(6.0)
            got.append(ag.allreduce(tensor(ag.rank, c)).copy())
        return got, dict(ag.calls_by_path), [dict(e) for e in ag.episodes]

    results, errors = _run(controller, "fb-late", body, fallback_agree_timeout_s=2.0)
    assert not errors, errors
    assert sorted(results) == list(range(N))
    for rank, (got, by_path, _episodes) in results.items():
        for c in range(calls):
            assert np.array_equal(got[c].astype(np.int64), exact(c)), f"rank {rank} call {c}"
        assert by_path["switch"] + by_path["fallback"] == calls
    for rank in (1, 2):           # they left the switch in call 1, while rank 0 was away
        assert results[rank][2][0]["from_call"] == 1, results[rank][2]


def test_an_absent_rank_0_is_named_at_the_agreement_limit_or_after_the_peer_wait_while_alive():
    from p4reduce.worker.fallback import FallbackError, HostFallback
    port = free_port()          # nobody listens: rank 0 never made its store
    asked = []
    for alive, peer_wait, low, high in ((lambda ranks: False, 1800.0, 1.5, 5.0),    # stopped: at the limit
                                        (lambda ranks: asked.append(ranks) or True, 4.0, 4.0, 9.0)):  # alive
        fb = HostFallback(7, 1, 2, {0: "127.0.0.1", 1: "127.0.0.1"}, port=port, agree_timeout_s=1.5,
                          alive=alive, peer_wait_s=peer_wait)
        t0 = time.monotonic()
        with pytest.raises(FallbackError, match="rank 0's fallback store at 127.0.0.1:.* cannot be reached"):
            fb.agree(0)
        assert low <= time.monotonic() - t0 < high
    assert asked and all(r == [0] for r in asked)


def test_a_bad_peer_wait_is_refused(controller):
    addr, _ = controller
    for bad in (-1, float("nan"), 1e9, "60", True):
        with pytest.raises(ValueError, match="fallback_peer_wait_s"):
            Agent(addr, "nope", fallback_peer_wait_s=bad)


def test_without_torch_a_worker_says_so_once_at_join(tmp_path):
    code = ("import sys, logging\nlogging.basicConfig(format='%(message)s')\n"
            "sys.modules['torch'] = None\n"
            "from p4reduce.worker import fallback\nprint(fallback.torch_missing())\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ))
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("torch is not installed") and "p4reduce[torch]" in res.stdout


def test_a_store_left_by_an_earlier_job_with_the_same_id_is_not_read_as_this_ones():
    """Job ids restart with the controller: a store still holding an earlier job 1's agreement
    (its ranks said "call 7") must not decide where this job 1 redoes. The store here is the
    earlier job's, still up; this job's ranks, told their own instance, agree on their own calls."""
    import datetime

    import torch.distributed as dist

    from p4reduce.worker.fallback import HostFallback
    port = free_port()
    left = dist.TCPStore("127.0.0.1", port, 3, is_master=True, timeout=datetime.timedelta(seconds=5),
                         wait_for_workers=False)
    old = [HostFallback(1, r, 2, {0: "127.0.0.1", 1: "127.0.0.1"}, port=port, agree_timeout_s=5,
                        instance="1700000000.5") for r in range(2)]
    for f in old:
        f._store = dist.TCPStore("127.0.0.1", port, 3, is_master=False, timeout=datetime.timedelta(seconds=5))
        f._store.set(f"{f.prefix}/at/0/{f.rank}", '{"call": 7}')
    new = [HostFallback(1, r, 2, {0: "127.0.0.1", 1: "127.0.0.1"}, port=port, agree_timeout_s=5,
                        instance="1800000000.25") for r in range(2)]
    for f in new:
        f._store = dist.TCPStore("127.0.0.1", port, 3, is_master=False, timeout=datetime.timedelta(seconds=5))
    got = {}
    threads = [threading.Thread(target=lambda f=f, c=c: got.__setitem__(f.rank, f.agree(c)))
               for f, c in zip(new, (3, 4), strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert got == {0: 3, 1: 3}
    # keys without this job's instance (here: the earlier one's) read the earlier job's calls
    from p4reduce.worker.fallback import FallbackError
    same = HostFallback(1, 0, 2, {0: "127.0.0.1", 1: "127.0.0.1"}, port=port, agree_timeout_s=5,
                        instance="1700000000.5")
    same._store = new[0]._store
    with pytest.raises(FallbackError, match="more than one call apart"):
        same.agree(3)
    del left


class _SlotResetter:
    """What the controller's JobProgrammer does for a real switch when it re-arms a job, done to
    the stand-in: its entries stay, its slots are cleared."""

    def __init__(self, sw):
        self.sw, self.resets = sw, 0
        self.late_after_reset = False
        self.installs = 0

    def restore_job(self, job):       # the entry as the controller holds it: its new wire token
        mine = self.sw.model.jobs[job.job_id]      # the stand-in numbers the job's slots from its own base
        self.sw.add_job(job.job_id, job.workers, job.slots.count, slot_base=mine.slot_base,
                        wire_token=job.wire_token)

    def reinstall_job(self, job):     # slots given to a job admitted without: its entry and members
        self.sw.add_job(job.job_id, job.workers, job.slots.count, wire_token=job.wire_token)
        for m in job.members.values():
            self.sw.add_worker(job.job_id, m.rank, m.ip, m.udp_port)
        self.installs += 1

    def rearm_job(self, job):         # as controller.network.JobNetwork: restore, then reset
        self.restore_job(job)
        self.reset_slots(job.spec)

    def reset_slots(self, spec):
        mine = self.sw.model.jobs[spec.job_id]
        self.sw.model.clear_slots(mine.slot_base, mine.slot_count)
        self.resets += 1
        self.late_after_reset = self.sw.release_late()   # a datagram queued since the freeze arrives now

    def __getattr__(self, name):          # every other write: the stand-in needs none
        return lambda *a, **k: None


def test_the_job_returns_to_the_switch_once_it_answers_again(controller):
    """The switch freezes for 2.5 s (and loses what queued) in call 3 of 44: every rank moves to
    the host fallback and says so; the controller shows the job degraded, then, every rank on the
    fallback and the switch serving, resets the job's slots (generation 1); the ranks return to the
    switch after the same call. The same again from call 24 (generation 2). Every call, on either
    path, is exact: the re-armed job's new wire token keeps the stale datagram out."""
    from p4reduce.controller.leases import LeaseReaper
    _, mgr = controller
    calls = 44
    seen_degraded = []
    resetter: list[_SlotResetter] = []

    def body(ag, sw):
        if ag.rank == 0:
            resetter.append(_SlotResetter(sw))
            mgr.programmer = resetter[0]
        got, paths = [], []
        for c in range(calls):
            if ag.rank == 0 and (c == 3 or (c == 24 and ag.path == "switch")):
                # twice: the second failure agrees afresh. The second time, the packet the switch
                # froze on arrives only once the controller has re-armed the job: a stale datagram,
                # for the slot and version the return starts with
                sw.stall = (sw.received + 1, 2.5) if c == 3 else (sw.received + 1, 2.5, 60.0)
            got.append(ag.allreduce(tensor(ag.rank, c)).copy())
            paths.append(ag.path)
            if ag.path == "fallback" and ag.rank == 0:
                seen_degraded.append(mgr.list()[0].get("path"))
            time.sleep(0.15)
        return got, paths, dict(ag.calls_by_path), ag.episodes

    logs: list[str] = []
    mgr.log = logs.append
    reaper = LeaseReaper(mgr).start()      # re-arms twice a second, as in the controller
    try:
        results, errors = _run(controller, "fb-back", body)
    finally:
        reaper.stop()
    assert not errors, errors
    for _rank, (got, paths, by_path, stays) in results.items():
        for c in range(calls):
            assert np.array_equal(got[c].astype(np.int64), exact(c)), f"call {c}"
        first_fb = paths.index("fallback")
        assert "switch" in paths[first_fb:], f"never back on the switch: {paths}"
        back = paths.index("switch", first_fb)
        assert 3 <= first_fb <= 4 and back < 24, paths
        episodes = [p for i, p in enumerate(paths) if i == 0 or p != paths[i - 1]]
        assert episodes == ["switch", "fallback", "switch", "fallback", "switch"], paths
        assert by_path["fallback"] >= 4 and by_path["switch"] >= 12, by_path
        assert [(e["from_call"], e["back_at_call"]) for e in stays] == \
            [(paths.index("fallback"), back + 1), (24, paths.index("switch", 25) + 1)]   # paths: after each call
        assert all("got no result from the switch" in e["reason"] for e in stays)
    assert [r[1] for r in results.values()].count(results[0][1]) == N     # the same path sequence on every rank
    assert "fallback" in seen_degraded
    assert resetter[0].resets == 2 and resetter[0].late_after_reset
    assert any("its slots reset, the workers return to the switch (generation 2)" in m for m in logs), logs


def test_a_job_admitted_without_slots_runs_on_the_fallback_then_moves_to_the_switch(controller):
    """Another job holds every slot: the job is created anyway, without slots and saying why; its
    ranks start on the host fallback (exact); when the other job ends, the controller gives it slots
    and re-arms it, and its ranks move to the switch together."""
    from p4reduce.controller.leases import LeaseReaper
    from p4reduce.protocol.job_api import JobApiClient
    addr, mgr = controller
    JobApiClient(addr).create("hog", 2, slots=mgr.pool.total)
    calls = 30
    views = []

    def body(ag, sw):
        got, paths = [], []
        for c in range(calls):
            if c == 4 and ag.rank == 0:
                views.append(mgr.status("late"))
                mgr.end("hog")
            got.append(ag.allreduce(tensor(ag.rank, c)).copy())
            paths.append(ag.path)
            time.sleep(0.15)
        return got, paths, ag.params.slot_count, sw.received

    logs: list[str] = []
    mgr.log = logs.append
    resetters = []
    real_run = _run

    def run_with_resetter():
        def body_wrapper(ag, sw):
            if ag.rank == 0 and not resetters:
                resetters.append(_SlotResetter(sw))
            return body(ag, sw)
        mgr.programmer = _LazyProgrammer(resetters)
        reaper = LeaseReaper(mgr).start()
        try:
            return real_run(controller, "late", body_wrapper)
        finally:
            reaper.stop()

    results, errors = run_with_resetter()
    assert not errors, errors
    assert views and views[0]["path"] == "fallback" and views[0]["slots"]["count"] == 0
    assert "no free slots on the switch" in views[0]["path_reason"]
    for _rank, (got, paths, slot_count, received) in results.items():
        for c in range(calls):
            assert np.array_equal(got[c].astype(np.int64), exact(c)), f"call {c}"
        assert paths[0] == "fallback" and paths[-1] == "switch", paths
        assert paths.count("switch") >= 6 and slot_count > 0 and received > 0, (paths, slot_count, received)
    assert [r[1] for r in results.values()].count(results[0][1]) == N
    assert any("freed up: on the switch once its ranks are re-armed" in m for m in logs), "\n".join(logs)
    assert resetters[0].installs == 1 and not any("lease reaper" in m for m in logs), "\n".join(logs)


class _LazyProgrammer:
    """The programmer stand-in of the fake switch the agents were given (known once they run)."""

    def __init__(self, resetters):
        self.resetters = resetters

    def __getattr__(self, name):
        if self.resetters:
            return getattr(self.resetters[0], name)
        return lambda *a, **k: None
