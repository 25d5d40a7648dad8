"""One case of ../shared/p4-reference run on p4sim's engine, compared with what real
simple_switch_grpc did: every output packet byte for byte, then every read (counters, direct
counters, table entries with their priorities) in P4Runtime form.

The capture sockets of the ground truth had VLAN offload on, so Linux removed 802.1Q tags from
captured output frames; `as_captured` applies the same removal to our output. Nothing else is
normalized.
"""
import json

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4sim.engine import Switch

NAMES = ["agg_mini", "fwd_basic", "hash_csum", "loopback", "match_kinds", "parse_mix", "rep_clone",
         "stacks_errors"]


def as_captured(frame):
    if len(frame) >= 18 and frame[12:14] == b"\x81\x00":
        return frame[:12] + frame[16:]
    return frame


def load_p4info(path):
    info = p4info_pb2.P4Info()
    text_format.Parse(path.read_text(), info)
    return info


class Case:
    """The case, what BMv2 did, and real p4c's outputs for one reference program."""

    def __init__(self, reference_dir, name):
        self.name = name
        self.case = json.loads((reference_dir / "programs" / f"{name}.case.json").read_text())
        self.expected = json.loads((reference_dir / "expected" / f"{name}.json").read_text())
        self.p4c_json_path = reference_dir / "p4c-out" / f"{name}.json"
        self.p4c_p4info = load_p4info(reference_dir / "p4c-out" / f"{name}.p4info.txtpb")
        self.source = reference_dir / "programs" / f"{name}.p4"

    def switch(self, program):
        """A switch running `program` (a BMv2 JSON dict or path) with the case's control-plane state."""
        sw = Switch(program, cpu_port=64)
        for e in self.case.get("entries", []):
            sw.table_add(e["table"], e["match"], e["action"], e.get("params", {}), e.get("priority"))
        for d in self.case.get("defaults", []):
            sw.table_set_default(d["table"], d["action"], d.get("params", {}))
        for m in self.case.get("multicast", []):
            sw.mc_group_set(m["group"], [tuple(r) for r in m["replicas"]])
        for c in self.case.get("clone_sessions", []):
            sw.clone_session_set(c["session"], [tuple(r) for r in c["replicas"]])
        return sw

    def packets(self, sw):
        """[(index, what we sent out of ports 1-4, what BMv2 sent)] for every packet, in order."""
        out = []
        assert len(self.case["packets"]) == len(self.expected["packets"])
        for i, ((port, hexin), exp) in enumerate(zip(self.case["packets"], self.expected["packets"])):
            assert exp["in"] == [port, hexin]
            got = sorted([p, as_captured(b).hex()] for p, b in sw.process(port, bytes.fromhex(hexin))
                         if 1 <= p <= 4)
            out.append((i, got, sorted(exp.get("out") or [])))
        return out

    def reads(self, sw, p4info):
        """{read name: (ours, BMv2's)} for every read of the expected results, both normalized."""
        out = {}
        for key, want in self.expected.get("reads", {}).items():
            kind, name = key.split(":", 1)
            if kind == "counter":
                mine = {i: list(sw.counter_read(name, int(i))) for i in want}
                out[key] = (mine, want)
            elif kind == "direct":
                table = _direct_table(p4info, name)
                mine = sorted((_match_key(sw, p4info, table, e), e.packets, e.bytes)
                              for e in sw.table_entries(table))
                theirs = sorted((_parse_matches(text), p, b) for text, p, b in want)
                out[key] = (mine, theirs)
            elif kind == "table":
                mine = sorted((_match_key(sw, p4info, name, e), _action_key(p4info, e), e.priority)
                              for e in sw.table_entries(name))
                theirs = sorted((_parse_matches(m), _parse_action(a), prio) for m, a, prio in want)
                out[key] = (mine, theirs)
            else:
                raise AssertionError(f"unknown read kind {kind!r} in the expected results")
        return out


def _direct_table(p4info, counter):
    dc = next(c for c in p4info.direct_counters if c.preamble.name == counter)
    return next(t.preamble.name for t in p4info.tables if t.preamble.id == dc.direct_table_id)


def _encode(value):
    """P4Runtime canonical bytes: the shortest big-endian form, zero as one byte."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def _match_key(sw, p4info, table, entry):
    """The entry's match as P4Runtime reads it back (wildcards omitted), serialized."""
    pt = next(t for t in p4info.tables if t.preamble.name == table)
    widths = {k.name: k.width for k in sw.program.tables[table].keys}
    out = []
    for mf in pt.match_fields:
        v = entry.match[mf.name]
        full = (1 << widths[mf.name]) - 1
        fm = p4runtime_pb2.FieldMatch(field_id=mf.id)
        if mf.match_type == p4info_pb2.MatchField.EXACT:
            fm.exact.value = _encode(v)
        elif mf.match_type == p4info_pb2.MatchField.LPM:
            if v[1] == 0:
                continue
            fm.lpm.value, fm.lpm.prefix_len = _encode(v[0]), v[1]
        elif mf.match_type == p4info_pb2.MatchField.TERNARY:
            if v[1] == 0:
                continue
            fm.ternary.value, fm.ternary.mask = _encode(v[0]), _encode(v[1])
        elif mf.match_type == p4info_pb2.MatchField.OPTIONAL:
            if v[1] == 0:
                continue
            fm.optional.value = _encode(v[0])
        elif mf.match_type == p4info_pb2.MatchField.RANGE:
            if v == (0, full):
                continue
            fm.range.low, fm.range.high = _encode(v[0]), _encode(v[1])
        out.append(fm.SerializeToString(deterministic=True))
    return tuple(out)


def _parse_matches(text):
    blocks = [b for b in text.split("\n\n") if b.strip()]
    return tuple(text_format.Parse(b, p4runtime_pb2.FieldMatch()).SerializeToString(deterministic=True)
                 for b in blocks)


def _action_key(p4info, entry):
    pa = next(a for a in p4info.actions if a.preamble.name == entry.action)
    action = p4runtime_pb2.Action(action_id=pa.preamble.id)
    for p in pa.params:
        action.params.add(param_id=p.id, value=_encode(entry.params[p.name]))
    return action.SerializeToString(deterministic=True)


def _parse_action(text):
    return text_format.Parse(text, p4runtime_pb2.Action()).SerializeToString(deterministic=True)
