"""The engine against real simple_switch_grpc: the three ground-truth programs of ../shared/p4-reference.

Each case loads real p4c's JSON, installs the case's control-plane state (p4runtime-shell names and
value strings), sends the packets in order and compares every output packet byte for byte, then the
counters read back over P4Runtime.

One artefact of how the ground truth was captured: the capture sockets had VLAN offload on, so
Linux removed 802.1Q tags (TPID 0x8100 + TCI, 4 bytes at offset 12) from captured output frames.
`_as_captured` applies the same removal to our output before comparing; nothing else is normalized.
"""
import json

import pytest
from google.protobuf import text_format
from p4.v1 import p4runtime_pb2

from p4reduce.p4sim.engine import Switch

CASES = ["fwd_basic", "parse_mix", "agg_mini"]


def _as_captured(frame):
    if len(frame) >= 18 and frame[12:14] == b"\x81\x00":
        return frame[:12] + frame[16:]
    return frame


def _load_case(reference_dir, name):
    sw = Switch(reference_dir / "p4c-out" / f"{name}.json")
    case = json.loads((reference_dir / "programs" / f"{name}.case.json").read_text())
    expected = json.loads((reference_dir / "expected" / f"{name}.json").read_text())
    handles = {}
    for e in case.get("entries", []):
        h = sw.table_add(e["table"], e["match"], e["action"], e.get("params", {}), e.get("priority"))
        handles.setdefault(e["table"], []).append(h)
    for d in case.get("defaults", []):
        sw.table_set_default(d["table"], d["action"], d.get("params", {}))
    for m in case.get("multicast", []):
        sw.mc_group_set(m["group"], [tuple(r) for r in m["replicas"]])
    for c in case.get("clone_sessions", []):
        sw.clone_session_set(c["session"], [tuple(r) for r in c["replicas"]])
    return sw, case, expected


@pytest.mark.parametrize("name", CASES)
def test_packets_match_simple_switch(reference_dir, name):
    sw, case, expected = _load_case(reference_dir, name)
    assert len(case["packets"]) == len(expected["packets"])
    for i, ((port, hexin), exp) in enumerate(zip(case["packets"], expected["packets"])):
        assert exp["in"] == [port, hexin]
        got = sorted([p, _as_captured(b).hex()] for p, b in sw.process(port, bytes.fromhex(hexin)))
        assert got == sorted(exp["out"]), f"{name} packet {i} (port {port})"
    assert sw.stats["internal_errors"] == 0, sw.last_internal_error


def test_fwd_basic_counters_match(reference_dir):
    sw, case, expected = _load_case(reference_dir, "fwd_basic")
    for port, hexin in case["packets"]:
        sw.process(port, bytes.fromhex(hexin))
    reads = expected["reads"]
    for index, (packets, nbytes) in reads["counter:Ing.drops"].items():
        assert sw.counter_read("Ing.drops", int(index)) == (packets, nbytes), f"Ing.drops[{index}]"
    # direct counter: entries identified by their P4Runtime match (field_id 1 = first key field)
    got = {}
    for entry in sw.table_entries("Ing.routes"):
        value, plen = entry.match["hdr.ip.dst"]
        got[(value, plen)] = sw.direct_counter_read("Ing.routes", entry.handle)
    want = {}
    for text, packets, nbytes in reads["direct:Ing.lpm_hits"]:
        fm = text_format.Parse(text, p4runtime_pb2.FieldMatch())
        assert fm.field_id == 1
        want[(int.from_bytes(fm.lpm.value, "big"), fm.lpm.prefix_len)] = (packets, nbytes)
    assert got == want


def test_trace_does_not_change_results(reference_dir):
    """The traced code variant must behave exactly like the plain one."""
    for name in CASES:
        plain, case, _ = _load_case(reference_dir, name)
        traced, _, _ = _load_case(reference_dir, name)
        lines = []
        traced.trace = lines.append
        for port, hexin in case["packets"]:
            data = bytes.fromhex(hexin)
            assert traced.process(port, data) == plain.process(port, data)
        assert any("Parser 'parser' entering state 'start'" in line for line in lines)
        assert any("Pipeline 'ingress': start" in line for line in lines)
