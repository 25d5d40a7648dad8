"""ValueSetEntry: the members of a parser value set (`value_set<T>(N)` used in a select).

A member is one FieldMatch per P4Info field (exact, or ternary for a masked member); the engine
takes each member as the fields concatenated at their own widths (value, mask).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from p4.v1 import p4runtime_pb2

from . import bytestrings
from .errors import call_engine, invalid, resource_exhausted

if TYPE_CHECKING:
    from p4sim.engine import Engine

    from .pipeline import Pipeline

MODIFY = p4runtime_pb2.Update.MODIFY


def write(pipeline: Pipeline, engine: Engine, update_type: int, entry: p4runtime_pb2.ValueSetEntry) -> None:
    info = pipeline.index.value_set(entry.value_set_id)
    what = f"value set '{info.name}'"
    if update_type != MODIFY:
        raise invalid(f"{what}: only MODIFY (replace all members) is allowed")
    if info.size and len(entry.members) > info.size:
        raise resource_exhausted(f"{what}: {len(entry.members)} members, capacity {info.size}")
    members = []
    for number, member in enumerate(entry.members):
        given = {fm.field_id: fm for fm in member.match}
        value = mask = 0
        for field in info.fields:
            fm = given.pop(field.id, None)
            label = f"{what} member {number} field '{field.name}'"
            if fm is None:
                raise invalid(f"{label}: missing")
            kind = fm.WhichOneof("field_match_type")
            full = (1 << field.bitwidth) - 1
            if kind == "exact":
                v, m = bytestrings.decode(fm.exact.value, field.bitwidth, label), full
            elif kind == "ternary":
                v = bytestrings.decode(fm.ternary.value, field.bitwidth, label)
                m = bytestrings.decode(fm.ternary.mask, field.bitwidth, label + " mask")
            else:
                raise invalid(f"{label}: expected exact or ternary, got {kind}")
            value = (value << field.bitwidth) | v
            mask = (mask << field.bitwidth) | m
        if given:
            raise invalid(f"{what} member {number}: unknown field id(s) {sorted(given)}")
        members.append((value, mask))
    call_engine(what, engine.parse_vset_set, pipeline.value_sets[info.id], members)


def read(pipeline: Pipeline, engine: Engine, entry: p4runtime_pb2.ValueSetEntry
         ) -> Iterator[p4runtime_pb2.ValueSetEntry]:
    infos = ([pipeline.index.value_set(entry.value_set_id)] if entry.value_set_id
             else list(pipeline.index.value_sets.values()))
    for info in infos:
        out = p4runtime_pb2.ValueSetEntry(value_set_id=info.id)
        for value, mask in call_engine(f"value set '{info.name}'", engine.parse_vset_get,
                                       pipeline.value_sets[info.id]):
            member = out.members.add()
            shift = sum(f.bitwidth for f in info.fields)
            for field in info.fields:
                shift -= field.bitwidth
                full = (1 << field.bitwidth) - 1
                v, m = (value >> shift) & full, (mask >> shift) & full
                fm = member.match.add(field_id=field.id)
                if m == full:
                    fm.exact.value = bytestrings.encode(v)
                else:
                    fm.ternary.value = bytestrings.encode(v)
                    fm.ternary.mask = bytestrings.encode(m)
        yield out
