"""TableEntry match keys: validate p4.v1.FieldMatch lists against the P4Info and normalise them.

One normalised key is a tuple, one item per P4Info match field in P4Info order:
("exact", v) | ("lpm", v, prefix_len) | ("ternary", v, mask) | ("range", lo, hi) | ("optional", v|None).
Don't-care fields (omitted in the request) normalise to their wildcard form, so the tuple identifies
the entry and also gives the engine its key values.
"""
from __future__ import annotations

from collections.abc import Iterable

from p4.v1 import p4runtime_pb2

from . import bytestrings
from .errors import invalid
from .p4info_index import TableInfo

Key = tuple[tuple, ...]


def normalise(table: TableInfo, matches: Iterable[p4runtime_pb2.FieldMatch]) -> Key:
    """The normalised key of a request's FieldMatch list; INVALID_ARGUMENT naming table and field."""
    given: dict[int, p4runtime_pb2.FieldMatch] = {}
    for fm in matches:
        if fm.field_id not in table.match_fields:
            raise invalid(f"table '{table.name}': match field id {fm.field_id} is not in the P4Info")
        if fm.field_id in given:
            raise invalid(f"table '{table.name}': match field id {fm.field_id} appears twice")
        given[fm.field_id] = fm
    key = []
    for field_id, mf in table.match_fields.items():
        what = f"table '{table.name}' match field '{mf.name}'"
        fm = given.get(field_id)
        full = (1 << mf.bitwidth) - 1
        if fm is None:
            if mf.match_type == "exact":
                raise invalid(f"{what}: exact match fields cannot be omitted")
            key.append({"lpm": ("lpm", 0, 0), "ternary": ("ternary", 0, 0),
                        "range": ("range", 0, full), "optional": ("optional", None)}[mf.match_type])
            continue
        kind = fm.WhichOneof("field_match_type")
        if kind != mf.match_type:
            raise invalid(f"{what}: is a {mf.match_type} field but the request gives {kind}")
        if kind == "exact":
            key.append(("exact", bytestrings.decode(fm.exact.value, mf.bitwidth, what)))
        elif kind == "lpm":
            value = bytestrings.decode(fm.lpm.value, mf.bitwidth, what)
            plen = fm.lpm.prefix_len
            if plen < 0 or plen > mf.bitwidth:
                raise invalid(f"{what}: prefix length {plen} is outside 0..{mf.bitwidth}")
            if value & ((1 << (mf.bitwidth - plen)) - 1):
                raise invalid(f"{what}: value 0x{fm.lpm.value.hex()} has bits set beyond the "
                              f"/{plen} prefix")
            key.append(("lpm", value, plen))
        elif kind == "ternary":
            value = bytestrings.decode(fm.ternary.value, mf.bitwidth, what)
            mask = bytestrings.decode(fm.ternary.mask, mf.bitwidth, what + " mask")
            if value & ~mask:
                raise invalid(f"{what}: value 0x{fm.ternary.value.hex()} has bits set outside "
                              f"mask 0x{fm.ternary.mask.hex()}")
            key.append(("ternary", value, mask))
        elif kind == "range":
            low = bytestrings.decode(fm.range.low, mf.bitwidth, what + " low")
            high = bytestrings.decode(fm.range.high, mf.bitwidth, what + " high")
            if low > high:
                raise invalid(f"{what}: range low {low} is above high {high}")
            key.append(("range", low, high))
        elif kind == "optional":
            key.append(("optional", bytestrings.decode(fm.optional.value, mf.bitwidth, what)))
        else:
            raise invalid(f"{what}: unsupported match kind {kind}")
    return tuple(key)


def to_field_matches(table: TableInfo, key: Key) -> list[p4runtime_pb2.FieldMatch]:
    """Canonical FieldMatch list of a normalised key (don't-care fields omitted)."""
    out = []
    for (field_id, mf), item in zip(table.match_fields.items(), key):
        kind = item[0]
        full = (1 << mf.bitwidth) - 1
        fm = p4runtime_pb2.FieldMatch(field_id=field_id)
        if kind == "exact":
            fm.exact.value = bytestrings.encode(item[1])
        elif kind == "lpm":
            if item[2] == 0:
                continue
            fm.lpm.value = bytestrings.encode(item[1])
            fm.lpm.prefix_len = item[2]
        elif kind == "ternary":
            if item[2] == 0:
                continue
            fm.ternary.value = bytestrings.encode(item[1])
            fm.ternary.mask = bytestrings.encode(item[2])
        elif kind == "range":
            if item[1] == 0 and item[2] == full:
                continue
            fm.range.low = bytestrings.encode(item[1])
            fm.range.high = bytestrings.encode(item[2])
        elif kind == "optional":
            if item[1] is None:
                continue
            fm.optional.value = bytestrings.encode(item[1])
        out.append(fm)
    return out


def is_wildcard(item: tuple) -> bool:
    """True for a don't-care item of a normalised key."""
    kind = item[0]
    return ((kind in ("lpm", "ternary") and item[2] == 0) or (kind == "optional" and item[1] is None))


def engine_values(table: TableInfo, key_names: dict[int, str], key: Key) -> dict:
    """The engine's key dict: JSON key name -> int | (v, plen) | (v, mask) | (lo, hi) | v/None."""
    values = {}
    for field_id, item in zip(table.match_fields, key):
        kind = item[0]
        values[key_names[field_id]] = item[1] if kind in ("exact", "optional") else (item[1], item[2])
    return values
