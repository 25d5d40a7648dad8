"""bench/faults.py's decisions without Mininet: when the second kill comes, the quick mode's wall
time, and the demo worker's --pause (the step's compute between the killed job's calls)."""
import pytest

from lab.bench import faults
from lab.demo import worker as demo_worker


def _steps(calls, back_at, done_range):
    return {done: faults.second_kill_step(calls, done, back_at) for done in done_range}


def test_second_kill_comes_two_calls_after_the_job_is_back_on_the_switch():
    """Back on the switch (the job API) when 14 of 40 calls were done: the kill at 16, not at a
    fixed three-quarter mark (30), so the job has calls left to come back after it too."""
    assert _steps(40, 14, range(14, 17)) == {14: "wait", 15: "wait", 16: "kill"}
    assert faults.second_kill_step(40, 20, 14) == "kill"          # progress read late: still kill
    # not back yet: wait, however early or late in the run, while the kill can still come
    assert all(faults.second_kill_step(40, d, None) == "wait" for d in range(8, 37))


def test_second_kill_gives_up_when_the_job_is_back_too_late():
    """The kill needs 2 calls left after it; not back on the switch in time: give up (the section
    reports it) rather than kill in the last call or wait for a return that cannot be seen."""
    assert faults.second_kill_step(40, 37, None) == "give up"     # back at 37 could only kill at 39
    assert faults.second_kill_step(40, 39, None) == "give up"
    assert faults.second_kill_step(40, 37, 37) == "give up"
    assert faults.second_kill_step(40, 36, 36) == "wait"
    assert faults.second_kill_step(40, 38, 36) == "kill"          # 2 calls left
    assert faults.second_kill_step(40, 39, 36) == "give up"       # only 1 left
    assert [faults.second_kill_step(8, d, b) for d, b in [(3, 1), (5, 4), (6, 4), (5, 5)]] == \
        ["kill", "wait", "kill", "give up"]


def test_quick_run_is_bound_by_wall_time_not_by_fallback_speed():
    """The CI failure: in --quick the fallback's calls took tens of ms, so the job's last calls
    ran before it could return to the switch. The pauses alone keep the job running >= 10 s after
    the first kill (a restore and a return take ~3-5 s), however fast its calls are."""
    calls, _, pause = faults.QUICK
    assert faults.first_kill_mark(calls) == 8
    assert faults.paused_s_after_first_kill(calls, pause) >= 10
    calls, _, pause = faults.FULL
    assert faults.first_kill_mark(calls) == 10
    assert faults.paused_s_after_first_kill(calls, pause) >= 10


def test_markdown_says_where_the_switch_was_killed_and_the_pause():
    from lab.bench.markdown import faults_lines
    kill = {"detect_first_s": 1.5, "detect_last_s": 1.5, "restore_s": 2.4, "redo_call_s": 2.6,
            "gloo_call_s": 0.03, "back_after_restore_s": 0.9, "back_after_restore_calls": 1}
    line = faults_lines({"workers": 4, "calls": 40, "elements": 262144, "pause_s": 0.4, "target": "t",
                         "kill_after_calls": [8, 12], "lost_or_wrong_calls": 0, "kills": [kill, kill]})[0]
    assert line == ("The switch killed (SIGKILL) mid-run after call 8 and, once the job had been back on the "
                    "switch for 2 calls, after call 12, 4 workers, 40 calls of 262,144 int32, 0.4 s apart "
                    "(a step's compute) (t): lost or wrong calls 0")
    old = faults_lines({"workers": 4, "calls": 50, "elements": 10, "target": "t", "lost_or_wrong_calls": 0,
                        "kills": [kill]})[0]       # a document from before the pause
    assert old == "The switch killed (SIGKILL) mid-run, 4 workers, 50 calls of 10 int32 (t): lost or wrong calls 0"


@pytest.mark.parametrize("value", ["-1", "61", "nan", "inf", "soon", ""])
def test_demo_worker_rejects_a_bad_pause(value, capsys):
    with pytest.raises(SystemExit) as exc:
        demo_worker.main(["dense", "--controller", "127.0.0.1:1", "--job", "j", "--workers", "1",
                          f"--pause={value}"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --pause" in err and ("0..60" in err or "not a number" in err), err


@pytest.mark.parametrize("value, seconds", [("0", 0.0), ("0.4", 0.4), ("60", 60.0)])
def test_demo_worker_takes_a_pause_in_seconds(value, seconds):
    assert demo_worker.pause_seconds(value) == seconds


def test_demo_worker_pause_is_outside_the_timed_calls(monkeypatch):
    """--pause sleeps between calls (not after the last), and neither `allreduce_s` nor the calls'
    starts include it."""
    import argparse

    import numpy as np

    clock = [0.0]
    monkeypatch.setattr(demo_worker.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(demo_worker.time, "time", lambda: 1000 + clock[0])
    slept = []

    def sleep(s):
        slept.append(s)
        clock[0] += s
    monkeypatch.setattr(demo_worker.time, "sleep", sleep)
    monkeypatch.setattr(demo_worker, "emit", lambda **e: None)

    class Stats:
        packets_sent = retransmissions = 0

    class Reducer:
        bytes_sent, stats = 0, Stats()

    class Params:
        lanes, subblock, slot_count = 64, 1, 8

    class OneWorker:
        n_workers, rank, params, reducer = 1, 0, Params(), Reducer()
        calls_by_path, path, episodes = {"switch": 4}, "switch", []

        def allreduce(self, a, out):
            clock[0] += 0.01          # each call takes 10 ms
            out[...] = a

    args = argparse.Namespace(seed=7, elements=100, tensors=3, pause=0.5)
    r = demo_worker.run_allreduce(OneWorker(), args, 1.0)
    assert r["exact"] and slept == [0.5, 0.5]
    assert r["allreduce_s"] == pytest.approx([0.01] * 3)
    assert np.diff(r["call_starts"]) == pytest.approx([0.51, 0.51])


@pytest.mark.parametrize("value", ["-1", "61", "nan", "soon"])
def test_the_faults_bench_checks_its_pause_as_the_demo_worker_does(value, capsys):
    from lab.bench import faults
    with pytest.raises(SystemExit) as exc:
        faults.main([f"--pause={value}"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --pause" in err and ("0..60" in err or "not a number" in err), err
