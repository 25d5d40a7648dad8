"""Run one command per Mininet host and follow the JSON-line events they print.

Used by the demo and the end-to-end tests: every worker prints one JSON object per line
(`{"event": "progress", ...}`, `{"event": "result", ...}`); other lines are kept as log text. The
wait is bounded: a worker that has not finished by the deadline is killed (by PID) and reported.
"""
import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

EventHandler = Callable[["HostRun", dict[str, Any]], None]   # (run, event) as events arrive


@dataclass
class HostRun:
    """One command running on a Mininet host, and what it printed (JSON-line events, other text)."""
    host: str
    proc: subprocess.Popen
    events: list[dict] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    eof: bool = False
    _partial: bytes = b""

    @property
    def result(self) -> dict[str, Any] | None:
        found = [e for e in self.events if e.get("event") == "result"]
        return found[-1] if found else None

    @property
    def error(self) -> str | None:
        found = [e for e in self.events if e.get("event") == "error"]
        if found:
            return found[-1].get("message")
        if self.timed_out:
            return "timed out"
        if self.returncode:
            tail = "\n".join(self.text[-8:])
            return f"exited with status {self.returncode}" + (f":\n{tail}" if tail else "")
        return None

    def _feed(self, chunk: bytes, on_event: EventHandler | None) -> None:
        self._partial += chunk
        *lines, self._partial = self._partial.split(b"\n")
        for line in lines:
            self._line(line.decode(errors="replace").strip(), on_event)

    def _line(self, line: str, on_event):
        if not line:
            return
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if isinstance(event, dict):
                self.events.append(event)
                if on_event:
                    on_event(self, event)
                return
        self.text.append(line)


def start_on_hosts(hosts: Iterable[Any], command_for: Callable[[Any], list[str]],
                   env: dict[str, str] | None = None) -> list[HostRun]:
    """Start command_for(host) inside each host; stdout and stderr are merged and followed."""
    runs = []
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    for host in hosts:
        proc = host.popen(command_for(host), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, env=full_env)
        os.set_blocking(proc.stdout.fileno(), False)
        runs.append(HostRun(host.name, proc))
    return runs


def read_available(runs: list[HostRun], seconds: float, on_event: EventHandler | None = None) -> None:
    """Read what the processes print for up to `seconds` (returns early once all reached EOF)."""
    end = time.monotonic() + seconds
    while True:
        streams = {r.proc.stdout: r for r in runs if not r.eof and r.proc.stdout is not None}
        left = end - time.monotonic()
        if not streams or left <= 0:
            return
        ready, _, _ = select.select(list(streams), [], [], min(left, 0.5))
        for stream in ready:
            run = streams[stream]
            chunk = stream.read()
            if chunk is None:       # spurious wake-up
                continue
            if not chunk:
                run.eof = True
                run._feed(b"\n", on_event)
            else:
                run._feed(chunk, on_event)


def follow(runs: list[HostRun], timeout: float, on_event: EventHandler | None = None) -> list[HostRun]:
    """Read events until every process exits or the deadline passes (then kill what is left)."""
    read_available(runs, timeout, on_event)
    for run in runs:
        if not run.eof and run.proc.poll() is None:
            run.timed_out = True
            run.proc.send_signal(signal.SIGKILL)
        try:
            run.returncode = run.proc.wait(10)
        except subprocess.TimeoutExpired:
            run.returncode = None
        if run.proc.stdout is not None and not run.proc.stdout.closed:
            run.proc.stdout.close()
    return runs
