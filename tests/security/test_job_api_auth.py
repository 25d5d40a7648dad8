"""Who may change a job: creating one returns its credential; joining, heartbeats, leaving and ending
need it or the admin credential; a wrong credential, another job's credential or none changes nothing. A join can
neither take a live rank nor an address, MAC or switch port bound to another rank or job. The
admin credential comes from a private file or is generated; the API listens on loopback by default."""
import inspect
import os
import stat
import subprocess
import sys
import time

import pytest

from p4reduce.controller.api_server import JobApiServer
from p4reduce.controller.cli import build_parser
from p4reduce.controller.service import Controller
from p4reduce.mininet_topos.ports import free_port
from p4reduce.protocol.credentials import CredentialFileError, load_or_create_credential_file, read_credential_file
from p4reduce.protocol.job_api import JobApiClient, JobApiError

from .conftest import ADMIN, exchange, request


def refused(call, status, code):
    with pytest.raises(JobApiError) as e:
        call()
    assert (e.value.status, e.value.code) == (status, code), e.value
    return e.value


def test_create_returns_a_credential_that_is_never_shown_again(api):
    address, _ = api
    owner = JobApiClient(address)
    job = owner.create("j", 2)
    assert len(job["credential"]) >= 40 and owner.credentials["j"] == job["credential"]
    outsider = JobApiClient(address)
    for shown in (outsider.job("j"), outsider.jobs()[0], outsider.health()):
        assert job["credential"] not in repr(shown)
    # creating it again: only its owner gets the idempotent answer, and no credential comes back
    again = owner.create("j", 2)
    assert again["job_id"] == job["job_id"] and "credential" not in again
    refused(lambda: outsider.create("j", 2), 409, "job_exists")


@pytest.mark.parametrize("credential, status, code", [(None, 401, "credential_required"),
                                                      ("not-the-credential-0123456789", 403, "bad_credential")])
def test_without_the_credential_nothing_changes(api, credential, status, code):
    address, mgr = api
    owner = JobApiClient(address)
    owner.create("victim", 2, slots=8)
    owner.join("victim", ip="10.0.0.2")
    owner.create("other", 1)          # the attacker's own job: its credential opens nothing else
    before = owner.job("victim")
    before_seen = mgr.jobs["victim"].members[0].last_seen
    for attacker in (JobApiClient(address, credential=credential), JobApiClient(address, credential=owner.credentials["other"])):
        want = (status, code) if attacker.credential == credential else (403, "bad_credential")
        for call in (lambda a=attacker: a.join("victim", ip="10.0.0.3"),               # take the free rank
                     lambda a=attacker: a.join("victim", ip="10.0.0.2"),               # re-join as rank 0
                     lambda a=attacker: a.heartbeat("victim", 0),
                     lambda a=attacker: a.leave("victim", 0),
                     lambda a=attacker: a.end("victim")):
            refused(call, *want)
    after = owner.job("victim")
    binding = [(m["rank"], m["ip"], m["udp_port"], m["mac"], m["port"]) for m in before["members"]]
    assert [(m["rank"], m["ip"], m["udp_port"], m["mac"], m["port"]) for m in after["members"]] == binding
    assert after["state"] == "waiting" and after["joined"] == 1
    assert mgr.jobs["victim"].members[0].last_seen <= before_seen       # no heartbeat counted
    assert mgr.jobs["victim"].members[0].ip == "10.0.0.2"


def test_the_wire_token_goes_only_to_holders_of_the_job_credential(api):
    """The data plane's secret (docs/protocol.md section 10): in the creator's, the joiners' and the
    credential holders' answers; never in a list, an anonymous GET or one with another job's credential."""
    address, mgr = api
    owner = JobApiClient(address)
    job = owner.create("w", 2)
    other = JobApiClient(address).create("other", 1)
    wire = job["wire_token"]
    assert 0 < wire < 1 << 32 and wire == mgr.jobs["w"].wire_token != other["wire_token"]
    assert owner.job("w")["wire_token"] == wire
    assert JobApiClient(address, credential=ADMIN).job("w")["wire_token"] == wire
    assert JobApiClient(address, credential=job["credential"]).join("w", ip="10.0.0.2")["job"]["wire_token"] == wire
    for shown in (JobApiClient(address).job("w"), JobApiClient(address, credential=other["credential"]).job("w"),
                  *JobApiClient(address, credential=ADMIN).jobs()):
        assert "wire_token" not in shown
    # the switch gets it in the job's entry (controller/job_entries.py)
    assert mgr.jobs["w"].spec.wire_token == wire


def test_a_bad_authorization_header_is_a_401(api):
    address, _ = api
    JobApiClient(address).create("j", 1)
    for header in ("Basic dXNlcjpwYXNz", "Bearer", "credential xyz"):
        status, headers, obj = exchange(address, request("POST", "/v1/jobs/j/heartbeat", {"rank": 0},
                                                         extra=f"Authorization: {header}\r\n"))
        assert status == 401 and obj["error"]["code"] == "bad_credential"
        assert headers["www-authenticate"].startswith("Bearer")


def test_the_job_credential_and_the_admin_credential_open_the_job(api):
    address, mgr = api
    owner = JobApiClient(address)
    owner.create("j", 2)
    worker = JobApiClient(address, credential=owner.credentials["j"])       # a worker given the job credential
    assert worker.join("j", ip="10.0.0.2")["rank"] == 0
    assert worker.heartbeat("j", 0)["joined"] == 1
    admin = JobApiClient(address, credential=ADMIN)
    assert admin.join("j", ip="10.0.0.3")["rank"] == 1
    assert admin.create("j", 2)["job_id"] == mgr.jobs["j"].job_id
    assert admin.leave("j", 1)["left"] == 1
    assert admin.end("j") == {"ended": "j"}


def test_a_join_that_creates_the_job_returns_its_credential(api):
    address, _ = api
    first = JobApiClient(address)
    answer = first.join("fresh", ip="10.0.0.2")
    assert answer["rank"] == 0 and answer["credential"] == first.credentials["fresh"]
    refused(lambda: JobApiClient(address).join("fresh", ip="10.0.0.3"), 401, "credential_required")
    assert JobApiClient(address, credential=answer["credential"]).join("fresh", ip="10.0.0.3")["rank"] == 1


def test_bindings_belong_to_one_rank_of_one_job(api):
    """A member (it has the credential) still cannot redirect another rank's results."""
    address, _ = api
    owner = JobApiClient(address)
    owner.create("a", 3)
    owner.create("b", 2)
    owner.join("a", ip="10.0.0.2", udp_port=5000)
    # a live rank keeps its binding: the same address with another MAC or switch port is refused
    e = refused(lambda: owner.join("a", ip="10.0.0.2", udp_port=5000, mac="00:00:00:00:00:66"), 409, "rank_taken")
    assert "live" in e.message
    refused(lambda: owner.join("a", ip="10.0.0.2", udp_port=5000, switch_port=7), 409, "rank_taken")
    refused(lambda: owner.join("a", ip="10.0.0.3", rank=0), 409, "rank_taken")
    # another host's MAC, or another host's switch port
    refused(lambda: owner.join("a", ip="10.0.0.3", mac="00:00:00:00:00:02"), 409, "mac_taken")
    refused(lambda: owner.join("a", ip="10.0.0.3", switch_port=2), 409, "port_taken")
    # the address (IP and UDP port) is bound to a rank of job a: not usable by job b
    refused(lambda: owner.join("b", ip="10.0.0.2", udp_port=5000), 409, "address_taken")
    refused(lambda: owner.join("b", ip="10.0.0.2", udp_port=5001, mac="00:00:00:00:00:03"), 409, "mac_taken")
    # the same host with another UDP port (a second worker there) and the same re-join are fine
    assert owner.join("a", ip="10.0.0.2", udp_port=5001)["rank"] == 1
    assert owner.join("a", ip="10.0.0.2", udp_port=5000)["rank"] == 0
    assert owner.join("b", ip="10.0.0.2", udp_port=5002)["rank"] == 0


def test_credential_digests_survive_in_the_descriptor(api):
    """What the switch keeps of a job (its descriptor) has the credential's digest, never the credential."""
    address, mgr = api
    credential = JobApiClient(address).create("j", 1)["credential"]
    desc = mgr.jobs["j"].descriptor()
    assert credential not in repr(desc) and len(desc["credential_sha256"]) == 64


def test_admin_credential_file_must_be_private(tmp_path):
    path = tmp_path / "sub" / "admin-credential"
    credential, created = load_or_create_credential_file(path)
    assert created and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert load_or_create_credential_file(path) == (credential, False)
    path.chmod(0o644)
    with pytest.raises(CredentialFileError, match=r"mode 0644.*chmod 600"):
        read_credential_file(path)
    link = tmp_path / "link"
    link.symlink_to(path)
    path.chmod(0o600)
    with pytest.raises(CredentialFileError, match="cannot open"):
        read_credential_file(link)
    bad = tmp_path / "bad"
    bad.write_text("short\n")
    bad.chmod(0o600)
    with pytest.raises(CredentialFileError, match="one credential"):
        read_credential_file(bad)


def test_the_api_listens_on_loopback_by_default():
    assert build_parser().parse_args(["serve"]).api_addr.startswith("127.0.0.1:")
    assert inspect.signature(JobApiServer).parameters["address"].default[0] == "127.0.0.1"
    assert inspect.signature(Controller).parameters["api_address"].default[0] == "127.0.0.1"


def test_serve_creates_the_admin_credential_file_and_honours_it(tmp_path):
    port = free_port()
    credential_file = tmp_path / "run" / "admin-credential"
    proc = subprocess.Popen([sys.executable, "-m", "p4reduce.controller", "serve", "--no-switch", "--api-addr",
                             f"127.0.0.1:{port}", "--default-workers", "1", "--admin-credential-file", str(credential_file),
                             "--state-file", ""], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                JobApiClient(f"127.0.0.1:{port}", timeout=1).health()
                break
            except JobApiError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
                time.sleep(0.1)
        assert stat.S_IMODE(credential_file.stat().st_mode) == 0o600
        admin = JobApiClient(f"127.0.0.1:{port}", credential=read_credential_file(credential_file))
        JobApiClient(f"127.0.0.1:{port}").create("someone", 1)
        assert admin.end("someone") == {"ended": "someone"}
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert read_credential_file(credential_file) not in err          # never logged, only its file named
    # with no file, a fresh credential is printed on stderr at start
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "p4reduce.controller", "serve", "--no-switch", "--api-addr",
                             f"127.0.0.1:{port}", "--state-file", ""],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert line.startswith("job API admin credential (this run only): ")
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_a_world_readable_admin_credential_file_stops_serve(tmp_path):
    credential_file = tmp_path / "admin-credential"
    credential_file.write_text("x" * 43 + "\n")
    os.chmod(credential_file, 0o644)
    p = subprocess.run([sys.executable, "-m", "p4reduce.controller", "serve", "--no-switch", "--api-addr",
                        f"127.0.0.1:{free_port()}", "--admin-credential-file", str(credential_file)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "mode 0644" in p.stderr and "Traceback" not in p.stderr
