"""The project's own P4 program (p4src/p4reduce.p4) compiles cleanly and loads in the engine."""
import pathlib

import pytest

from p4reduce.p4sim.compiler import compile_file

P4SRC = pathlib.Path(__file__).resolve().parents[2] / "p4src" / "p4reduce.p4"


@pytest.fixture(scope="module")
def result():
    return compile_file(str(P4SRC))


def test_p4reduce_compiles_without_warnings(result):
    assert result.warnings == []
    names = {t.preamble.name for t in result.p4info.tables}
    assert names, "p4reduce has control-plane tables"
    assert all(n.count(".") >= 1 for n in names)
    assert result.p4info.registers, "p4reduce keeps its aggregation state in registers"


def test_p4reduce_loads_in_engine(result):
    from p4reduce.p4sim import engine
    sw = engine.Switch(result.bmv2)
    assert set(sw.program.registers) == {r.preamble.name for r in result.p4info.registers}
    assert {t.preamble.name for t in result.p4info.tables} <= set(sw.program.tables)
