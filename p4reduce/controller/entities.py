"""Builders and decoders for P4Runtime entities, by name, over a P4InfoIndex.

`table_entry(index, "ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.0/8"}, "forward", {"port": 1})` gives
a p4.v1.TableEntry; `decode_table_entry` turns one read back from the switch into plain Python
values. Match values are written as in p4runtime-shell ("10.0.0.0/8", "v&&&mask", "lo..hi") or as
tuples ((value, prefix_len), (value, mask), (lo, hi)).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4reduce.controller.codec import decode, encode, parse_int
from p4reduce.controller.p4info import P4InfoIndex

MT = p4info_pb2.MatchField


def _split_match(value: Any, sep: str, what: str) -> tuple[Any, Any]:
    if isinstance(value, str) and sep in value:
        a, b = value.split(sep, 1)
        return a, b
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return value[0], value[1]
    raise ValueError(f"{what}: expected 'a{sep}b' or a pair, got {value!r}")


def _field_match(index: P4InfoIndex, table: Any, name: str, value: Any) -> p4runtime_pb2.FieldMatch | None:
    mf = index.match_field(table, name)
    what = f"table {table.preamble.name}, field {mf.name}"
    fm = p4runtime_pb2.FieldMatch(field_id=mf.id)
    bw = mf.bitwidth
    if mf.match_type == MT.EXACT:
        fm.exact.value = encode(value, bw, what)
    elif mf.match_type == MT.LPM:
        if isinstance(value, str) and "/" in value:
            v, plen_text = value.split("/", 1)
        elif isinstance(value, (tuple, list)):
            v, plen_text = value
        else:
            v, plen_text = value, bw
        plen = parse_int(plen_text, None, f"{what} prefix length")
        if plen > bw:
            raise ValueError(f"{what}: prefix length {plen} exceeds the field's {bw} bits")
        if plen == 0:
            return None  # don't-care: omitted from the entry, as P4Runtime requires
        n = parse_int(v, bw, what) & (((1 << plen) - 1) << (bw - plen))
        fm.lpm.value = encode(n, bw, what)
        fm.lpm.prefix_len = plen
    elif mf.match_type == MT.TERNARY:
        v, m = _split_match(value, "&&&", what)
        m = parse_int(m, bw, f"{what} mask")
        if m == 0:
            return None
        fm.ternary.value = encode(parse_int(v, bw, what) & m, bw, what)
        fm.ternary.mask = encode(m, bw, what)
    elif mf.match_type == MT.RANGE:
        lo, hi = _split_match(value, "..", what)
        fm.range.low = encode(lo, bw, what)
        fm.range.high = encode(hi, bw, what)
    elif mf.match_type == MT.OPTIONAL:
        if value is None:
            return None
        fm.optional.value = encode(value, bw, what)
    else:
        raise ValueError(f"{what}: unsupported match type {mf.match_type}")
    return fm


def action(index: P4InfoIndex, name: str, params: Mapping[str, Any] | None = None) -> p4runtime_pb2.Action:
    act = index.get("action", name)
    msg = p4runtime_pb2.Action(action_id=act.preamble.id)
    params = dict(params or {})
    for p in act.params:
        if p.name not in params:
            raise ValueError(f"action {act.preamble.name}: missing parameter {p.name!r}")
        msg.params.add(param_id=p.id, value=encode(params.pop(p.name), p.bitwidth,
                                                   f"action {act.preamble.name}, parameter {p.name}"))
    if params:
        index.action_param(act, next(iter(params)))  # raises naming the unknown parameter
    return msg


def table_entry(index: P4InfoIndex, table: str, match: Mapping[str, Any] | None = None, action_name: str | None = None,
                params: Mapping[str, Any] | None = None, priority: int | None = None) -> p4runtime_pb2.TableEntry:
    """A TableEntry; with action_name None it is a match-only entry (for reads and deletes)."""
    tbl = index.get("table", table)
    entry = p4runtime_pb2.TableEntry(table_id=tbl.preamble.id)
    for name, value in (match or {}).items():
        fm = _field_match(index, tbl, name, value)
        if fm is not None:
            entry.match.append(fm)
    if action_name is not None:
        allowed = {ref.id for ref in tbl.action_refs}
        act = index.get("action", action_name)
        if allowed and act.preamble.id not in allowed:
            raise ValueError(f"table {tbl.preamble.name}: action {act.preamble.name} is not one of its actions")
        entry.action.action.CopyFrom(action(index, action_name, params))
    if priority is not None:
        entry.priority = priority
    return entry


def default_entry(index: P4InfoIndex, table: str, action_name: str,
                  params: Mapping[str, Any] | None = None) -> p4runtime_pb2.TableEntry:
    entry = table_entry(index, table, None, action_name, params)
    entry.is_default_action = True
    return entry


def decode_table_entry(index: P4InfoIndex, entry: p4runtime_pb2.TableEntry) -> dict[str, Any]:
    """Plain dict of a TableEntry read back: names and ints."""
    tbl = index.by_id("table", entry.table_id)
    fields = {mf.id: mf for mf in tbl.match_fields}
    match: dict[str, int | tuple[int, int]] = {}
    for fm in entry.match:
        mf = fields.get(fm.field_id)
        name = mf.name if mf else str(fm.field_id)
        kind = fm.WhichOneof("field_match_type")
        if kind == "exact":
            match[name] = decode(fm.exact.value)
        elif kind == "lpm":
            match[name] = (decode(fm.lpm.value), fm.lpm.prefix_len)
        elif kind == "ternary":
            match[name] = (decode(fm.ternary.value), decode(fm.ternary.mask))
        elif kind == "range":
            match[name] = (decode(fm.range.low), decode(fm.range.high))
        elif kind == "optional":
            match[name] = decode(fm.optional.value)
    out = {"table": tbl.preamble.name, "match": match, "action": None, "params": {},
           "priority": entry.priority, "is_default": entry.is_default_action}
    if entry.action.HasField("action"):
        act = index.by_id("action", entry.action.action.action_id)
        pnames = {p.id: p.name for p in act.params}
        out["action"] = act.preamble.name
        out["params"] = {pnames.get(p.param_id, str(p.param_id)): decode(p.value)
                         for p in entry.action.action.params}
    return out


def multicast_group(group_id: int, replicas: Iterable[tuple[int, int]]) -> p4runtime_pb2.PacketReplicationEngineEntry:
    """A PacketReplicationEngineEntry for group `group_id` with [(egress_port, instance), ...]."""
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = group_id
    for port, instance in replicas:
        pre.multicast_group_entry.replicas.add(egress_port=port, instance=instance)
    return pre


def all_multicast_groups() -> p4runtime_pb2.PacketReplicationEngineEntry:
    """The read filter that matches every multicast group."""
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.SetInParent()
    return pre


def decode_multicast_group(entity: p4runtime_pb2.Entity) -> tuple[int, list[tuple[int, int]]]:
    """(group id, [(egress port, instance), ...]) of a multicast group entity read back."""
    g = entity.packet_replication_engine_entry.multicast_group_entry
    return g.multicast_group_id, [(r.egress_port or int.from_bytes(r.port, "big"), r.instance) for r in g.replicas]


def register_entry(index: P4InfoIndex, name: str, idx: int | None = None) -> p4runtime_pb2.RegisterEntry:
    reg = index.get("register", name)
    entry = p4runtime_pb2.RegisterEntry(register_id=reg.preamble.id)
    if idx is not None:
        entry.index.index = idx
    return entry


def counter_entry(index: P4InfoIndex, name: str, idx: int | None = None) -> p4runtime_pb2.CounterEntry:
    ctr = index.get("counter", name)
    entry = p4runtime_pb2.CounterEntry(counter_id=ctr.preamble.id)
    if idx is not None:
        entry.index.index = idx
    return entry
