"""The system C compiler and the cache of compiled programs.

Generated C is compiled once into a shared object named by the SHA-256 of everything that
decides its bytes (source, runtime sources, flags, compiler path and version) and kept in a
per-user cache directory, so loading the same program again costs a dlopen.

The cache is $P4SIM_CACHE_DIR, else $XDG_CACHE_HOME/p4sim/native, else ~/.cache/p4sim/native.
Code is loaded from it only if the directory is ours, mode 0700, and no directory above it can
be written by others (a world-writable parent must be sticky, as /tmp is); otherwise a private
temporary directory is used for this process.  Nothing is ever loaded from a path someone else
can write.
"""
import atexit
import ctypes
import functools
import hashlib
import logging
import os
import shutil
import stat
import subprocess
import tempfile
from importlib import resources

from .errors import NativeBuildError

log = logging.getLogger("p4sim.native")

RUNTIME_SOURCES = ("rt_core.c", "rt_tables.c", "rt_calc.c", "rt_ports.c")
RUNTIME_HEADERS = ("p4sim_rt.h", "p4sim_wide.h", "p4sim_tm.h")
BASE_FLAGS = ("-O2", "-fPIC", "-shared", "-std=gnu11", "-fvisibility=hidden", "-fno-strict-aliasing",
              "-pthread", "-w")
COMPILE_TIMEOUT = 300


def runtime_dir() -> str:
    return str(resources.files(__package__) / "runtime")


@functools.lru_cache(maxsize=1)
def compiler() -> tuple[str, str] | None:
    """(path, version line) of the C compiler, or None when there is none."""
    name = os.environ.get("P4SIM_CC")
    candidates = [name] if name else ["gcc", "cc"]
    for cand in candidates:
        path = shutil.which(cand)
        if not path:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0:
            return path, (out.stdout.splitlines() or ["?"])[0]
    return None


def extra_flags() -> tuple[str, ...]:
    """Flags added by P4SIM_NATIVE_CFLAGS (e.g. sanitizers in tests), space separated."""
    return tuple(os.environ.get("P4SIM_NATIVE_CFLAGS", "").split())


# ---- the cache directory -----------------------------------------------------------------------
def _configured_cache() -> str | None:
    if os.environ.get("P4SIM_CACHE_DIR"):
        return os.environ["P4SIM_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.environ.get("HOME")
        if not home:
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "p4sim", "native")


def _parents_safe(path: str) -> bool:
    """No directory above `path` lets others replace what is below it."""
    uid = os.geteuid()
    parent = os.path.dirname(path)
    while True:
        try:
            st = os.lstat(parent)
        except OSError:
            return False
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            return False
        if st.st_uid not in (0, uid):
            return False
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            return False
        if parent == os.path.dirname(parent):
            return True
        parent = os.path.dirname(parent)


def _own_private_dir(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()
            and not st.st_mode & (stat.S_IRWXG | stat.S_IRWXO))


@functools.lru_cache(maxsize=1)
def cache_dir() -> str:
    """The directory compiled objects live in (created on first use)."""
    wanted = _configured_cache()
    if wanted:
        wanted = os.path.abspath(wanted)
        try:
            real_parent = os.path.realpath(os.path.dirname(wanted))
            os.makedirs(real_parent, mode=0o700, exist_ok=True)
            path = os.path.join(real_parent, os.path.basename(wanted))
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                pass
            if _own_private_dir(path) and _parents_safe(path):
                return path
            log.warning("p4sim native cache %s is not private to this user (owner or mode); "
                        "using a temporary directory for this process", path)
        except OSError as exc:
            log.warning("p4sim native cache %s unusable (%s); using a temporary directory", wanted, exc)
    tmp = tempfile.mkdtemp(prefix="p4sim-native-")
    atexit.register(shutil.rmtree, tmp, True)
    return tmp


def _loadable(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
            and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


# ---- building ----------------------------------------------------------------------------------
def _digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        data = p if isinstance(p, bytes) else str(p).encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:32]


def _runtime_text() -> bytes:
    d = resources.files(__package__) / "runtime"
    return b"".join((d / name).read_bytes() for name in RUNTIME_HEADERS + RUNTIME_SOURCES)


def _compile(args: list[str], what: str):
    try:
        res = subprocess.run(args, capture_output=True, text=True, timeout=COMPILE_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise NativeBuildError(f"compiling {what} took more than {COMPILE_TIMEOUT} s") from None
    except OSError as exc:
        raise NativeBuildError(f"cannot run the C compiler: {exc}") from None
    if res.returncode != 0:
        lines = (res.stderr or res.stdout).strip().splitlines()
        errors = [line for line in lines if "error" in line][:5] or lines[:5]
        raise NativeBuildError(f"compiling {what} failed: " + " | ".join(errors))


def _compile_into(out: str, argv: list[str], what: str) -> None:
    """Run the compiler `argv` with its output in a temporary file of the private cache, then
    make it 0700 and rename it to `out`: a reader of the cache never sees a half-written file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{what}-", dir=cache_dir())
    os.close(fd)
    try:
        _compile([*argv, "-o", tmp], what)
        os.chmod(tmp, 0o700)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _build(kind: str, key: str, sources: list[str], extra: list[str]) -> str:
    out = os.path.join(cache_dir(), f"{kind}-{key}.so")
    if _loadable(out):
        return out
    cc = compiler()
    if cc is None:
        raise NativeBuildError("no C compiler (gcc or cc) on PATH")
    flags = list(BASE_FLAGS) + list(extra_flags())
    _compile_into(out, [cc[0], *flags, "-I", runtime_dir(), *sources, *extra], kind)
    return out


@functools.lru_cache(maxsize=4)
def _runtime_for(flags: tuple[str, ...]) -> tuple[str, ctypes.CDLL]:
    cc = compiler()
    if cc is None:
        raise NativeBuildError("no C compiler (gcc or cc) on PATH")
    key = _digest(_runtime_text(), cc, BASE_FLAGS, flags)
    d = runtime_dir()
    path = _build("rt", key, [os.path.join(d, name) for name in RUNTIME_SOURCES], [])
    return path, ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


def runtime() -> tuple[str, ctypes.CDLL]:
    """(path, library) of the compiled runtime, built once per cache."""
    return _runtime_for(extra_flags())


def build_program(source: str) -> ctypes.CDLL:
    """Compile (or find in the cache) and load one generated program."""
    rt_path, _ = runtime()
    cc = compiler()
    key = _digest(source, _runtime_text(), cc, BASE_FLAGS, extra_flags())
    c_path = os.path.join(cache_dir(), f"prog-{key}.c")
    so_path = os.path.join(cache_dir(), f"prog-{key}.so")
    if not _loadable(so_path):
        fd, tmp = tempfile.mkstemp(prefix=".prog-", suffix=".c", dir=cache_dir())
        with os.fdopen(fd, "w") as fh:
            fh.write(source)
        os.replace(tmp, c_path)
        _build("prog", key, [c_path], [rt_path])
    return ctypes.CDLL(so_path)


def build_executable(source: str, name: str) -> str:
    """Compile one standalone C program (e.g. the benchmarks' traffic generator) into the cache;
    -> the path of the executable."""
    cc = compiler()
    if cc is None:
        raise NativeBuildError("no C compiler (gcc or cc) on PATH")
    with open(source, "rb") as fh:
        text = fh.read()
    flags = ("-O2", "-std=gnu11", "-w")
    out = os.path.join(cache_dir(), f"{name}-{_digest(text, cc, flags)}")
    if _loadable(out):
        return out
    _compile_into(out, [cc[0], *flags, source], name)
    return out



def build_library(source: str, name: str, defines: dict[str, int] | None = None) -> str:
    """Compile one standalone C file into a shared library in the cache (e.g. the worker's
    native aggregation loop), with ``-DNAME=value`` for each of `defines`; -> its path."""
    cc = compiler()
    if cc is None:
        raise NativeBuildError("no C compiler (gcc or cc) on PATH")
    with open(source, "rb") as fh:
        text = fh.read()
    flags = list(BASE_FLAGS) + list(extra_flags()) + [f"-D{k}={int(v)}" for k, v in sorted((defines or {}).items())]
    out = os.path.join(cache_dir(), f"{name}-{_digest(text, cc, flags)}.so")
    if _loadable(out):
        return out
    _compile_into(out, [cc[0], *flags, source], name)
    return out
