"""Agents join a job by name and its credential through the real job API (controller in bookkeeping mode,
no switch) and allreduce through testbed.switch_model served as a fake switch; join errors are
explicit; the CLI (credential from P4REDUCE_JOB_CREDENTIAL)."""
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from testbed.fakeswitch import FakeSwitch, Impairments

from p4reduce.worker.agent import Agent
from p4reduce.worker.cli import tensor_for
from p4reduce.worker.job import JobJoinError
from p4reduce.worker.streaming import RetryPolicy


def _create(addr, name, workers, mode="dense"):
    """Create the job as its owner would; returns the job credential its workers need."""
    from p4reduce.protocol.job_api import JobApiClient
    return JobApiClient(addr).create(name, workers, mode)["credential"]


def _program_when_running(controller, name, sw):
    """What the controller does for a real switch: the job (with its wire token) and its members,
    once all joined."""
    client_addr, mgr = controller
    from p4reduce.protocol.job_api import JobApiClient, JobApiError
    deadline = time.monotonic() + 20
    while True:  # the workers may not have created the job yet
        try:
            job = JobApiClient(client_addr).wait_running(name, timeout=20)
            break
        except JobApiError as e:
            if e.code != "no_such_job" or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    sw.add_job(job["job_id"], job["workers"], job["slots"]["count"], sparse=job["mode"] == "sparse",
               wire_token=mgr.jobs[name].wire_token)
    for m in job["members"]:
        sw.add_worker(job["job_id"], m["rank"], m["ip"], m["udp_port"])
    return job


@pytest.mark.parametrize("mode", ["dense", "sparse"])
def test_four_agents_join_by_name_and_allreduce(controller, mode):
    addr, _ = controller
    n = 4
    results, errors = {}, []
    credential = _create(addr, "demo", n, mode)
    with FakeSwitch(impair=Impairments(0.02, 0.02, 0.02, 0.02, seed=1)) as sw:
        def body():
            try:
                with Agent(addr, "demo", switch_addr=sw.addr, bind_ip="127.0.0.1", mode=mode, workers=n,
                           retry=RetryPolicy(timeout=0.02, deadline=5), credential=credential) as ag:
                    ints = [tensor_for(0, ag.rank, i, 3000, "int32") for i in range(3)]
                    futs = [ag.allreduce_async(x) for x in ints]          # async, in order
                    f = ag.allreduce(tensor_for(0, ag.rank, 9, 1000, "float32").reshape(10, 100), average=True)
                    results[ag.rank] = ([fu.result() for fu in futs], f, ag.params)
            except Exception as e:
                errors.append(e)
        threads = [threading.Thread(target=body) for _ in range(n)]
        for t in threads:
            t.start()
        job = _program_when_running(controller, "demo", sw)
        for t in threads:
            t.join(60)
    assert not errors, errors
    assert sorted(results) == [0, 1, 2, 3] and job["mode"] == mode
    for _r, (ints, f, params) in results.items():
        assert params.sparse == (mode == "sparse") and params.n_workers == 4
        for i, got in enumerate(ints):
            want = np.sum([tensor_for(0, k, i, 3000, "int32").astype(np.int64) for k in range(n)], axis=0)
            assert np.array_equal(got, want)
        exact = np.mean([tensor_for(0, k, 9, 1000, "float32") for k in range(n)], axis=0).reshape(10, 100)
        assert f.shape == (10, 100) and np.abs(f - exact).max() < 1e-6
        assert np.array_equal(f, results[0][1])


def test_join_errors_name_the_problem(controller):
    addr, _mgr = controller
    with pytest.raises(JobJoinError, match=r"cannot join job 'j' at controller 127.0.0.1:1: unreachable"):
        Agent("127.0.0.1:1", "j", bind_ip="127.0.0.1")
    with pytest.raises(JobJoinError, match=r"bad_field \(field 'workers'\)"):
        Agent(addr, "j", bind_ip="127.0.0.1", workers=0)
    with pytest.raises(JobJoinError, match=r"job name 'bad name!' is invalid"):
        Agent(addr, "bad name!", bind_ip="127.0.0.1")
    # a job of 1 worker: the second join is refused
    with Agent(addr, "solo", bind_ip="127.0.0.1", workers=1) as first:  # created by its join
        credential = first.session.client.credentials["solo"]
        with pytest.raises(JobJoinError, match="credential_required"):
            Agent(addr, "solo", bind_ip="127.0.0.1", workers=1)
        with pytest.raises(JobJoinError, match="job_full"):
            Agent(addr, "solo", bind_ip="127.0.0.1", workers=1, credential=credential)


def test_waiting_for_missing_ranks_times_out_clearly(controller):
    addr, _ = controller
    t0 = time.monotonic()
    with pytest.raises(JobJoinError, match=r"timeout.*1/2 workers joined"):
        Agent(addr, "pair", bind_ip="127.0.0.1", workers=2, wait_timeout=0.5)
    assert time.monotonic() - t0 < 5


def test_cli_allreduce_checks_results(controller):
    addr, _ = controller
    with FakeSwitch() as sw:
        cmd = [sys.executable, "-m", "p4reduce.worker", "allreduce", "--controller", addr, "--job", "cli", "--workers", "2",
               "--bind", "127.0.0.1", "--switch", f"127.0.0.1:{sw.addr[1]}", "--count", "3", "--size", "5000",
               "--check", "--deadline", "5"]
        env = dict(os.environ, P4REDUCE_JOB_CREDENTIAL=_create(addr, "cli", 2))
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                 for _ in range(2)]
        _program_when_running(controller, "cli", sw)
        outs = [p.communicate(timeout=60) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        rep = json.loads(out)
        assert rep["check"] == "ok" and rep["tensors"] == 3 and rep["workers"] == 2


def test_cli_reports_errors_without_traceback():
    p = subprocess.run([sys.executable, "-m", "p4reduce.worker", "allreduce", "--controller", "127.0.0.1:1", "--job", "x"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert p.stderr.startswith("worker: error: cannot join job 'x' at controller 127.0.0.1:1: unreachable")
    assert "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "p4reduce.worker", "allreduce", "--controller", "c", "--job", "x",
                        "--switch", "nohost"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "argument --switch: expected HOST:PORT, got 'nohost'" in p.stderr


def test_module_level_api_needs_init_and_joins_by_name(controller):
    from p4reduce import worker
    with pytest.raises(RuntimeError, match=r"worker.init\(controller, job\) must be called"):
        worker.allreduce(np.ones(3, np.float32))
    addr, _ = controller
    with FakeSwitch() as sw:
        agent = worker.init(addr, "mod", workers=1, bind_ip="127.0.0.1", switch_addr=sw.addr)
        _program_when_running(controller, "mod", sw)
        try:
            assert np.array_equal(worker.allreduce(np.arange(5, dtype=np.int32)), np.arange(5))
            assert worker.allreduce_async(np.full(4, 2.5, np.float32)).result().tolist() == [2.5] * 4
            assert agent.rank == 0
        finally:
            worker.shutdown()


def test_a_rank_waiting_for_its_peers_outlives_a_controller_restart():
    """Rank 0 joined and waits for rank 1 when the controller goes away for a second (make run's
    supervisor restarts it; the restarted one resumes the job): the wait goes on, and the session
    starts once rank 1 has joined the controller that came back."""
    from conftest import TOPO

    from p4reduce.controller.api_server import JobApi, JobApiServer
    from p4reduce.controller.jobs import JobManager
    from p4reduce.controller.slots import SlotPool
    from p4reduce.worker.job import JobSession
    mgr = JobManager(SlotPool(16), topology=TOPO, default_lease_s=5.0)
    servers = [JobApiServer(JobApi(mgr), ("127.0.0.1", 0)).start()]
    addr = servers[0].address
    host, port = addr.rsplit(":", 1)
    _, _, credential = mgr.create("restart", 2)

    def restart():
        time.sleep(0.5)
        servers[0].stop()                                          # the controller is gone ...
        time.sleep(1.0)
        servers.append(JobApiServer(JobApi(mgr), (host, int(port))).start())   # ... and back
        mgr.join("restart", ip="127.0.0.1", udp_port=40001)
    thread = threading.Thread(target=restart)
    thread.start()
    try:
        session = JobSession(addr, "restart", udp_port=40000, ip="127.0.0.1", wait_timeout=20,
                             credential=credential)
        assert session.job["state"] == "running" and session.rank == 0
        session.close()
    finally:
        thread.join()
        servers[-1].stop()
