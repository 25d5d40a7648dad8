"""What the numbers were measured on: CPU, cores, memory, kernel, Python and key packages."""
from __future__ import annotations

import os
import platform
import shutil
import socket
from importlib import metadata


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _version(dist: str):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict:
    """A JSON-ready description of this machine and software stack."""
    uname = platform.uname()
    return {
        "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_gib": _mem_total_gib(),
        "kernel": uname.release,
        "os": platform.platform(),
        "python": platform.python_version(),
        "python_impl": platform.python_implementation(),
        "packages": {name: _version(name) for name in ("numpy", "torch", "mininet", "grpcio")},
        "simple_switch_grpc": shutil.which("simple_switch_grpc"),
        "loadavg": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
