"""Fixtures for the worker tests: the P4 program on p4sim's engine, served over UDP on loopback."""
import pytest

from worker.p4sim_udp import PROGRAM, REPO, P4SimUdpSwitch, compile_program  # noqa: F401 - used by tests


@pytest.fixture(scope="session")
def p4reduce_json():
    """p4src/p4reduce.p4 compiled by p4sim-compile (skips while the dataplane program is absent)."""
    if not PROGRAM.exists():
        pytest.skip(f"{PROGRAM.relative_to(REPO)} does not exist yet")
    from p4sim.compiler import CompileError
    try:
        return compile_program()
    except CompileError as e:
        pytest.skip(f"p4src/p4reduce.p4 does not compile with p4sim yet: {str(e)[:300]}")
