"""What a `make run` left running, recorded so that `make stop` can end exactly that.

`run/state.json` lists the processes (PID plus the start of their command line, so a PID reused by
an unrelated process is never signalled), the root-namespace interfaces and the nftables table the
run created. `stop_recorded()` ends those and nothing else (never a global Mininet cleanup, never a kill
by process name).
"""
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

STATE_FILE = Path("run") / "state.json"


def cmdline(pid: int) -> str | None:
    """The process's command line, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def process_record(pid: int, role: str, settle_s: float = 2.0) -> dict:
    """A state-file entry for `pid`, with the command line it runs.

    A process started a moment ago may still be inside execve: the kernel closes the parent's
    close-on-exec pipe (so Popen has returned) before it maps the new arguments, and
    /proc/PID/cmdline reads empty for that instant. An empty record could never be matched again,
    so `make stop` would leave the process running; wait (bounded) until the arguments appear.
    """
    deadline = time.monotonic() + settle_s
    line = cmdline(pid)
    while line == "" and time.monotonic() < deadline:
        time.sleep(0.005)
        line = cmdline(pid)
    return {"pid": pid, "role": role, "cmdline": (line or "")[:200]}


def write_state(processes: list[dict], interfaces: list[str], nft_tables: list[str],
                path: str | Path = STATE_FILE) -> None:
    """Written whole or not at all (a temporary file renamed over it): `make stop` or a test may
    read it while a restart rewrites it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".state.", dir=path.parent)
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps({"owner_pid": os.getpid(), "processes": processes,
                              "interfaces": interfaces, "nft_tables": nft_tables}, indent=2) + "\n")
    os.replace(tmp, path)


def anything_alive(path: str | Path = STATE_FILE) -> bool:
    """True when a state file lists a process that still runs (a session not yet stopped)."""
    path = Path(path)
    if not path.is_file():
        return False
    return any(_same_process(r) for r in json.loads(path.read_text()).get("processes", []))


def _same_process(record: dict) -> bool:
    now = cmdline(record["pid"])
    return bool(now and record.get("cmdline") and now.startswith(record["cmdline"][:80]))


def _signal(pid: int, sig) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def stop_recorded(path: str | Path = STATE_FILE, grace_s: float = 5.0,
                  log: Callable[..., None] = print) -> int:
    """End what the state file lists; returns how many processes were signalled."""
    path = Path(path)
    if not path.is_file():
        log(f"stop: nothing to stop ({path} not found)")
        return 0
    state = json.loads(path.read_text())
    records = state.get("processes", [])
    # The session first: its own shutdown is the most thorough (it stops switches, controller, hosts).
    sessions = [r for r in records if r["role"] == "session" and _same_process(r)]
    for record in sessions:
        log(f"stop: {record['role']} (pid {record['pid']})")
        _signal(record["pid"], signal.SIGTERM)
    _wait_gone(sessions, 3 * grace_s)
    live = [r for r in records if r["role"] != "session" and _same_process(r)]
    for record in live:
        log(f"stop: {record['role']} (pid {record['pid']})")
        _signal(record["pid"], signal.SIGTERM)
    _wait_gone(live, grace_s)
    for record in sessions + live:
        if _same_process(record):
            _signal(record["pid"], signal.SIGKILL)
    for intf in state.get("interfaces", []):
        if Path(f"/sys/class/net/{intf}").exists():
            subprocess.run(["ip", "link", "del", intf], capture_output=True)
    for table in state.get("nft_tables", []):
        subprocess.run(["nft", "delete", "table", "netdev", table], capture_output=True)
    path.unlink(missing_ok=True)
    return len(sessions) + len(live)


def _wait_gone(records, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_same_process(r) for r in records):
        time.sleep(0.1)
