"""The session's supervisor (mininet_topos/supervisor.py) without Mininet: restarts are bounded,
each event is said once, and a stopped supervisor restarts nothing."""
import signal
import subprocess
import sys
import time

from p4reduce.mininet_topos.supervisor import Supervisor, exit_reason

EXITS_AT_ONCE = [sys.executable, "-c", "raise SystemExit(3)"]
EXITS_SOON = [sys.executable, "-c", "import time; time.sleep(0.3); raise SystemExit(3)"]
SLEEPS = [sys.executable, "-c", "import time; time.sleep(60)"]


class Proc:
    """What a session gives the supervisor: the current Popen and how to start it again."""

    def __init__(self, argv):
        self.argv = argv
        self.started = [subprocess.Popen(argv)]

    def current(self):
        return self.started[-1]

    def restart(self):
        self.started.append(subprocess.Popen(self.argv))
        return self.started[-1]

    def end(self):
        for p in self.started:
            if p.poll() is None:
                p.kill()
            p.wait()


def wait_until(cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def test_a_process_that_always_exits_is_restarted_n_times_then_given_up_and_said_once():
    said, recorded = [], []
    proc = Proc(EXITS_AT_ONCE)
    sup = Supervisor(said.append, on_restart=lambda: recorded.append(proc.current().pid),
                     max_restarts=3, window_s=60, backoff_s=0.01, poll_s=0.01)
    sup.watch("exiter", proc.current, proc.restart)
    sup.start()
    try:
        assert wait_until(lambda: any("not restarted" in s for s in said), 30), said
        time.sleep(0.5)       # more polls of the dead process: nothing more is said or started
    finally:
        sup.stop()
        proc.end()
    assert len(proc.started) == 4, said                        # the first start + 3 restarts
    restarted = [s for s in said if "restarted as" in s]
    given_up = [s for s in said if "not restarted" in s]
    assert len(restarted) == 3 and len(given_up) == 1 and len(said) == 4, said
    for n, (line, new) in enumerate(zip(restarted, proc.started[1:]), 1):
        assert f"(pid {proc.started[n - 1].pid}) exited (status 3); restarted as pid {new.pid} " \
               f"(restart {n} of 3 within 60 s)" in line, line
    assert f"(pid {proc.started[-1].pid}) exited (status 3); not restarted" in given_up[0]
    assert recorded == [p.pid for p in proc.started[1:]]      # every new pid recorded


def test_restarts_outside_the_window_do_not_count():
    said = []
    proc = Proc(EXITS_SOON)      # lives longer than the window: each restart is the only one in it
    sup = Supervisor(said.append, max_restarts=1, window_s=0.1, backoff_s=0.01, poll_s=0.01)
    sup.watch("exiter", proc.current, proc.restart)
    sup.start()
    try:
        assert wait_until(lambda: len(proc.started) >= 4, 30), said
    finally:
        sup.stop()
        proc.end()
    assert not any("not restarted" in s for s in said), said
    assert all("(restart 1 of 1 " in s for s in said), said


def test_a_killed_process_is_restarted_and_a_stopped_supervisor_restarts_nothing():
    said = []
    proc = Proc(SLEEPS)
    sup = Supervisor(said.append, backoff_s=0.01, poll_s=0.01)
    sup.watch("sleeper", proc.current, proc.restart)
    sup.start()
    try:
        first = proc.current()
        first.send_signal(signal.SIGKILL)
        assert wait_until(lambda: len(proc.started) == 2, 10), said
        assert said == [f"*** sleeper (pid {first.pid}) exited (SIGKILL); restarted as pid "
                        f"{proc.started[1].pid} (restart 1 of 5 within 60 s)"], said
        sup.stop()                              # a deliberate stop: what dies now stays dead
        proc.current().send_signal(signal.SIGKILL)
        time.sleep(0.3)
        assert len(proc.started) == 2 and len(said) == 1, said
    finally:
        sup.stop()
        proc.end()


def test_exit_reasons_name_the_signal():
    assert exit_reason(-9) == "SIGKILL" and exit_reason(-15) == "SIGTERM" and exit_reason(2) == "status 2"


def test_the_new_pid_is_recorded_before_the_restart_is_said():
    """Whoever reacts to the line (a user, `make stop`, a test) finds the new PID already recorded."""
    recorded, seen_when_said = [], []
    proc = Proc(EXITS_SOON)
    sup = Supervisor(lambda line: seen_when_said.append((line, list(recorded))),
                     on_restart=lambda: recorded.append(proc.current().pid),
                     max_restarts=1, window_s=60, backoff_s=0.01, poll_s=0.01)
    sup.watch("exiter", proc.current, proc.restart)
    sup.start()
    try:
        assert wait_until(lambda: any("restarted as" in line for line, _ in seen_when_said), 30), seen_when_said
    finally:
        sup.stop()
        proc.end()
    line, recorded_then = next((line, r) for line, r in seen_when_said if "restarted as" in line)
    assert recorded_then == [proc.started[1].pid], (line, recorded_then)
