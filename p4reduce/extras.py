"""The pip extras, named where they are missing.

A plain `pip install p4reduce` is a worker host. The controller's and p4sim's commands need the
`controller` extra; started without it they say so in one line (the extra to install and the
module that is missing) instead of ending in a ModuleNotFoundError traceback.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "controller": ("grpc", "google.protobuf", "p4.v1.p4runtime_pb2", "thrift", "bm_runtime", "yaml", "lark",
                   "scapy"),
    "shell": ("p4runtime_sh",),
    "torch": ("torch",),
}
"""The modules each extra brings that some command imports (pyproject.toml lists the packages)."""


class MissingExtra(ImportError):
    """A command needs an extra that is not installed."""


def _present(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):      # a parent package missing, or a broken one
        return False


def missing(extra: str) -> list[str]:
    """The modules of `extra` that cannot be imported here (empty when it is installed)."""
    return [m for m in EXTRA_MODULES[extra] if not _present(m)]


def require(extra: str, command: str) -> None:
    """Raise MissingExtra naming the extra and the first missing module, if any is missing."""
    gone = missing(extra)
    if gone:
        raise MissingExtra(f"{command} needs the '{extra}' extra (module {gone[0]!r} is not installed): "
                           f"pip install 'p4reduce[{extra}]'")


def _console(extra: str, command: str, target: str) -> Callable[[], int]:
    def main() -> int:
        try:
            require(extra, command)
        except MissingExtra as e:
            print(f"{command}: error: {e}", file=sys.stderr)
            return 2
        module, _, name = target.partition(":")
        entry: Callable[[], int] = getattr(importlib.import_module(module), name)
        return entry()
    main.__doc__ = f"The {command} command, once the {extra!r} extra is known to be installed."
    return main


controller_main = _console("controller", "p4reduce-controller", "p4reduce.controller.cli:main")
p4sim_compile_main = _console("controller", "p4sim-compile", "p4sim.compile:main")
p4sim_switch_main = _console("controller", "p4sim-switch", "p4sim.simple_switch:main")
