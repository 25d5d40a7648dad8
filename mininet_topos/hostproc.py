"""Run one command per Mininet host and follow the JSON-line events they print.

Used by the demo and the end-to-end tests: every worker prints one JSON object per line
(`{"event": "progress", ...}`, `{"event": "result", ...}`); other lines are kept as log text. The
wait is bounded: a worker that has not finished by the deadline is killed (by PID) and reported.
"""
import json
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional


@dataclass
class HostRun:
    host: str
    proc: subprocess.Popen
    events: List[dict] = field(default_factory=list)
    text: List[str] = field(default_factory=list)
    returncode: Optional[int] = None
    timed_out: bool = False

    @property
    def result(self) -> Optional[dict]:
        found = [e for e in self.events if e.get("event") == "result"]
        return found[-1] if found else None

    @property
    def error(self) -> Optional[str]:
        found = [e for e in self.events if e.get("event") == "error"]
        if found:
            return found[-1].get("message")
        if self.timed_out:
            return "timed out"
        if self.returncode:
            tail = "\n".join(self.text[-8:])
            return f"exited with status {self.returncode}" + (f":\n{tail}" if tail else "")
        return None


def start_on_hosts(hosts, command_for: Callable, env: Optional[Dict[str, str]] = None) -> List[HostRun]:
    """Start command_for(host) inside each host; stdout and stderr are merged and followed."""
    runs = []
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    for host in hosts:
        proc = host.popen(command_for(host), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, env=full_env)
        runs.append(HostRun(host.name, proc))
    return runs


def follow(runs: List[HostRun], timeout: float, on_event: Callable[[HostRun, dict], None] = None) -> List[HostRun]:
    """Read events until every process exits or the deadline passes (then kill what is left)."""
    sel = selectors.DefaultSelector()
    buffers = {}
    for run in runs:
        os.set_blocking(run.proc.stdout.fileno(), False)
        sel.register(run.proc.stdout, selectors.EVENT_READ, run)
        buffers[run.host] = b""
    open_count = len(runs)
    deadline = time.monotonic() + timeout
    while open_count and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=min(0.5, max(0.0, deadline - time.monotonic()))):
            run = key.data
            chunk = run.proc.stdout.read()
            if not chunk:
                sel.unregister(key.fileobj)
                open_count -= 1
                chunk = b"\n"
            buffers[run.host] += chunk
            *lines, buffers[run.host] = buffers[run.host].split(b"\n")
            for line in lines:
                _line(run, line.decode(errors="replace"), on_event)
    for run in runs:
        if run.proc.poll() is None and open_count:
            run.timed_out = True
            run.proc.send_signal(signal.SIGKILL)
        try:
            run.returncode = run.proc.wait(10)
        except subprocess.TimeoutExpired:
            run.returncode = None
        run.proc.stdout.close()
    sel.close()
    return runs


def _line(run: HostRun, line: str, on_event):
    line = line.strip()
    if not line:
        return
    if line.startswith("{"):
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if isinstance(event, dict):
            run.events.append(event)
            if on_event:
                on_event(run, event)
            return
    run.text.append(line)
