"""Every program of p4src/ and examples/p4/, compiled by p4sim-compile, pushed over P4Runtime:
the P4Info binds to the JSON and every table and its default entry are readable."""
import json
import pathlib

import pytest
from p4.v1 import p4runtime_pb2

REPO = pathlib.Path(__file__).resolve().parents[3]
PROGRAMS = sorted(REPO.glob("examples/p4/*.p4")) + [REPO / "p4reduce" / "p4src" / "p4reduce.p4"]


@pytest.mark.parametrize("path", [p for p in PROGRAMS if p.exists()], ids=lambda p: p.stem)
def test_compiled_program_binds(harness, path):
    from p4sim.compiler import CompileError, compile_file
    try:
        result = compile_file(str(path))
    except CompileError as exc:
        pytest.fail(f"p4sim-compile rejected {path.name}: {exc}")
    client = harness.client()
    client.set_pipeline(result.p4info, json.dumps(result.bmv2).encode())
    for table in result.p4info.tables:
        request = p4runtime_pb2.TableEntry(table_id=table.preamble.id, is_default_action=True)
        (default,) = client.read(p4runtime_pb2.Entity(table_entry=request))
        assert default.table_entry.is_default_action
        if table.HasField("initial_default_action"):
            assert default.table_entry.action.action.action_id == table.initial_default_action.action_id
    everything = client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
    assert all(e.table_entry.table_id in {t.preamble.id for t in result.p4info.tables} for e in everything)
