"""Faults: a hostile host changes nothing; a killed worker makes the others fail cleanly and in
bounded time, and the controller reclaims the job's slots."""
import json
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from p4reduce.mininet_topos.hostproc import follow, read_available
from p4reduce.protocol import constants as C
from p4reduce.protocol.job_api import JobApiClient, JobApiError

from .workers import assert_exact, by_index, run_job

pytestmark = pytest.mark.root
HOSTILE = pathlib.Path(__file__).with_name("hostile.py")


def wait_running(api, job, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = JobApiClient(api).job(job)
            if state["state"] == "running":
                return state
        except JobApiError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"job {job} never ran")


GARBAGE_AND_SPOOFED_CONTRIBUTIONS = [0, 1, 2, 4, 5, 6, 7]   # frame kinds of hostile.py
FORGED_RESULTS = [3]


ATTACKED_ELEMENTS = 131072


def run_attacked_job(session, tmp_path, kinds):
    """A dense job on h1..h4 while h5 sends the given kinds of hostile frames for its whole duration."""
    *workers, attacker = by_index(session.network.hosts)
    # long enough for the attacker to send its frames throughout, even on a fast switch (the
    # native data plane finishes a few tensors before scapy has built 100 forged results)
    runs = run_job(session, workers, "e2e-hostile", "dense", elements=ATTACKED_ELEMENTS, tensors=24, start_only=True)
    job = wait_running(session.api_addr, "e2e-hostile")
    topo = json.loads(session.description_path.read_text())
    assert topo["hosts"][4]["name"] == attacker.name
    cfg = {"intf": attacker.defaultIntf().name, "seconds": 60, "job_id": job["job_id"], "kinds": kinds,
           "stop_file": str(tmp_path / "stop-attack"), "slots": job["slots"]["count"], "blocks": ATTACKED_ELEMENTS // C.LANES,
           "own_ip": attacker.IP(), "own_mac": attacker.MAC(),
           "service_ip": job["switch"]["ip"], "service_mac": job["switch"]["mac"],
           "udp_port": job["switch"]["udp_port"],
           "victims": [{"ip": m["ip"], "mac": m["mac"], "udp_port": m["udp_port"], "rank": m["rank"]}
                       for m in job["members"]]}
    hostile = attacker.popen([sys.executable, str(HOSTILE), json.dumps(cfg)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    follow(runs, timeout=120)                       # attacked for the whole job
    (tmp_path / "stop-attack").touch()
    out, err = hostile.communicate(timeout=60)
    assert hostile.returncode == 0, err.decode()
    assert json.loads(out)["sent"] > 100
    return workers, runs


def test_hostile_host_changes_nothing(session_factory, tmp_path):
    """Garbage, malformed frames and contributions spoofing a worker's MAC/IP/port from another port."""
    session = session_factory(workers=5)
    workers, runs = run_attacked_job(session, tmp_path, GARBAGE_AND_SPOOFED_CONTRIBUTIONS)
    assert_exact(runs)
    # And the switch still serves a fresh job correctly afterwards.
    assert_exact(run_job(session, workers, "e2e-after-attack", "sparse", elements=4096, density=0.2))


def test_forged_results_from_a_host_change_nothing(session_factory, tmp_path):
    session = session_factory(workers=5)
    _, runs = run_attacked_job(session, tmp_path, FORGED_RESULTS)
    assert_exact(runs)


def test_killed_worker_fails_the_others_in_bounded_time_and_slots_are_reclaimed(session_factory):
    lease = 3.0
    session = session_factory(workers=4, controller_args=["--lease", str(lease)])
    health0 = JobApiClient(session.api_addr).health()
    runs = run_job(session, session.network.hosts, "e2e-killed", "dense", elements=65536, tensors=200,
                   start_only=True)
    wait_running(session.api_addr, "e2e-killed")
    assert JobApiClient(session.api_addr).health()["slots"]["free"] < health0["slots"]["free"]
    victim = runs[-1]
    # Let every worker finish at least one tensor, then kill one (by PID, SIGKILL: no goodbye).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(
            any("tensor" in e.get("message", "") for e in r.events) for r in runs):
        read_available(runs, 0.5)
    victim.proc.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    survivors = runs[:-1]
    follow(runs, timeout=lease * 4 + 30)
    elapsed = time.monotonic() - killed_at
    for r in survivors:
        assert r.result is None and r.error, (r.host, r.events[-3:])
        assert "rank" in r.error and ("no result" in r.error or "ended" in r.error), r.error
    assert elapsed < lease * 4 + 20, elapsed
    # The controller reclaims the job: all its slots are free again and the job is gone.
    deadline = time.monotonic() + lease * 3 + 10
    while time.monotonic() < deadline:
        if JobApiClient(session.api_addr).health()["slots"]["free"] == health0["slots"]["free"]:
            break
        time.sleep(0.2)
    assert JobApiClient(session.api_addr).health()["slots"]["free"] == health0["slots"]["free"]
    with pytest.raises(JobApiError, match="HTTP (404|409)"):
        JobApiClient(session.api_addr).job("e2e-killed")

