"""TableEntry writes and reads, translated onto the engine's table API.

The runtime keeps, per table, the entries it installed (keyed by normalised match key and
priority) with their engine handles, so that P4Runtime identity rules (an entry *is* its key and
priority), reads in canonical form and direct counters work without depending on the engine's
internal representation.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from p4.v1 import p4runtime_pb2

from . import actions, match_keys
from .errors import (
    already_exists,
    call_engine,
    invalid,
    not_found,
    permission_denied,
    resource_exhausted,
    unimplemented,
)
from .p4info_index import TableInfo

if TYPE_CHECKING:
    from p4sim.engine import Engine

    from .pipeline import Pipeline

INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE


@dataclass
class InstalledEntry:
    handle: int             # the engine's
    key: tuple
    priority: int
    action_id: int
    params: dict[int, int]
    controller_metadata: int = 0
    metadata: bytes = b""
    idle_timeout_ns: int = 0


class Tables:
    """All tables of one pipeline on one engine."""

    def __init__(self, pipeline: Pipeline, engine: Engine) -> None:
        self.pipeline = pipeline
        self.engine = engine
        self.entries: dict[int, dict[tuple[tuple, int], InstalledEntry]] = {
            table_id: {} for table_id in pipeline.index.tables}
        # current default action per table: (action id, params); None = the JSON's initial one
        self.defaults: dict[int, tuple[int, dict[int, int]] | None] = {}

    # -- writes --------------------------------------------------------------------------------
    def write(self, update_type: int, entry: p4runtime_pb2.TableEntry) -> None:
        table = self.pipeline.index.table(entry.table_id)
        if table.implementation_id:
            raise unimplemented(f"table '{table.name}': action profiles/selectors are not supported")
        if entry.is_default_action:
            return self._write_default(update_type, table, entry)
        if table.is_const:
            raise permission_denied(f"table '{table.name}' is const (its entries are fixed by the "
                                    f"P4 program)")
        key = match_keys.normalise(table, entry.match)
        priority = entry.priority
        if table.needs_priority:
            if update_type != DELETE and priority <= 0:
                raise invalid(f"table '{table.name}': entries need a priority > 0 (the table has "
                              f"ternary, range or optional fields)")
        elif priority != 0:
            raise invalid(f"table '{table.name}': priority must be 0 (only exact/lpm fields)")
        if priority < 0 or priority >= 1 << 31:
            raise invalid(f"table '{table.name}': priority {priority} is out of range")
        if entry.idle_timeout_ns and not table.supports_idle_timeout:
            raise invalid(f"table '{table.name}': idle_timeout_ns is set but the table does not "
                          f"support idle timeout")
        if entry.HasField("counter_data") and not table.direct_counter_id:
            raise invalid(f"table '{table.name}': counter_data given but the table has no "
                          f"direct counter")
        if entry.HasField("meter_config"):
            raise unimplemented(f"table '{table.name}': meter_config (direct meters) is not supported")
        store = self.entries[table.id]
        ident = (key, priority)
        binding = self.pipeline.tables[table.id]
        what = f"table '{table.name}'"
        if update_type == INSERT:
            if ident in store:
                raise already_exists(f"{what}: an entry with this match key"
                                     f"{' and priority' if priority else ''} already exists")
            if table.size and len(store) >= table.size:
                raise resource_exhausted(f"{what} is full ({table.size} entries)")
            action_id, params = actions.decode(self.pipeline, table, entry.action, default=False)
            action_name, args = actions.engine_args(self.pipeline, action_id, params)
            handle = call_engine(
                what, self.engine.table_add, binding.json_name,
                match_keys.engine_values(table, binding.key_names, key), action_name, args,
                priority=priority if table.needs_priority else None)
            store[ident] = InstalledEntry(handle, key, priority, action_id, params,
                                          entry.controller_metadata, entry.metadata,
                                          entry.idle_timeout_ns)
            self._set_counter_data(table, handle, entry)
        elif update_type == MODIFY:
            installed = store.get(ident)
            if installed is None:
                raise not_found(f"{what}: no entry with this match key to modify")
            action_id, params = actions.decode(self.pipeline, table, entry.action, default=False)
            action_name, args = actions.engine_args(self.pipeline, action_id, params)
            call_engine(what, self.engine.table_modify, binding.json_name, installed.handle,
                        action_name, args)
            installed.action_id, installed.params = action_id, params
            installed.controller_metadata = entry.controller_metadata
            installed.metadata = entry.metadata
            self._set_counter_data(table, installed.handle, entry)
        elif update_type == DELETE:
            installed = store.get(ident)
            if installed is None:
                raise not_found(f"{what}: no entry with this match key to delete")
            call_engine(what, self.engine.table_delete, binding.json_name, installed.handle)
            del store[ident]
        else:
            raise invalid(f"{what}: unknown update type {update_type}")

    def _set_counter_data(self, table, handle, entry):
        """An INSERT/MODIFY carrying counter_data sets the entry's direct counter."""
        if not entry.HasField("counter_data"):
            return
        call_engine(f"table '{table.name}' direct counter", self.engine.direct_counter_write,
                    self.pipeline.tables[table.id].json_name, handle,
                    entry.counter_data.packet_count, entry.counter_data.byte_count)

    def _write_default(self, update_type, table: TableInfo, entry):
        what = f"table '{table.name}' default entry"
        if update_type != MODIFY:
            raise invalid(f"{what}: only MODIFY is allowed on a default entry")
        if len(entry.match) or entry.priority:
            raise invalid(f"{what}: a default entry has no match key and no priority")
        binding = self.pipeline.tables[table.id]
        if binding.default_is_const:
            raise permission_denied(f"{what}: the default action is const in the P4 program")
        if entry.HasField("action"):
            action_id, params = actions.decode(self.pipeline, table, entry.action, default=True)
        elif binding.initial_default is not None:
            action_id, params = binding.initial_default  # MODIFY without action: reset
        else:
            raise invalid(f"{what}: no action given and the program has no initial default")
        action_name, args = actions.engine_args(self.pipeline, action_id, params)
        call_engine(what, self.engine.table_set_default, binding.json_name, action_name, args)
        self.defaults[table.id] = (action_id, params)

    # -- reads ---------------------------------------------------------------------------------
    def read(self, request: p4runtime_pb2.TableEntry) -> Iterator[p4runtime_pb2.TableEntry]:
        if request.table_id:
            tables = [self.pipeline.index.table(request.table_id)]
        elif len(request.match):
            raise invalid("TableEntry read: a match key needs a table_id")
        else:
            tables = list(self.pipeline.index.tables.values())
        want_counters = request.HasField("counter_data")
        for table in tables:
            if request.is_default_action:
                yield self.default_entry(table)
                continue
            key = match_keys.normalise(table, request.match) if len(request.match) else None
            yield from self._read_table(table, key, request.priority, want_counters)

    def _read_table(self, table, key, priority, want_counters):
        binding = self.pipeline.tables[table.id]
        for const in binding.const_entries:
            if key is not None and match_keys.normalise(table, const.match) != key:
                continue
            if priority and const.priority != priority:
                continue
            yield const
        for (entry_key, entry_priority), installed in list(self.entries[table.id].items()):
            if key is not None and entry_key != key:
                continue
            if priority and entry_priority != priority:
                continue
            message = self.to_message(table, installed)
            if want_counters and table.direct_counter_id:
                packets, octets = call_engine(
                    f"table '{table.name}' direct counter", self.engine.direct_counter_read,
                    binding.json_name, installed.handle)
                message.counter_data.packet_count = packets
                message.counter_data.byte_count = octets
            yield message

    def to_message(self, table: TableInfo, installed: InstalledEntry) -> p4runtime_pb2.TableEntry:
        message = p4runtime_pb2.TableEntry(
            table_id=table.id, priority=installed.priority,
            controller_metadata=installed.controller_metadata, metadata=installed.metadata,
            idle_timeout_ns=installed.idle_timeout_ns)
        message.match.extend(match_keys.to_field_matches(table, installed.key))
        message.action.CopyFrom(actions.encode(installed.action_id, installed.params))
        return message

    def default_entry(self, table: TableInfo) -> p4runtime_pb2.TableEntry:
        message = p4runtime_pb2.TableEntry(table_id=table.id, is_default_action=True)
        current = self.defaults.get(table.id) or self.pipeline.tables[table.id].initial_default
        if current is not None:
            message.action.CopyFrom(actions.encode(*current))
        return message

    def find(self, table: TableInfo, match: Iterable[p4runtime_pb2.FieldMatch], priority: int) -> InstalledEntry:
        """The installed entry with this key and priority; NOT_FOUND otherwise."""
        key = match_keys.normalise(table, match)
        installed = self.entries[table.id].get((key, priority))
        if installed is None:
            raise not_found(f"table '{table.name}': no entry with this match key")
        return installed

    # -- reconcile -----------------------------------------------------------------------------
    def messages_for_replay(self) -> Iterator[tuple[str, p4runtime_pb2.TableEntry]]:
        """Every non-const entry and changed default, as (table name, TableEntry) for replay."""
        for table_id, store in self.entries.items():
            table = self.pipeline.index.tables[table_id]
            for installed in store.values():
                yield table.name, self.to_message(table, installed)
        for table_id in self.defaults:
            table = self.pipeline.index.tables[table_id]
            yield table.name, self.default_entry(table)
