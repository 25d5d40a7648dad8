"""The run CLI's options do what they say, without a network (issue #25, point 2): worker options
add to the defaults, `job` takes slots and a lease and says when an unjoined job is reclaimed,
`workers NAME` re-creates a job as it was (never with another size), ranks follow host order, the
summary keeps a failed check's report; the shell's slots() shows the controller's allocations."""
import io

import pytest

from p4reduce.mininet_topos import cli_args
from p4reduce.mininet_topos.runcli import (
    DEFAULT_WORKER_OPTIONS,
    JobSpec,
    RunCLI,
    describe_job,
    merge_options,
    parse_job_line,
    summary_table,
)


def test_options_add_to_the_defaults():
    assert merge_options(DEFAULT_WORKER_OPTIONS, []) == DEFAULT_WORKER_OPTIONS
    assert merge_options(DEFAULT_WORKER_OPTIONS, ["--density", "0.1"]) == [
        "--count", "4", "--size", "100000", "--check", "--density", "0.1"]
    assert merge_options(DEFAULT_WORKER_OPTIONS, ["--count", "10", "--size", "1000000"]) == [
        "--check", "--count", "10", "--size", "1000000"]
    assert merge_options(DEFAULT_WORKER_OPTIONS, ["--no-check"]) == ["--count", "4", "--size", "100000",
                                                                     "--no-check"]


@pytest.mark.parametrize("line, want", [
    ("keep 2 dense", JobSpec("keep", 2, "dense")),
    ("big 4 sparse --slots 32 --lease 30", JobSpec("big", 4, "sparse", 32, 30.0)),
    ("x", JobSpec("x", 4, "dense")),
    ("x --slots 8", JobSpec("x", 4, "dense", 8)),
    ("", "usage: job NAME"),
    ("x two", "job: WORKERS must be a number, got 'two'"),
    ("x 2 fast", "job: MODE must be dense or sparse, got 'fast'"),
    ("x 2 --slots", "job: --slots needs a value"),
    ("x 2 --slots many", "job: --slots must be a number of slots, got 'many'"),
    ("x 2 --lease -1", "job: --lease must be a positive number of seconds, got '-1'"),
    ("x 2 --lease nan", "job: --lease must be a positive number of seconds"),
    ("x 2 --color red", "job: unknown option '--color'"),
    ("cmp 8 --aggregation root", JobSpec("cmp", 8, "dense", aggregation="root")),
    ("cmp 8 --aggregation tree --slots 16", JobSpec("cmp", 8, "dense", 16, aggregation="tree")),
    ("cmp 8 --aggregation ring", "job: --aggregation must be tree or root, got 'ring'"),
])
def test_job_line(line, want):
    got = parse_job_line(line, 4, "dense")
    if isinstance(want, str):
        assert isinstance(got, str) and got.startswith(want), got
    else:
        assert got == want


class _Host:
    def __init__(self, name):
        self.name = name


class _Session:
    """What RunCLI uses of a Session, recording the jobs it creates."""

    join_timeout_s = 45.0
    api_addr = "127.0.0.1:1"
    default_job = "default"

    def __init__(self):
        self.network = type("N", (), {"hosts": [_Host(f"h{i}") for i in range(1, 5)]})()
        self.created = []

    def create_job(self, name, workers, mode, slots=None, hosts=None, lease_s=None, aggregation=None):
        self.created.append((name, workers, mode, slots, lease_s, [h.name for h in hosts]))
        return {"name": name, "workers": workers, "mode": mode, "lease_s": lease_s or 10.0,
                "slots": {"base": 64, "count": slots or 64}}


def _cli(session):
    cli = RunCLI.__new__(RunCLI)          # no Mininet: only the p4reduce commands' state
    cli.session, cli.mode, cli.made, cli.stdout = session, "dense", {}, io.StringIO()
    return cli


def test_job_shows_slots_lease_and_reclaim_time_and_workers_recreates_it_as_it_was(monkeypatch):
    session = _Session()
    cli = _cli(session)
    cli.do_job("keep 2 dense --slots 16 --lease 20")
    said = cli.stdout.getvalue()
    assert "job 'keep' created: 2 workers, dense, slots 64..79, lease 20 s" in said
    assert "reclaimed if no worker joins within 45 s (`run --join-timeout`)" in said
    assert session.created[-1] == ("keep", 2, "dense", 16, 20.0, ["h1", "h2"])
    monkeypatch.setattr(cli, "_job_state", lambda job: "absent")     # reclaimed
    job, hosts, words = cli._job_and_hosts("workers", "keep --count 2", "dense")
    assert session.created[-1] == ("keep", 2, "dense", 16, 20.0, ["h1", "h2"])   # same size, not 4
    assert [h.name for h in hosts] == ["h1", "h2"] and words == ["--count", "2"]


def test_ranks_follow_host_order(monkeypatch):
    session = _Session()
    cli = _cli(session)
    seen = {}
    monkeypatch.setattr(cli, "_job_state", lambda job: 3)

    def fake_run(hosts, argv, out, env=None, extra_args=None):
        seen["argv"], seen["extra"] = argv, extra_args
        return {}
    monkeypatch.setattr("p4reduce.mininet_topos.runcli.run_on_hosts", fake_run)
    cli.do_workers("default --density 0.1")
    assert seen["extra"] == {"h1": ["--rank", "0"], "h2": ["--rank", "1"], "h3": ["--rank", "2"]}
    assert "--check" in seen["argv"] and "--density" in seen["argv"]
    cli.do_workers("default --rank 1")
    assert seen["extra"] is None


def test_summary_keeps_a_failed_checks_report():
    text = summary_table({
        "h1": {"rank": 0, "check": "ok", "seconds": 1.5, "check_seconds": 0.7, "elements_per_s": 10},
        "h2": {"rank": 1, "check": "1 of 4 tensors wrong; biased: ...", "seconds": 1.5, "check_seconds": 0.7},
        "h3": {"rank": 2, "check": "unchecked: no documented contract for compressor 'mine'"},
        "h4": "exit 2: worker: error: ..."})
    lines = text.splitlines()
    assert "check s" in lines[0]
    assert lines[1].split()[:3] == ["h1", "0", "ok"] and "0.70" in lines[1]
    assert lines[2].split()[:3] == ["h2", "1", "FAILED"]
    assert lines[3].split()[:3] == ["h3", "2", "unchecked"]
    assert "h2: 1 of 4 tensors wrong" in text and "h4 exit 2" in " ".join(text.split())


def test_describe_job():
    assert describe_job({"workers": 2, "mode": "sparse", "slots": {"base": 0, "count": 64}, "lease_s": 10.0}) == \
        "2 workers, sparse, slots 0..63, lease 10 s"


def test_captures_are_off_unless_asked():
    import argparse
    p = argparse.ArgumentParser()
    cli_args.add_network_arguments(p)
    assert cli_args.pcap_dir(p.parse_args([])) is None
    assert cli_args.pcap_dir(p.parse_args(["--pcap"])) == "pcaps"
    assert cli_args.pcap_dir(p.parse_args(["--pcap-dir", "/tmp/x"])) == "/tmp/x"


def test_shell_slots_show_what_the_controller_allocated():
    from p4reduce.controller.inspection import SwitchInspector
    from p4reduce.controller.shell import ShellCommands

    class Insp(SwitchInspector):
        def __init__(self):
            pass

        def jobs(self):
            return [{"name": "old", "slots": {"base": 64, "count": 16}}]

        def slot_map(self, extra=None):
            used = sorted((j["slots"]["base"], j["slots"]["count"], j["name"]) for j in [*self.jobs(), *(extra or [])])
            return [{"base": b, "count": c, "job": n} for b, c, n in used]

    class Api:
        def jobs(self):
            return [{"name": "default", "slots": {"base": 0, "count": 64}, "workers": 4, "mode": "dense"},
                    {"name": "old", "slots": {"base": 64, "count": 16}}]
    out = io.StringIO()
    ShellCommands(Insp(), Api(), out=out).slots()
    text = out.getvalue()
    assert "default (allocated, not on the switch)" in text and "old" in text


def test_summary_says_which_path_the_calls_took():
    text = summary_table({
        "h1": {"rank": 0, "check": "ok", "seconds": 1.0, "path": "switch", "calls_by_path": {"switch": 5, "fallback": 0}},
        "h2": {"rank": 1, "check": "ok", "seconds": 3.0, "path": "fallback", "calls_by_path": {"switch": 2, "fallback": 3},
               "path_reason": "the switch stopped answering in call 2: ...",
               "fallback_episodes": [{"from_call": 2, "back_at_call": None, "reason": "got no result ..."}]},
        "h3": {"rank": 2, "check": "ok", "seconds": 3.0, "path": "switch", "calls_by_path": {"switch": 7, "fallback": 3},
               "fallback_episodes": [{"from_call": 2, "back_at_call": 5, "reason": "got no result ..."}]}})
    lines = text.splitlines()
    assert lines[0].split()[-1] == "path"
    assert lines[1].split()[-1] == "switch"
    assert lines[2].endswith("fallback (3 of 5 calls)")
    assert lines[3].endswith("switch (3 of 10 calls on the fallback)")
    assert "h2: calls 2.. (to the end) on the host fallback: got no result ..." in text
    assert "h3: calls 2..4 on the host fallback: got no result ..." in text


def test_jobs_table_shows_a_degraded_job_and_one_without_slots():
    from p4reduce.mininet_topos.runcli import jobs_table
    text = jobs_table([
        {"name": "a", "state": "running", "joined": 4, "workers": 4, "mode": "dense", "slots": {"base": 0, "count": 64},
         "path": "switch"},
        {"name": "b", "state": "running", "joined": 4, "workers": 4, "mode": "dense", "slots": {"base": 0, "count": 0},
         "path": "fallback", "path_reason": "no free slots on the switch"}])
    a, b = text.splitlines()[1:]
    assert a.split()[1] == "running" and a.endswith("0..63")
    assert b.split()[1] == "degraded" and "none  (host fallback: no free slots on the switch)" in b
