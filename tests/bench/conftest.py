"""Fixtures for the benchmark harness's tests."""
import pytest

from p4reduce.p4src.build import compile_program


@pytest.fixture(scope="session")
def p4reduce_program(tmp_path_factory):
    """p4src/p4reduce.p4 compiled by p4sim-compile into a temporary directory (JSON + P4Info)."""
    return compile_program(tmp_path_factory.mktemp("p4reduce-build")).json_path


@pytest.fixture(scope="session")
def jumbo_program(tmp_path_factory):
    """The jumbo section's build (bench/grid.py JUMBO_DEFINES) in a temporary directory."""
    from lab.bench.grid import JUMBO_DEFINES
    return compile_program(tmp_path_factory.mktemp("jumbo-build"), JUMBO_DEFINES).json_path
