"""Fixtures for the worker tests: the P4 program on p4sim's engine, served over UDP on loopback."""
import pytest

from testbed.p4sim_udp import PROGRAM, REPO, P4SimUdpSwitch, compile_program  # noqa: F401 - used by tests


@pytest.fixture(scope="session")
def p4reduce_json():
    """p4src/p4reduce.p4 compiled by p4sim-compile; a program that does not compile fails the tests."""
    from p4reduce.p4sim.compiler import CompileError
    try:
        return compile_program()
    except CompileError as e:
        pytest.fail(f"p4src/p4reduce.p4 does not compile with p4sim-compile: {str(e)[:300]}")
