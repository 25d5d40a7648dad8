"""Fixtures for the worker tests: the P4 program on p4sim's engine, served over UDP on loopback."""
import pathlib
import sys

import pytest

# Run as bare `pytest`, the repository root is not on sys.path and `import worker` would find this
# directory (tests/worker, a namespace package) instead of the real package: put the root first.
_ROOT = str(pathlib.Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
if getattr(sys.modules.get("worker"), "__file__", "") is None:
    for _name in [n for n in sys.modules if n == "worker" or n.startswith("worker.")]:
        del sys.modules[_name]

from worker.p4sim_udp import PROGRAM, REPO, P4SimUdpSwitch, compile_program  # noqa: F401 - used by tests


@pytest.fixture(scope="session")
def p4reduce_json():
    """p4src/p4reduce.p4 compiled by p4sim-compile; a program that does not compile fails the tests."""
    from p4sim.compiler import CompileError
    try:
        return compile_program()
    except CompileError as e:
        pytest.fail(f"p4src/p4reduce.p4 does not compile with p4sim-compile: {str(e)[:300]}")
