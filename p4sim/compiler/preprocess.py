"""Run the system C preprocessor as p4c does, and map output lines back to source files.

p4c runs ``cpp -undef -nostdinc -x assembler-with-cpp`` with its own include directory; we do the
same with p4sim's include directory (core.p4, v1model.p4). cpp's ``# LINE "FILE"`` markers are
turned into a line map, and the marker lines are blanked so the text keeps its line numbering.
"""
import os
import re
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Sequence

from .diagnostics import CompileError, Pos
from .limits import CPP_CPU_SECONDS, CPP_MEMORY_KIB, CPP_WALL_SECONDS, MAX_PREPROCESSED_BYTES

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
SHELL = "/bin/sh"
_MARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"((?:\\.|[^"\\])*)"')


class Source:
    """Preprocessed text plus, for each output line, the (file, line) it came from."""

    def __init__(self, text: str, line_map: list[tuple[str, int]], main_file: str) -> None:
        self.text = text
        self.line_map = line_map
        self.main_file = main_file

    def pos(self, line: int, col: int) -> Pos:
        """Original position of 1-based (line, col) in the preprocessed text."""
        if 1 <= line <= len(self.line_map):
            f, l = self.line_map[line - 1]
            return Pos(f, l, col)
        return Pos(self.main_file, line, col)


def preprocess(path: str, include_dirs: Sequence[str] = (), defines: Sequence[str] = (),
               undefines: Sequence[str] = (), cpp: str | None = None) -> Source:
    """Preprocess ``path``; raise CompileError with cpp's own message if it fails, or located at
    the line being expanded when cpp's output, memory or time passes the limits (limits.py)."""
    cpp = cpp or shutil.which("cpp")
    if cpp is None:
        raise CompileError("the C preprocessor 'cpp' was not found on PATH (Debian package 'cpp')")
    if not os.path.isfile(path):
        raise CompileError(f"{path}: no such file")
    cmd = [cpp, "-undef", "-nostdinc", "-x", "assembler-with-cpp", "-I", INCLUDE_DIR]
    for d in include_dirs:
        cmd += ["-I", d]
    cmd += ["-D__p4sim__", "-D__TARGET_BMV2__", "-D__v1model_version=20200408"]
    for d in defines:
        cmd += ["-D", d]
    for u in undefines:
        cmd += ["-U", u]
    cmd.append(path)
    out, err, status = _run_bounded(cmd)
    if status == "too_big":
        where = _last_position(out, path)
        raise CompileError(f"the preprocessed program is larger than {MAX_PREPROCESSED_BYTES >> 20} MiB "
                           f"(a macro that expands too much?)", where)
    if status in ("memory", "time"):
        where = _last_position(out, path)
        what = (f"more than {CPP_MEMORY_KIB >> 10} MiB of memory" if status == "memory"
                else f"more than {CPP_CPU_SECONDS} s")
        raise CompileError(f"the preprocessor needed {what} here (a macro that expands too much?)", where)
    if status != "ok":
        raise _CppFailed(err.strip() or f"cpp failed ({status})")
    return parse_markers(out, path)


# cpp processes running now (for p4sim-compile's Ctrl-C handler: kill_running)
_running: set[subprocess.Popen] = set()
_running_lock = threading.Lock()


def kill_running() -> None:
    """Kill every cpp started by preprocess() that is still running."""
    with _running_lock:
        procs = list(_running)
    for p in procs:
        _kill_group(p)


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill cpp and its cc1 (cpp leads a process group of its own)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


_STDERR_CAP = 64 << 10


def _run_bounded(cmd: list[str]) -> tuple[str, str, str]:
    """Run cpp under ulimits, reading at most MAX_PREPROCESSED_BYTES of its output.

    Returns (stdout read so far, stderr, status), status "ok", "too_big", "memory", "time" or
    "exit N" (cpp's own error)."""
    # sh sets the limits on itself and execs cpp, so they hold for cpp's cc1 child from its start
    # (a limit set from here after the start would race with the driver's fork)
    wrapper = [SHELL, "-c", f"ulimit -v {CPP_MEMORY_KIB} 2>/dev/null; ulimit -t {CPP_CPU_SECONDS} 2>/dev/null; "
               'exec "$0" "$@"', *cmd]
    try:
        # cpp needs nothing preloaded; a sanitizer runtime preloaded into this process (the native
        # backend's fuzz tests) cannot reserve its shadow memory under the memory limit
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
        proc = subprocess.Popen(wrapper, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, env=env)
    except OSError as e:
        raise CompileError(f"cannot run the C preprocessor: {e.strerror}") from None
    with _running_lock:
        _running.add(proc)
    assert proc.stdout is not None and proc.stderr is not None
    err_chunks: list[bytes] = []

    def drain_stderr() -> None:
        assert proc.stderr is not None
        size = 0
        while True:
            b = proc.stderr.read1(65536) if hasattr(proc.stderr, "read1") else proc.stderr.read(65536)
            if not b:
                return
            if size < _STDERR_CAP:
                err_chunks.append(b[:_STDERR_CAP - size])
            size += len(b)
    t = threading.Thread(target=drain_stderr, daemon=True)
    t.start()
    chunks: list[bytes] = []
    size = 0
    status = "ok"
    deadline = time.monotonic() + CPP_WALL_SECONDS
    fd = proc.stdout.fileno()
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                status = "time"
                break
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            b = os.read(fd, 1 << 16)
            if not b:
                break
            chunks.append(b)
            size += len(b)
            if size > MAX_PREPROCESSED_BYTES:
                status = "too_big"
                break
    finally:
        if status != "ok":
            _kill_group(proc)
        proc.stdout.close()
        rc = proc.wait()
        t.join(5)
        with _running_lock:
            _running.discard(proc)
    err = b"".join(err_chunks).decode("utf-8", "replace")
    out = b"".join(chunks).decode("utf-8", "replace")
    if status == "ok" and rc != 0:
        if rc in (-signal.SIGXCPU, -signal.SIGKILL) or "out of time" in err:
            status = "time"
        elif "out of memory" in err or "memory exhausted" in err or rc == -signal.SIGSEGV:
            status = "memory"
        else:
            status = f"exit {rc}"
    return out, err, status


def _last_position(partial: str, main_file: str) -> Pos:
    """The source line cpp was expanding when it was stopped: the last line of its output so far."""
    src = parse_markers(partial, main_file)
    for f, line in reversed(src.line_map):
        if line > 0:
            return Pos(f, line, 1)
    return Pos(main_file, 1, 1)


class _CppFailed(CompileError):
    """cpp already printed file:line:col diagnostics; pass them through unchanged."""

    def render(self):
        return self.message


def parse_markers(text: str, main_file: str) -> Source:
    """Blank cpp line markers and build the output-line -> (file, line) map."""
    lines = text.split("\n")
    line_map = []
    cur_file, cur_line = main_file, 1
    for i, ln in enumerate(lines):
        if ln.startswith("#"):
            m = _MARKER.match(ln)
            if m:
                cur_line = int(m.group(1))
                cur_file = m.group(2).encode().decode("unicode_escape")
                lines[i] = ""
                line_map.append((cur_file, 0))
                continue
            if re.match(r"^#\s*pragma\b", ln):
                lines[i] = ""
        line_map.append((cur_file, cur_line))
        cur_line += 1
    return Source("\n".join(lines), line_map, main_file)
