"""CounterEntry (indirect counters) and DirectCounterEntry (per table entry) reads and writes."""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from p4.v1 import p4runtime_pb2

from . import read_response_bytes
from .errors import call_engine, invalid, unimplemented
from .indexed import cell_indices, require_modify

if TYPE_CHECKING:
    from p4sim.engine import Engine

    from .pipeline import Pipeline
    from .tables import Tables

MODIFY = p4runtime_pb2.Update.MODIFY


def write(pipeline: Pipeline, engine: Engine, update_type: int, entry: p4runtime_pb2.CounterEntry) -> None:
    info = pipeline.index.counter(entry.counter_id)
    require_modify("counter", info, update_type)
    name = pipeline.counters[info.id]
    for index in cell_indices("counter", info, entry):
        call_engine(f"counter '{info.name}'", engine.counter_write, name, index,
                    entry.data.packet_count, entry.data.byte_count)


def read(pipeline: Pipeline, engine: Engine, entry: p4runtime_pb2.CounterEntry) -> Iterator[p4runtime_pb2.CounterEntry]:
    infos = ([pipeline.index.counter(entry.counter_id)] if entry.counter_id
             else list(pipeline.index.counters.values()))
    for info in infos:
        name = pipeline.counters[info.id]
        indices = cell_indices("counter", info, entry) if entry.counter_id else range(info.size)
        with engine.lock:
            values = [call_engine(f"counter '{info.name}'", engine.counter_read, name, i)
                      for i in indices]
        for index, (packets, octets) in zip(indices, values):
            out = p4runtime_pb2.CounterEntry(counter_id=info.id)
            out.index.index = index
            out.data.packet_count = packets
            out.data.byte_count = octets
            yield out


def _direct_tables(pipeline, entry: p4runtime_pb2.DirectCounterEntry):
    table_id = entry.table_entry.table_id
    if table_id:
        table = pipeline.index.table(table_id)
        if not table.direct_counter_id:
            raise invalid(f"table '{table.name}' has no direct counter")
        return [table]
    return [t for t in pipeline.index.tables.values() if t.direct_counter_id]


def read_direct(pipeline: Pipeline, tables: Tables, entry: p4runtime_pb2.DirectCounterEntry
                ) -> Iterator[p4runtime_pb2.DirectCounterEntry]:
    """Counter data of one entry (match given) or every entry of one or all tables."""
    for table in _direct_tables(pipeline, entry):
        request = p4runtime_pb2.TableEntry(table_id=table.id)
        request.match.extend(entry.table_entry.match)
        request.priority = entry.table_entry.priority
        request.counter_data.SetInParent()
        for table_entry in tables.read(request):
            if table_entry.is_const:
                continue
            out = p4runtime_pb2.DirectCounterEntry()
            out.data.CopyFrom(table_entry.counter_data)
            table_entry.ClearField("counter_data")
            out.table_entry.CopyFrom(table_entry)
            yield out


def write_direct(pipeline: Pipeline, tables: Tables, engine: Engine, update_type: int,
                 entry: p4runtime_pb2.DirectCounterEntry) -> None:
    table = _direct_tables(pipeline, entry)[0] if entry.table_entry.table_id else None
    if table is None:
        raise invalid("DirectCounterEntry write: table_entry.table_id is required")
    if update_type != MODIFY:
        raise invalid(f"table '{table.name}' direct counter: only MODIFY is allowed")
    installed = tables.find(table, entry.table_entry.match, entry.table_entry.priority)
    writer = getattr(engine, "direct_counter_write", None)
    if writer is None:
        raise unimplemented(f"table '{table.name}' direct counter: writing is not supported by "
                            f"this engine")
    call_engine(f"table '{table.name}' direct counter", writer,
                pipeline.tables[table.id].json_name, installed.handle,
                entry.data.packet_count, entry.data.byte_count)


CHUNK = 4096  # cells per engine copy and per encoded block


def plan_encoded(pipeline: Pipeline, engine: Engine, entry: p4runtime_pb2.CounterEntry) -> Iterator[tuple[bytes, int]]:
    """Check the request now; -> a generator of (wire bytes, entity count) blocks for later."""
    infos = ([pipeline.index.counter(entry.counter_id)] if entry.counter_id
             else list(pipeline.index.counters.values()))
    spans = [(info, pipeline.counters[info.id],
              cell_indices("counter", info, entry) if entry.counter_id else range(info.size))
             for info in infos]

    def blocks():
        for info, name, indices in spans:
            what = f"counter '{info.name}'"
            if len(indices) == 1:
                values = [call_engine(what, engine.counter_read, name, indices[0])]
                yield read_response_bytes.counter_entities(info.id, indices[0], values), 1
                continue
            cells = call_engine(what, engine.counter_read, name, None)  # chunked inside the native engine
            for pos in range(0, len(cells), CHUNK):
                block = cells[pos:pos + CHUNK]
                yield read_response_bytes.counter_entities(info.id, pos, block), len(block)
    return blocks()

