"""Issue #24, point 7: a worker that gives up waiting for its peers leaves the job at once (its rank
does not linger for a lease); a --switch that cannot be resolved or reached is reported as such,
not as an unusable job description; a credential a header cannot carry is a clear error."""
import os
import subprocess
import sys

import pytest

from p4reduce.controller.api_server import JobApi, JobApiServer
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.slots import SlotPool
from p4reduce.protocol.job_api import JobApiClient
from p4reduce.worker.job import JobJoinError, JobSession

from .conftest import TOPO


@pytest.fixture
def controller():
    mgr = JobManager(SlotPool(128), topology=TOPO, default_lease_s=60.0)
    server = JobApiServer(JobApi(mgr), ("127.0.0.1", 0)).start()
    yield server.address, mgr
    server.stop()


def test_a_worker_that_gives_up_waiting_leaves(controller):
    address, mgr = controller
    owner = JobApiClient(address)
    credential = owner.create("w", 3)["credential"]
    owner.join("w", ip="10.0.0.2", udp_port=7001)          # a peer that stays
    with pytest.raises(JobJoinError, match="2/3 workers joined"):
        JobSession(address, "w", ip="127.0.0.1", udp_port=7000, credential=credential, wait_timeout=0.5)
    assert [m.ip for m in mgr.jobs["w"].members.values()] == ["10.0.0.2"]   # its rank is free at once


def _worker(address, *args, env=None):
    return subprocess.run([sys.executable, "-m", "p4reduce.worker", "allreduce", "--controller", address,
                           "--job", "one", "--quiet", *args], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **(env or {})))


@pytest.mark.parametrize("switch, words", [("no-such-switch.invalid:48864", "cannot resolve"),
                                           ("255.255.255.255:48864", "unreachable")])
def test_a_bad_switch_address_is_named(controller, switch, words):
    address, mgr = controller
    credential = JobApiClient(address).create("one", 1)["credential"]
    out = _worker(address, "--switch", switch, "--credential", credential)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert "--switch" in last and words in last and "job description" not in last, last
    assert mgr.ended["one"][0] == "all workers left"      # and it left (the job's only worker)


def test_a_non_latin1_credential_is_a_clear_error(controller):
    address, _ = controller
    JobApiClient(address).create("one", 1)
    out = _worker(address, env={"P4REDUCE_JOB_CREDENTIAL": "créd€ntial-0123456789"})
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert "credential" in last and "codec" not in last and "visible ASCII" in last, last
