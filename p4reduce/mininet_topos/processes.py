"""Stopping the server processes a session started (switch targets, the controller), by the
Popen it holds: never by name, never anything it did not start."""
from __future__ import annotations

import signal
import subprocess


def stop_process(proc: subprocess.Popen | None, timeout: float = 5.0) -> None:
    """SIGTERM `proc` if it still runs, then SIGKILL it if it lingers past `timeout` seconds."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)
