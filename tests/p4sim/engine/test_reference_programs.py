"""The engine against real simple_switch_grpc on every program of ../shared/p4-reference, with real
p4c's JSON: every output packet byte for byte, then every read (counters, direct counters, table
entries with their priorities) as P4Runtime returned them. The same cases run on p4sim-compile's
JSON in tests/p4sim/compiler/test_roundtrip.py."""
import pytest

from .reference_case import NAMES, Case


@pytest.fixture(params=NAMES)
def case(request, reference_dir):
    return Case(reference_dir, request.param)


def test_packets_match_simple_switch(case):
    sw = case.switch(case.p4c_json_path)
    for i, got, want in case.packets(sw):
        assert got == want, f"{case.name} packet {i}"
    assert sw.stats["internal_errors"] == 0, sw.last_internal_error


def test_reads_match_simple_switch(case):
    sw = case.switch(case.p4c_json_path)
    case.packets(sw)
    for key, (mine, theirs) in case.reads(sw, case.p4c_p4info).items():
        assert mine == theirs, f"{case.name} {key}"


def test_trace_does_not_change_results(case):
    """The traced code variant must behave exactly like the plain one."""
    plain = case.switch(case.p4c_json_path)
    traced = case.switch(case.p4c_json_path)
    lines = []
    traced.trace = lines.append
    for port, hexin in case.case["packets"]:
        data = bytes.fromhex(hexin)
        assert traced.process(port, data) == plain.process(port, data)
    assert any("Parser 'parser' entering state 'start'" in line for line in lines)
    assert any("Pipeline 'ingress': start" in line for line in lines)
