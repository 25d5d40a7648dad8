"""Which engine runs a program: native (generated C) or the Python engine.

    Switch(bmv2_json, cpu_port=None, drop_port=511, backend=None)

backend: "native", "python", or None for the default: $P4SIM_BACKEND when set, else native when
a C compiler is installed, else python (one notice in the log).  A program the native
backend cannot run yet runs on the Python engine, with one log line saying why; a program
neither engine accepts raises the Python engine's ProgramError.
"""
from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, TypeAlias

from ..errors import EngineError
from ..switch import Switch as PythonSwitch
from . import toolchain
from .errors import NativeBuildError, NativeUnsupported

if TYPE_CHECKING:
    from .switch import NativeSwitch

log = logging.getLogger("p4sim.engine")

BACKENDS = ("native", "python")
ENV = "P4SIM_BACKEND"
# what Switch() returns: both share ControlAPI (tables, registers, ...) and process()
Engine: TypeAlias = "PythonSwitch | NativeSwitch"

fallbacks: list[str] = []     # why programs fell back to Python in this process (tests read it)
_noticed: set[str] = set()


def default_backend() -> str:
    env = os.environ.get(ENV, "").strip().lower()
    if env:
        if env not in BACKENDS:
            raise EngineError(f"{ENV}={env!r}: expected 'native' or 'python'")
        return env
    if toolchain.compiler() is None:
        if "no-cc" not in _noticed:
            _noticed.add("no-cc")
            log.warning("p4sim: no C compiler (gcc) found: packets run on the Python engine "
                        "(install gcc, e.g. `make setup`, for the native backend)")
        return "python"
    return "native"


def engine_label(engine: object) -> str:
    """What runs an engine's packets, for people: 'native backend (generated C)' or 'Python engine'
    (with the reason when the native backend gave the program up)."""
    if getattr(engine, "backend", "python") == "native":
        return "native backend (generated C)"
    why = getattr(engine, "native_fallback", None)
    return f"Python engine (the native backend cannot run this program: {why})" if why else "Python engine"


def Switch(bmv2_json: dict | str | bytes | os.PathLike, cpu_port: int | None = None, drop_port: int = 511,
           backend: str | None = None) -> Engine:
    """A v1model switch running `bmv2_json` on the chosen backend (see module docs)."""
    choice = default_backend() if backend is None else backend
    if choice not in BACKENDS:
        raise EngineError(f"backend must be 'native' or 'python', got {backend!r}")
    if choice == "python":
        return PythonSwitch(bmv2_json, cpu_port=cpu_port, drop_port=drop_port)
    from .switch import NativeSwitch
    try:
        return NativeSwitch(bmv2_json, cpu_port=cpu_port, drop_port=drop_port)
    except (NativeUnsupported, NativeBuildError) as exc:
        sw = PythonSwitch(bmv2_json, cpu_port=cpu_port, drop_port=drop_port)
        log.warning("p4sim: the native backend cannot run this program (%s); it runs on the Python engine", exc)
        fallbacks.append(str(exc))
        sw.native_fallback = str(exc)
        return sw
