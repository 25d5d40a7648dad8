"""`make run` supervises what it started (mininet_topos/supervisor.py): a switch target or the
controller killed with SIGKILL is started again, said once, its new PID recorded, and the
controller restores what the switch lost (pipeline, forwarding, jobs) or resumes its jobs."""
import json
import os
import signal
import time

import pytest

from p4reduce.protocol.job_api import JobApiClient, JobApiError

from .workers import assert_exact, by_index, run_job

pytestmark = pytest.mark.root
RESTARTED_WITHIN_S = 10.0       # backoff 0.5 s + a poll; generous for a loaded machine


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} within {timeout:g} s")


def restarted(session, said, name, old_pid):
    """The supervisor's line for `name` (pid old_pid) killed by SIGKILL, and the new pid."""
    line = wait_for(lambda: next((s for s in said if f"{name} (pid {old_pid}) exited (SIGKILL)" in s), None),
                    RESTARTED_WITHIN_S, f"{name} (pid {old_pid}) was not restarted (said: {said})")
    assert "restarted as pid " in line and "(restart 1 of 5 within 60 s)" in line, line
    assert sum(f"(pid {old_pid})" in s for s in said) == 1, said      # said once
    return int(line.split("restarted as pid ")[1].split()[0])


def _read_json(path, timeout=5.0):
    """The file's JSON once whole: the supervisor rewrites it right after a restart (not atomically)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def recorded_pids(session):
    state = _read_json(session.run_dir / "state.json")
    topo = _read_json(session.description_path)
    return ({p["role"]: p["pid"] for p in state["processes"]},
            {s["name"]: s["pid"] for s in topo["switches"]})


def pings(a, b):
    return " 0% packet loss" in a.cmd(f"ping -c1 -W1 {b.IP()}")


def test_a_killed_switch_is_restarted_and_forwards_and_aggregates_again(session_factory):
    said = []
    session = session_factory(workers=2, supervise=True, say=said.append)
    h1, h2 = by_index(session.network.hosts)
    switch = session.network.switches[0]
    assert pings(h1, h2)
    old = switch.target_pid
    os.kill(old, signal.SIGKILL)
    new = restarted(session, said, switch.name, old)
    assert switch.target_pid == new and new != old
    roles, topo_pids = recorded_pids(session)
    assert roles[f"switch {switch.name}"] == new and topo_pids[switch.name] == new
    # the controller's watchdog pushes the pipeline to the new (empty) target, then forwarding
    wait_for(lambda: pings(h1, h2), 60, "no ping between h1 and h2 after the switch's restart")
    assert_exact(run_job(session, [h1, h2], "after-switch-restart", "dense", elements=4096, tensors=2))
    assert len(said) == 1, said


def test_a_killed_controller_is_restarted_and_resumes_its_jobs(session_factory):
    said = []
    session = session_factory(workers=2, supervise=True, say=said.append)
    hosts = by_index(session.network.hosts)
    session.create_job("before-kill", 2, "dense", slots=8, hosts=hosts)
    old = session.controller.pid
    os.kill(old, signal.SIGKILL)
    new = restarted(session, said, "controller", old)
    assert session.controller.pid == new
    roles, _ = recorded_pids(session)
    assert roles["controller"] == new

    def jobs():
        try:
            return [j["name"] for j in JobApiClient(session.api_addr).jobs()]
        except JobApiError:
            return None
    names = wait_for(jobs, 60, "the restarted controller's job API did not answer")
    assert "before-kill" in names, names
    # the job resumed from the switch runs: its workers join (credential kept) and sum exactly
    assert_exact(run_job(session, hosts, "before-kill", "dense", elements=4096, tensors=2, create=False))
    assert len(said) == 1, said
