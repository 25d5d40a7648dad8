"""Undo records for ROLLBACK_ON_ERROR / DATAPLANE_ATOMIC Write batches.

Before an update is applied, `undo_updates` reads the state it is about to change and returns the
updates that would put it back. If a later update of the batch fails, the device applies the undo
lists in reverse order. (The batch holds the engine lock throughout, so packets never see the
intermediate states: that is what makes DATAPLANE_ATOMIC hold as well.)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from p4.v1 import p4runtime_pb2

from . import counters, meters, registers, value_sets
from .errors import P4RuntimeError

if TYPE_CHECKING:
    from .device import Device

Update = p4runtime_pb2.Update
Entity = p4runtime_pb2.Entity


def _update(kind, **entity):
    return Update(type=kind, entity=Entity(**entity))


def undo_updates(device: Device, update: p4runtime_pb2.Update) -> list[p4runtime_pb2.Update]:
    """Updates restoring what `update` changes (empty if it would change nothing or fail)."""
    entity = update.entity
    kind = entity.WhichOneof("entity")
    pipeline, tables = device.pipeline, device.tables
    assert pipeline is not None and tables is not None     # Device.write checked (_require_pipeline)
    try:
        if kind == "table_entry":
            return _undo_table(device, update.type, entity.table_entry)
        if kind == "register_entry":
            old = list(registers.read(pipeline, device.engine, entity.register_entry))
            return [_update(Update.MODIFY, register_entry=e) for e in old]
        if kind == "counter_entry":
            old = list(counters.read(pipeline, device.engine, entity.counter_entry))
            return [_update(Update.MODIFY, counter_entry=e) for e in old]
        if kind == "direct_counter_entry":
            old = list(counters.read_direct(pipeline, tables, entity.direct_counter_entry))
            return [_update(Update.MODIFY, direct_counter_entry=e) for e in old]
        if kind == "packet_replication_engine_entry":
            return _undo_pre(device, update.type, entity.packet_replication_engine_entry)
        if kind == "meter_entry":
            old = list(meters.read(pipeline, device.engine, entity.meter_entry))
            return [_update(Update.MODIFY, meter_entry=e) for e in old]
        if kind == "value_set_entry":
            old = list(value_sets.read(pipeline, device.engine, entity.value_set_entry))
            return [_update(Update.MODIFY, value_set_entry=e) for e in old]
    except P4RuntimeError:
        return []  # the update itself will fail with the same problem: nothing to undo
    return []


def _undo_table(device, update_type, entry):
    if entry.is_default_action:
        table = device.pipeline.index.table(entry.table_id)
        return [_update(Update.MODIFY, table_entry=device.tables.default_entry(table))]
    if update_type == Update.INSERT:
        return [_update(Update.DELETE, table_entry=entry)]
    request = p4runtime_pb2.TableEntry(table_id=entry.table_id, priority=entry.priority)
    request.match.extend(entry.match)
    old = [e for e in device.tables.read(request) if not e.is_const]
    if not old:
        return []
    if update_type == Update.MODIFY:
        return [_update(Update.MODIFY, table_entry=old[0])]
    return [_update(Update.INSERT, table_entry=old[0])]  # DELETE


def _undo_pre(device, update_type, entry):
    old = list(device.replication.read(entry)) if _has_id(entry) else []
    if update_type == Update.INSERT:
        return [_update(Update.DELETE, packet_replication_engine_entry=entry)]
    if not old:
        return []
    kind = Update.MODIFY if update_type == Update.MODIFY else Update.INSERT
    return [_update(kind, packet_replication_engine_entry=old[0])]


def _has_id(entry):
    kind = entry.WhichOneof("type")
    if kind == "multicast_group_entry":
        return entry.multicast_group_entry.multicast_group_id != 0
    if kind == "clone_session_entry":
        return entry.clone_session_entry.session_id != 0
    return False
