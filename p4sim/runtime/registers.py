"""RegisterEntry reads and writes (one index, or every index when the index is unset).

Real BMv2's P4Runtime server answers UNIMPLEMENTED here; p4sim implements it because the
project's users inspect aggregation registers from the controller shell.

Reads of whole arrays (`read_encoded`) copy CHUNK cells at a time from the engine (each copy
consistent per cell, as on BMv2) and encode them straight to wire bytes, so a read of hundreds of
thousands of cells neither holds packets or writes back nor spends seconds in protobuf.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from p4.v1 import p4runtime_pb2

from . import bytestrings, read_response_bytes
from .errors import call_engine, invalid
from .indexed import cell_indices, require_modify

if TYPE_CHECKING:
    from p4sim.engine import Engine

    from .pipeline import Pipeline



def write(pipeline: Pipeline, engine: Engine, update_type: int, entry: p4runtime_pb2.RegisterEntry) -> None:
    info = pipeline.index.register(entry.register_id)
    require_modify("register", info, update_type)
    kind = entry.data.WhichOneof("data")
    if kind != "bitstring":
        raise invalid(f"register '{info.name}': data must be a bitstring (got {kind})")
    value = bytestrings.decode(entry.data.bitstring, info.bitwidth, f"register '{info.name}' data")
    name = pipeline.registers[info.id]
    for index in cell_indices("register", info, entry):
        call_engine(f"register '{info.name}'", engine.register_write, name, index, value)


def read(pipeline: Pipeline, engine: Engine, entry: p4runtime_pb2.RegisterEntry
         ) -> Iterator[p4runtime_pb2.RegisterEntry]:
    infos = ([pipeline.index.register(entry.register_id)] if entry.register_id
             else list(pipeline.index.registers.values()))
    for info in infos:
        name = pipeline.registers[info.id]
        indices = cell_indices("register", info, entry) if entry.register_id else range(info.size)
        what = f"register '{info.name}'"
        with engine.lock:  # one consistent snapshot of the array
            if len(indices) == 1:
                values = [call_engine(what, engine.register_read, name, indices[0])]
            else:
                values = list(call_engine(what, engine.register_read, name, None))[:len(indices)]
        for index, value in zip(indices, values):
            out = p4runtime_pb2.RegisterEntry(register_id=info.id)
            out.index.index = index
            out.data.bitstring = bytestrings.encode(value, info.bitwidth)
            yield out


CHUNK = 4096  # cells per engine copy and per encoded block


def _cells(engine, name, what, start, stop):
    """Cells [start, stop) of one register in blocks of CHUNK: (first index, values)."""
    ranged = getattr(engine, "register_read_range", None)
    if ranged is None:  # the Python engine: one copy of the array under its lock
        values = call_engine(what, engine.register_read, name, None)
        for pos in range(start, stop, CHUNK):
            yield pos, values[pos:min(stop, pos + CHUNK)]
        return
    for pos in range(start, stop, CHUNK):
        yield pos, call_engine(what, ranged, name, pos, min(CHUNK, stop - pos))


def plan_encoded(pipeline: Pipeline, engine: Engine, entry: p4runtime_pb2.RegisterEntry) -> Iterator[tuple[bytes, int]]:
    """Check the request now; -> a generator of (wire bytes, entity count) blocks for later."""
    infos = ([pipeline.index.register(entry.register_id)] if entry.register_id
             else list(pipeline.index.registers.values()))
    spans = []
    for info in infos:
        indices = cell_indices("register", info, entry) if entry.register_id else range(info.size)
        start, stop = (indices[0], indices[0] + 1) if isinstance(indices, list) else (0, info.size)
        spans.append((info, pipeline.registers[info.id], start, stop))

    def blocks():
        for info, name, start, stop in spans:
            for pos, values in _cells(engine, name, f"register '{info.name}'", start, stop):
                yield read_response_bytes.register_entities(info.id, pos, values), len(values)
    return blocks()

