"""Round trip: every program of ../shared/p4-reference compiled by p4sim-compile and run on p4sim's
engine gives what real simple_switch_grpc gave (packets byte for byte, then counters, direct
counters and table entries read back), and what the engine gives with real p4c's JSON."""
import pytest

from p4sim.compiler import compile_file
from tests.p4sim.engine.reference_case import NAMES, Case


@pytest.fixture(params=NAMES, scope="module")
def compiled(request, reference_dir):
    case = Case(reference_dir, request.param)
    result = compile_file(str(case.source))
    return case, result


def test_packets_match_simple_switch(compiled):
    case, result = compiled
    sw = case.switch(result.bmv2)
    for i, got, want in case.packets(sw):
        assert got == want, f"{case.name} packet {i}"
    assert sw.stats["internal_errors"] == 0, sw.last_internal_error


def test_reads_match_simple_switch(compiled):
    case, result = compiled
    sw = case.switch(result.bmv2)
    case.packets(sw)
    for key, (mine, theirs) in case.reads(sw, result.p4info).items():
        assert mine == theirs, f"{case.name} {key}"


def test_registers_equal_with_p4c_json(compiled):
    case, result = compiled
    ours, theirs = case.switch(result.bmv2), case.switch(case.p4c_json_path)
    case.packets(ours)
    case.packets(theirs)
    assert sorted(ours.program.registers) == sorted(theirs.program.registers)
    for reg in ours.program.registers:
        assert ours.register_read(reg) == theirs.register_read(reg), reg
