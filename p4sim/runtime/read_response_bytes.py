"""ReadResponse bytes written directly, for reads of many register cells and counter cells.

The protobuf runtime of this project is the pure-Python one (protobuf 3.20.x, pinned by
p4runtime-shell), where building and serialising one RegisterEntry message costs tens of
microseconds: 311,296 cells took 16 s to build and tens more to serialise.  A register or
counter entity is tiny and fixed in shape, so it is written here as wire-format bytes (a few
microseconds per cell); clients parse them as ordinary ReadResponse messages.  Field numbers
come from the p4runtime descriptors, not from constants typed here.
"""
from __future__ import annotations

from collections.abc import Sequence

from p4.v1 import p4data_pb2, p4runtime_pb2

_ENTITIES = p4runtime_pb2.ReadResponse.DESCRIPTOR.fields_by_name["entities"].number
_ENTITY = p4runtime_pb2.Entity.DESCRIPTOR.fields_by_name
_REGISTER = p4runtime_pb2.RegisterEntry.DESCRIPTOR.fields_by_name
_COUNTER = p4runtime_pb2.CounterEntry.DESCRIPTOR.fields_by_name
_INDEX = p4runtime_pb2.Index.DESCRIPTOR.fields_by_name["index"].number
_BITSTRING = p4data_pb2.P4Data.DESCRIPTOR.fields_by_name["bitstring"].number
_COUNTER_DATA = p4runtime_pb2.CounterData.DESCRIPTOR.fields_by_name
_VARINT, _BYTES = 0, 2


def varint(n: int) -> bytes:
    """Protobuf base-128 varint of a non-negative int."""
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _tag(field: int, wire_type: int) -> bytes:
    return varint((field << 3) | wire_type)


def _len_field(field: int, payload: bytes) -> bytes:
    return _tag(field, _BYTES) + varint(len(payload)) + payload


def entity_field(entity: p4runtime_pb2.Entity) -> bytes:
    """One `entities` field of a ReadResponse holding `entity`."""
    return _len_field(_ENTITIES, entity.SerializeToString())


def _small_varints(n: int) -> list[bytes]:
    return [varint(i) for i in range(n)]


_VARINTS = _small_varints(1 << 14)


def _uvarint(i: int) -> bytes:
    return _VARINTS[i] if i < len(_VARINTS) else varint(i)


def register_entities(register_id: int, start: int, values: Sequence[int]) -> bytes:
    """`entities` fields of a ReadResponse for cells start, start+1, ... of one register.

    Equal, byte for byte, to serialising RegisterEntry(register_id, index, data.bitstring) with
    the canonical bitstring (bytestrings.encode) for each cell."""
    reg_tag = _tag(_REGISTER["register_id"].number, _VARINT) + varint(register_id)
    index_tag = _tag(_REGISTER["index"].number, _BYTES)
    data_tag = _tag(_REGISTER["data"].number, _BYTES)
    inner_index_tag = _tag(_INDEX, _VARINT)
    bits_tag = _tag(_BITSTRING, _BYTES)
    entity_tag = _tag(_ENTITY["register_entry"].number, _BYTES)
    response_tag = _tag(_ENTITIES, _BYTES)
    out: list[bytes] = []
    append = out.append
    for i, value in enumerate(values, start):
        if value < 0:
            raise ValueError("register cells are unsigned")
        raw = value.to_bytes((value.bit_length() + 7) // 8 or 1, "big")
        index = inner_index_tag + _uvarint(i) if i else b""   # proto3: a zero index is not written
        p4data = bits_tag + _uvarint(len(raw)) + raw
        entry = (reg_tag + index_tag + _uvarint(len(index)) + index + data_tag + _uvarint(len(p4data)) + p4data)
        entity = entity_tag + _uvarint(len(entry)) + entry
        append(response_tag + _uvarint(len(entity)) + entity)
    return b"".join(out)


def counter_entities(counter_id: int, start: int, values: Sequence[tuple[int, int]]) -> bytes:
    """`entities` fields of a ReadResponse for cells start, ... of one counter; values are
    (packets, bytes) pairs."""
    id_tag = _tag(_COUNTER["counter_id"].number, _VARINT) + varint(counter_id)
    index_tag = _tag(_COUNTER["index"].number, _BYTES)
    data_tag = _tag(_COUNTER["data"].number, _BYTES)
    inner_index_tag = _tag(_INDEX, _VARINT)
    bytes_tag = _tag(_COUNTER_DATA["byte_count"].number, _VARINT)
    packets_tag = _tag(_COUNTER_DATA["packet_count"].number, _VARINT)
    entity_tag = _tag(_ENTITY["counter_entry"].number, _BYTES)
    response_tag = _tag(_ENTITIES, _BYTES)
    out: list[bytes] = []
    for i, (packets, octets) in enumerate(values, start):
        index = inner_index_tag + _uvarint(i) if i else b""
        data = (bytes_tag + varint(octets) if octets else b"") + (packets_tag + varint(packets) if packets else b"")
        entry = id_tag + index_tag + _uvarint(len(index)) + index + data_tag + _uvarint(len(data)) + data
        entity = entity_tag + _uvarint(len(entry)) + entry
        out.append(response_tag + _uvarint(len(entity)) + entity)
    return b"".join(out)
