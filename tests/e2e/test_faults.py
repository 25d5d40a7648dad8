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
from p4reduce.protocol import p4names
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
FORGED_AS_SWITCH = 3                                        # a RESULT from the switch's address
FORGED_RESULTS = [FORGED_AS_SWITCH, 8]                      # ... and one from the attacker's own


ATTACKED_ELEMENTS = 131072


def run_attacked_job(session, tmp_path, kinds):
    """A dense job on h1..h4 while h5 sends the given kinds of hostile frames for its whole duration."""
    *workers, attacker = by_index(session.network.hosts)
    # long enough for the attacker to send its frames throughout, even on a fast switch (the
    # native data plane finishes a few tensors before scapy has built 100 forged results); and h1's
    # worker is held at its first allreduce until the attacker sends, so that on a loaded machine
    # (scapy slow to start) the job cannot finish before the attack begins
    release = tmp_path / "release-h1"
    runs = run_job(session, workers, "e2e-hostile", "dense", elements=ATTACKED_ELEMENTS, tensors=24, start_only=True,
                   held=(workers[0], release))
    job = wait_running(session.api_addr, "e2e-hostile")
    topo = json.loads(session.description_path.read_text())
    assert topo["hosts"][4]["name"] == attacker.name
    cfg = {"intf": attacker.defaultIntf().name, "seconds": 60, "job_id": job["job_id"], "kinds": kinds,
           "stop_file": str(tmp_path / "stop-attack"), "started_file": str(tmp_path / "attack-started"),
           "slots": job["slots"]["count"], "blocks": ATTACKED_ELEMENTS // C.LANES,
           "own_ip": attacker.IP(), "own_mac": attacker.MAC(),
           "service_ip": job["switch"]["ip"], "service_mac": job["switch"]["mac"],
           "udp_port": job["switch"]["udp_port"],
           "victims": [{"ip": m["ip"], "mac": m["mac"], "udp_port": m["udp_port"], "rank": m["rank"]}
                       for m in job["members"]]}
    hostile = attacker.popen([sys.executable, str(HOSTILE), json.dumps(cfg)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (tmp_path / "attack-started").exists() and hostile.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    release.touch()
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


def drop_reasons(session):
    """The aggregating switch's drop counters by reason, read over P4Runtime by the controller CLI."""
    out = subprocess.run([sys.executable, "-m", "p4reduce.controller", "counters", "--topology",
                          str(session.description_path), "--json", p4names.DROP_REASONS],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    [counter] = json.loads(out.stdout)
    return {cell["label"]: cell["packets"] for cell in counter["cells"]}


def test_forged_results_from_a_host_change_nothing(session_factory, tmp_path):
    """A non-member host sends forged results, as from the switch's address and from its own, with
    the job's real wire token and with a wrong one, while the job is known to be running: one
    worker is held at its first allreduce (a barrier this test releases), so the others' first
    rounds are open and cannot complete until the attack is over. The source guard drops every
    result sent as from the switch (counted), the workers' sockets ignore the others, and every
    worker's sums are bit-exact."""
    session = session_factory(workers=5, controller_args=["--lease", "60"])   # the hold outlasts no lease
    *workers, attacker = by_index(session.network.hosts)
    release = tmp_path / "release"
    runs = run_job(session, workers, "e2e-forged", "dense", elements=16 * C.LANES, tensors=2,
                   start_only=True, held=(workers[-1], release))
    held_run = runs[-1]
    deadline = time.monotonic() + 60
    while not any(e.get("message") == "held" for e in held_run.events):
        assert time.monotonic() < deadline and held_run.proc.poll() is None, held_run.events
        read_available(runs, 0.5)
    admin = JobApiClient(session.api_addr, credential=session.admin_credential())
    job = admin.job("e2e-forged")
    assert job["state"] == "running" and job["wire_token"] != 0
    assert "wire_token" not in JobApiClient(session.api_addr).job("e2e-forged")   # not for strangers
    topo = json.loads(session.description_path.read_text())
    assert topo["hosts"][4]["name"] == attacker.name
    before = drop_reasons(session)
    cfg = {"intf": attacker.defaultIntf().name, "seconds": 60, "count": 120, "kinds": FORGED_RESULTS,
           "job_id": job["job_id"], "wire_tokens": [0, job["wire_token"]], "slots": job["slots"]["count"],
           "blocks": 16, "own_ip": attacker.IP(), "own_mac": attacker.MAC(),
           "service_ip": job["switch"]["ip"], "service_mac": job["switch"]["mac"],
           "udp_port": job["switch"]["udp_port"],
           "victims": [{"ip": m["ip"], "mac": m["mac"], "udp_port": m["udp_port"], "rank": m["rank"]}
                       for m in job["members"]]}
    hostile = attacker.popen([sys.executable, str(HOSTILE), json.dumps(cfg)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    out, err = hostile.communicate(timeout=120)
    assert hostile.returncode == 0, err.decode()
    sent = json.loads(out)
    assert sent["sent"] >= 120
    # every result sent as from the switch met the source guard; nothing had completed meanwhile
    after = drop_reasons(session)
    assert after["SPOOFED_SOURCE"] - before["SPOOFED_SOURCE"] == sent["by_kind"][str(FORGED_AS_SWITCH)]
    assert all(r.result is None and r.error is None for r in runs), [r.events[-2:] for r in runs]
    release.touch()
    follow(runs, timeout=120)
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

