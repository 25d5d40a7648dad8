"""Keep what a session started running: restart a switch target or the controller that dies.

A `Supervisor` thread watches the Popen objects a session started (each switch's P4 target, the
controller). When one exits while the session runs (not during its stop(), which stops the
supervisor first), it is started again with the same command line, ports and log file (appended),
after a short backoff; at most `max_restarts` times within `window_s` seconds per process, after
which the supervisor gives up on that process and says so. Every event is said once, through
`say` (the run CLI's output). The restart itself is the watched object's own (`P4Switch.restart`,
`ControllerProcess.restart`): the switch re-attaches to the same interfaces (`-i PORT@IFACE`),
and the controller reconnects and restores the pipeline, forwarding and jobs on its own
(controller/recovery.py, controller/service.py).

It signals nothing and finds nothing by name: it only polls the Popen objects it was given.
"""
from __future__ import annotations

import collections
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_RESTARTS = 5          # per process ...
WINDOW_S = 60.0           # ... within this many seconds; then it is given up
BACKOFF_S = 0.5           # before the first restart in a window; doubled for each further one
MAX_BACKOFF_S = 4.0
POLL_S = 0.2


def exit_reason(returncode: int) -> str:
    """'SIGKILL' for a process killed by a signal, 'status 3' for one that exited."""
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"status {returncode}"


@dataclass
class Watched:
    """One supervised process: `process()` its current Popen (None: not started), `restart()`
    starts it again and returns the new Popen."""

    name: str
    process: Callable[[], subprocess.Popen | None]
    restart: Callable[[], subprocess.Popen]
    restarts: collections.deque = field(default_factory=collections.deque)   # monotonic times
    given_up: bool = False


class Supervisor:
    def __init__(self, say: Callable[[str], None], on_restart: Callable[[], None] | None = None,
                 max_restarts: int = MAX_RESTARTS, window_s: float = WINDOW_S, backoff_s: float = BACKOFF_S,
                 max_backoff_s: float = MAX_BACKOFF_S, poll_s: float = POLL_S):
        self.say = say
        self.on_restart = on_restart or (lambda: None)   # e.g. record the new PIDs
        self.max_restarts = max_restarts
        self.window_s = window_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.poll_s = poll_s
        self.watched: list[Watched] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, name: str, process: Callable[[], subprocess.Popen | None],
              restart: Callable[[], subprocess.Popen]) -> None:
        self.watched.append(Watched(name, process, restart))

    def start(self) -> Supervisor:
        self._thread = threading.Thread(target=self._run, name="supervisor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (before a deliberate stop of the processes: nothing is restarted after
        this returns)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            for w in self.watched:
                if self._stop.is_set():
                    return
                if not w.given_up:
                    self._check(w)

    def _check(self, w: Watched) -> None:
        proc = w.process()
        if proc is None or proc.poll() is None:
            return
        now = time.monotonic()
        while w.restarts and now - w.restarts[0] > self.window_s:
            w.restarts.popleft()
        died = f"{w.name} (pid {proc.pid}) exited ({exit_reason(proc.returncode)})"
        if len(w.restarts) >= self.max_restarts:
            w.given_up = True
            self.say(f"*** {died}; not restarted: it was restarted {len(w.restarts)} times within "
                     f"{self.window_s:g} s (giving up on it)")
            return
        backoff = min(self.backoff_s * 2 ** len(w.restarts), self.max_backoff_s)
        if self._stop.wait(backoff):
            return               # the session is stopping: never restart then
        w.restarts.append(time.monotonic())
        nth = len(w.restarts)
        try:
            new = w.restart()
        except Exception as e:   # OSError from Popen, the target not found, ...: counts as a restart
            self.say(f"*** {died}; restart {nth} of {self.max_restarts} failed: {e}")
            return
        recorded: Exception | None = None
        try:                     # recorded before it is said: whoever reads the line finds the new pid
            self.on_restart()
        except Exception as e:   # recording the PIDs must never stop the supervision
            recorded = e
        self.say(f"*** {died}; restarted as pid {new.pid} (restart {nth} of {self.max_restarts} "
                 f"within {self.window_s:g} s)")
        if recorded is not None:
            self.say(f"*** could not record the restarted {w.name}'s pid: {recorded}")
