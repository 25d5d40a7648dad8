"""Let gloo's worker threads let go of their last collective before the interpreter ends.

torch 2.13's ProcessGroupGloo runs collectives on worker threads ("pt_gloo_runloop") that drop
their reference to a finished collective just *after* the caller has its result. When that is the
last reference to a tensor Python has seen, the thread must take the GIL; if the program has
meanwhile reached interpreter shutdown, the thread is ended inside a noexcept frame and the whole
process aborts ("terminate called without an active exception", exit -6) after it printed its
results. It happened to examples/ddp_torch.py on plain gloo in CI (1 rank of 4) and in about 1 run
in 12 here. An exit handler, run while the interpreter is still whole, releases the GIL for a
moment when such threads exist, so they finish first. Installed by whatever makes a gloo group:
the worker's host fallback, `import p4reduce.distributed`, the bench's gloo-only scripts.
"""
from __future__ import annotations

import atexit
import os
import time

__all__ = ["GRACE_SECONDS", "gloo_worker_threads", "install", "let_gloo_threads_finish"]

GRACE_SECONDS = 0.2          # a thread waiting for the GIL gets it within a few ms on a loaded host
_THREAD_NAME = "pt_gloo_runloop"
_installed = False


def gloo_worker_threads() -> int:
    """How many of this process's threads are gloo collective workers (Linux: /proc/self/task)."""
    n = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/comm", encoding="utf-8", errors="replace") as f:
                n += f.read().strip() == _THREAD_NAME
        except OSError:          # the thread ended meanwhile
            continue
    return n


def let_gloo_threads_finish(grace: float = GRACE_SECONDS) -> bool:
    """Release the GIL for `grace` seconds if gloo worker threads exist; True if it waited."""
    if gloo_worker_threads() == 0:
        return False
    time.sleep(grace)
    return True


def install() -> None:
    """Register the exit handler once per process."""
    global _installed
    if not _installed:
        _installed = True
        atexit.register(let_gloo_threads_finish)
