"""Fixtures for the data-plane tests: p4src/p4reduce.p4 compiled once per session by
p4sim-compile and loaded into p4sim's in-process engine."""
import pytest

from p4reduce.protocol.program import compile_program
from testbed.fabric import Fabric


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    json_path, _ = compile_program(tmp_path_factory.mktemp("p4reduce"))
    return json_path


@pytest.fixture
def fabric(compiled):
    from p4reduce.p4sim.engine import Switch
    return Fabric(Switch(str(compiled)))
