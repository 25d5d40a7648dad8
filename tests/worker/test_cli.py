"""The worker's command line (worker/cli.py): every option documented with its default, bad
arguments named (issue #13's cases) with exit status 2 and no traceback, --density makes sparse
data that a sparse job sends less of, and progress on stderr (bar on a terminal, status lines
otherwise)."""
import argparse
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from testbed.fakeswitch import FakeSwitch

from p4reduce.controller.api_server import JobApi, JobApiServer
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.slots import SlotPool
from p4reduce.controller.topology import from_dict
from p4reduce.protocol.job_api import JobApiClient
from p4reduce.worker import cli

TOPO = from_dict({
    "switches": {"s1": {"grpc_addr": "127.0.0.1:1", "ip": "10.0.0.254", "mac": "00:00:00:00:01:fe"}},
    "hosts": {"h1": {"ip": "127.0.0.1", "mac": "00:00:00:00:00:01", "switch": "s1", "port": 1}},
})


def _worker(*args, env=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "p4reduce.worker", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.parametrize("args, argument, message", [
    (["--controller", ":::"], "--controller", "expected HOST:PORT"),
    (["--controller", "127.0.0.1:notaport"], "--controller", "the port must be a number in 1..65535"),
    (["--controller", "127.0.0.1:99999"], "--controller", "the port must be a number in 1..65535"),
    (["--port", "70000"], "--port", "must be in [0, 65535], got 70000"),
    (["--port", "-1"], "--port", "must be in [0, 65535], got -1"),
    (["--density", "0"], "--density", "must be in (0, 1], got 0"),
    (["--density", "nan"], "--density", "must be in (0, 1], got nan"),
    (["--seed", "-3"], "--seed", "must be >= 0, got -3"),
    (["--bind", "host"], "--bind", "expected an IPv4 address, got 'host'"),
    (["--job", "../x"], "--job", "a job name is 1 to 64 characters"),
    (["--size", "many"], "--size", "expected an integer, got 'many'"),
    (["--switch", "nohost"], "--switch", "expected HOST:PORT"),
    (["--loop", "fast"], "--loop", "invalid choice: 'fast' (choose from 'native', 'python')"),
])
def test_bad_arguments_are_named_without_traceback(args, argument, message):
    p = _worker("allreduce", *args)
    assert p.returncode == 2, p.stderr
    assert f"error: argument {argument}: " in p.stderr and message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_unreachable_controller_is_one_line():
    p = _worker("allreduce", "--controller", "127.0.0.1:1", "--job", "x")
    assert p.returncode == 2
    assert p.stderr.strip() == ("worker: error: cannot join job 'x' at controller 127.0.0.1:1: unreachable: "
                                + p.stderr.split("unreachable: ", 1)[1].strip())
    assert "Traceback" not in p.stderr


def _options(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if action.option_strings and not isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction)):
            yield action


@pytest.mark.parametrize("command", ["allreduce"])
def test_every_option_has_help_with_its_default(command):
    sub = cli.build_parser()._subparsers._group_actions[0].choices[command]
    options = list(_options(sub))
    assert {"--controller", "--job", "--port", "--compressor", "--credential"} <= {a.option_strings[0] for a in options}
    for action in options:
        assert action.help and "default" in action.help, action.option_strings
    shown = _worker(command, "--help").stdout
    assert "(default 127.0.0.1:8090)" in " ".join(shown.split())
    if command == "allreduce":
        assert "--density D" in shown


def test_tensor_density_is_per_block():
    x = cli.tensor_for(0, 1, 2, 256 * 400, "int32", density=0.1, block=256)
    blocks = x.reshape(400, 256).any(axis=1)
    assert 20 <= blocks.sum() <= 60                 # ~40 of 400
    assert np.array_equal(x, cli.tensor_for(0, 1, 2, 256 * 400, "int32", density=0.1, block=256))
    assert np.count_nonzero(cli.tensor_for(0, 1, 2, 1000, "float32")) == 1000
    with pytest.raises(ValueError, match="needs block"):      # sparse blocks of the job's lanes: no default
        cli.tensor_for(0, 1, 2, 1000, "int32", density=0.5)


def test_a_job_and_a_reducer_need_the_jobs_layout():
    """No compiled-in default layout: JobParams without lanes/subblock, or a reducer class that
    never sets its lanes, is an error naming what is missing."""
    from p4reduce.worker.job import JobParams
    from p4reduce.worker.reducer import Reducer
    with pytest.raises(TypeError, match="lanes"):
        JobParams(1, 0, 1, 4, "127.0.0.1")
    assert not hasattr(Reducer, "lanes")


@pytest.fixture
def controller():
    mgr = JobManager(SlotPool(256), topology=TOPO, default_workers=2, default_lease_s=5.0, join_timeout_s=30.0)
    server = JobApiServer(JobApi(mgr), ("127.0.0.1", 0)).start()
    yield server.address
    server.stop()


def _run_pair(addr, job, mode, extra):
    """Two CLI workers against a fake switch; their JSON reports."""
    credential = JobApiClient(addr).create(job, 2, mode)["credential"]
    with FakeSwitch() as sw:
        job_desc = None
        cmd = ["allreduce", "--controller", addr, "--job", job, "--bind", "127.0.0.1",
               "--switch", f"127.0.0.1:{sw.addr[1]}", "--count", "2", "--size", "20000", "--check",
               "--deadline", "10", *extra]
        env = dict(os.environ, P4REDUCE_JOB_CREDENTIAL=credential)
        procs = [subprocess.Popen([sys.executable, "-m", "p4reduce.worker", *cmd], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
        job_desc = JobApiClient(addr, credential=credential).wait_running(job, timeout=30)
        sw.add_job(job_desc["job_id"], 2, job_desc["slots"]["count"], sparse=mode == "sparse",
                   wire_token=job_desc["wire_token"])
        for m in job_desc["members"]:
            sw.add_worker(job_desc["job_id"], m["rank"], m["ip"], m["udp_port"])
        outs = [p.communicate(timeout=90) for p in procs]
    reports = []
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert "worker: joined job" in err and "Traceback" not in err
        reports.append(dict(json.loads(out.strip().splitlines()[-1]), stderr=err))
    return reports


@pytest.mark.parametrize("loop", ["native", "python", None])
def test_the_worker_loop_is_chosen_on_the_command_line_and_said(controller, loop):
    """--loop picks the send/receive loop (default: native where gcc is, as here); the join line
    says which one runs, and both check their sums."""
    reports = _run_pair(controller, f"loop-{loop}", "dense", ["--loop", loop] if loop else [])
    for r in reports:
        assert r["check"] == "ok", r
        assert f"; {loop or 'native'} loop)" in r["stderr"], r["stderr"]


def test_density_makes_a_sparse_job_send_less(controller):
    dense = _run_pair(controller, "d", "sparse", [])
    sparse = _run_pair(controller, "s", "sparse", ["--density", "0.05"])
    for r in dense + sparse:
        assert r["check"] == "ok", r
    assert {r["density"] for r in sparse} == {0.05}
    # the blocks zero on both workers (~90%) never leave them
    assert sum(r["bytes_sent"] for r in sparse) < 0.3 * sum(r["bytes_sent"] for r in dense)


class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_progress_status_lines_when_not_a_terminal(monkeypatch):
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(cli, "STATUS_EVERY_S", 0.0)
    out = _Stream(tty=False)
    p = cli.Progress(1000, "element", "worker rank 2", stream=out)
    p.advance_to(250)
    p.advance_to(1000)
    p.close()
    lines = out.getvalue().splitlines()
    assert any(line.startswith("worker rank 2: 250/1,000 elements (25%)") for line in lines), lines
    assert lines[-1].startswith("worker rank 2: 1,000/1,000 elements (100%)")
    assert "\r" not in out.getvalue()               # a log file gets whole lines, no bar redraws


def test_progress_bar_on_a_terminal_and_nothing_for_short_runs(monkeypatch):
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 0.0)
    out = _Stream(tty=True)
    p = cli.Progress(400, "step", "worker rank 0", stream=out)
    p.advance_to(100)
    p.close()
    assert "worker rank 0:" in out.getvalue() and "25%|" in out.getvalue()
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 3600.0)
    quiet = _Stream(tty=False)
    p = cli.Progress(400, "step", "short", stream=quiet)
    p.advance_to(400)
    p.close()
    assert quiet.getvalue() == ""


def test_progress_estimate_moves_inside_a_long_step(monkeypatch):
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(cli, "STATUS_EVERY_S", 0.0)
    out = _Stream(tty=False)
    p = cli.Progress(1000, "element", "w", estimate=lambda: 600, stream=out)
    p.advance_to(0)
    p.close()
    assert "w: 600/1,000 elements (60%)" in out.getvalue()


def test_a_job_that_ended_says_how_to_run_it_again(controller, capsys):
    client = JobApiClient(controller)
    client.create("once", 2)
    client.end("once")
    assert cli.main(["allreduce", "--controller", controller, "--job", "once", "--bind", "127.0.0.1",
                     "--wait", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "job 'once' has ended (ended by request)" in err, err
    assert "create it again (in `make run`'s CLI: `job NAME`, or `workers NAME`" in err


def _run_pair_in_process(addr, job, mode, extra, capsys):
    """Two cli.main() workers on threads of this process (so a compressor registered here is
    known to them) against a fake switch; (exit statuses, reports, stderr)."""
    import threading
    credential = JobApiClient(addr).create(job, 2, mode)["credential"]
    statuses = [None, None]
    with FakeSwitch() as sw:
        cmd = ["allreduce", "--controller", addr, "--job", job, "--bind", "127.0.0.1", "--credential", credential,
               "--switch", f"127.0.0.1:{sw.addr[1]}", "--count", "3", "--size", "20000", "--check",
               "--deadline", "10", "--quiet", *extra]

        def run(i):
            statuses[i] = cli.main(list(cmd))
        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        job_desc = JobApiClient(addr, credential=credential).wait_running(job, timeout=30)
        sw.add_job(job_desc["job_id"], 2, job_desc["slots"]["count"], sparse=mode == "sparse",
                   wire_token=job_desc["wire_token"])
        for m in job_desc["members"]:
            sw.add_worker(job_desc["job_id"], m["rank"], m["ip"], m["udp_port"])
        for t in threads:
            t.join(90)
    out, err = capsys.readouterr()
    reports = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return statuses, reports, err


def test_check_fails_on_a_broken_compressor_and_is_outside_the_clock(controller, capsys):
    """--check on a compressor broken on purpose: exit status 1, the report says what is wrong;
    the check's time is reported apart from the allreduce's."""
    from p4reduce import worker
    from p4reduce.worker.compressors import COMPRESSORS, TopKBlocks

    class Leaky(TopKBlocks):
        def decompress(self, lanes, ctx):
            out = super().decompress(lanes, ctx)
            out[np.flatnonzero(out == 0)[:1]] = 1.0
            return out
    worker.register_compressor("leaky-topk", lambda seed, rank, **kw: Leaky(**kw), error_feedback=True)
    try:
        statuses, reports, err = _run_pair_in_process(controller, "broken", "dense",
                                                      ["--dtype", "float32", "--compressor", "leaky-topk",
                                                       "--k", "5"], capsys)
        assert statuses == [1, 1], err
        for r in reports:
            assert r["check"].startswith("3 of 3 tensors wrong"), r
            assert "non-zero outside the agreed blocks" in r["check_problems"][0]
            assert r["check_seconds"] > 0 and r["seconds"] > 0
        assert "worker: check: tensor 0: topk: non-zero outside the agreed blocks" in err
        statuses, reports, err = _run_pair_in_process(controller, "good", "dense",
                                                      ["--dtype", "float32", "--compressor", "terngrad"], capsys)
        assert statuses == [0, 0], err
        for r in reports:
            assert r["check"] == "ok" and r["check_contract"] == "ternary lattice, unbiased", r
            assert r["check_unbiased"]["tolerance_z"] == 5.0
    finally:
        COMPRESSORS.pop("leaky-topk", None)


@pytest.mark.parametrize("args, message", [
    (["--compressor", "fixedpoint", "--k", "3"], "argument --k: compressor 'fixedpoint' takes no such option "
                                                  "(it is for topk, randomk)"),
    (["--compressor", "topk", "--alpha", "0.1"], "argument --alpha: compressor 'topk' takes no such option"),
    (["--compressor", "3lc", "--sparsity-multiplier", "2"], "argument --sparsity-multiplier: must be < 2"),
])
def test_compressor_options_given_to_the_wrong_compressor_are_named(args, message):
    p = _worker("allreduce", "--controller", "127.0.0.1:1", *args)
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_compressor_options_reach_the_compressor():
    a = cli.build_parser().parse_args(["allreduce", "--compressor", "randomk", "--k", "4", "--rescale"])
    assert cli.compressor_options(a) == {"k": 4.0, "rescale": True}
    a = cli.build_parser().parse_args(["allreduce", "--compressor", "diana", "--alpha", "0.2",
                                       "--error-feedback", "off"])
    assert cli.compressor_options(a) == {"alpha": 0.2} and a.error_feedback == "off"


def test_options_the_jobs_mode_cannot_honour_are_said():
    parse = cli.build_parser().parse_args
    w = cli.mode_warnings(parse(["allreduce", "--density", "0.1"]), sparse=False, job="default")
    assert len(w) == 1 and "job 'default' is dense" in w[0] and "--density 0.1 saves no bytes" in w[0]
    assert cli.mode_warnings(parse(["allreduce", "--density", "0.1"]), sparse=True, job="s") == []
    w = cli.mode_warnings(parse(["allreduce", "--dtype", "float32", "--compressor", "threshold"]), False, "d")
    assert w and "saves bytes only in a sparse job" in w[0]
    w = cli.mode_warnings(parse(["allreduce", "--compressor", "topk"]), False, "d")
    assert w and "int32 data is summed exactly" in w[0]


def test_survivors_error_names_the_rank_that_stopped(controller):
    """A worker killed mid-run: the survivor's error names its rank (the controller's view of
    who stopped sending heartbeats), not only that the aggregation timed out."""
    import re
    import signal
    import time
    credential = JobApiClient(controller).create("dies", 2, "dense")["credential"]
    with FakeSwitch() as sw:
        cmd = ["allreduce", "--controller", controller, "--job", "dies", "--bind", "127.0.0.1",
               "--switch", f"127.0.0.1:{sw.addr[1]}", "--count", "100000", "--size", "2000", "--quiet"]
        env = dict(os.environ, P4REDUCE_JOB_CREDENTIAL=credential)
        procs = [subprocess.Popen([sys.executable, "-m", "p4reduce.worker", *cmd], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
        job_desc = JobApiClient(controller, credential=credential).wait_running("dies", timeout=30)
        sw.add_job(job_desc["job_id"], 2, job_desc["slots"]["count"], wire_token=job_desc["wire_token"])
        for m in job_desc["members"]:
            sw.add_worker(job_desc["job_id"], m["rank"], m["ip"], m["udp_port"])
        time.sleep(1.5)
        procs[1].send_signal(signal.SIGKILL)          # the process this test started, by its own handle
        _, dead_err = procs[1].communicate(timeout=30)
        out, err = procs[0].communicate(timeout=60)
    survivor = re.search(r"as rank (\d)", err)       # the killed one may die before it says its rank
    assert survivor, err
    dead_rank = 1 - int(survivor.group(1))
    assert procs[0].returncode == 2, err
    assert f"rank {dead_rank} stopped: no heartbeat for" in err, err
    assert "Traceback" not in err
