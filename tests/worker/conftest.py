"""Fixtures for the worker tests: the P4 program on p4sim's engine, served over UDP on loopback."""
import pytest

from p4reduce.p4src.build import ProgramBuildError, compile_program


@pytest.fixture(scope="session")
def p4reduce_json(tmp_path_factory):
    """p4src/p4reduce.p4 compiled by p4sim-compile (the JSON's path); a program that does not
    compile fails the tests."""
    try:
        return str(compile_program(tmp_path_factory.mktemp("p4reduce")).json_path)
    except ProgramBuildError as e:
        pytest.fail(f"p4src/p4reduce.p4 does not compile with p4sim-compile: {str(e)[:300]}")
