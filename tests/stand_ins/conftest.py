"""Fixtures for the stand-ins' tests: p4src/p4reduce.p4 compiled once per session."""
import pytest

from p4reduce.p4src.build import compile_program


@pytest.fixture(scope="session")
def p4reduce_json(tmp_path_factory):
    return str(compile_program(tmp_path_factory.mktemp("p4reduce")).json_path)
