"""The P4Runtime target: the current pipeline, its engine and the entity state over it.

Pipeline changes swap the engine atomically (the packet path reads `device.engine` once per
packet). Control-plane writes are serialised by `device.lock`; each Write batch also holds the
engine lock, so packets see a batch either entirely before or entirely after.
"""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from p4.v1 import p4runtime_pb2

from . import counters, meters, read_response_bytes, registers, rollback, value_sets
from .errors import P4RuntimeError, aborted_error, failed_precondition, invalid, not_found, unimplemented
from .pipeline import Pipeline
from .pre import Replication
from .tables import Tables

log = logging.getLogger("p4sim.runtime")

SetRequest = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetRequest = p4runtime_pb2.GetForwardingPipelineConfigRequest


class Device:
    def __init__(self, device_id: int = 0, cpu_port: int | None = None, drop_port: int = 511,
                 backend: str | None = None):
        self.device_id = device_id
        self.backend = backend  # engine backend: "native", "python" or None (p4sim.engine's default)
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.lock = threading.RLock()
        self.pipeline: Pipeline | None = None
        self.engine: Any = None     # p4sim.engine.Switch (native or Python)
        self.tables: Tables | None = None
        self.replication: Replication | None = None
        self.cookie: int | None = None
        self._saved: Pipeline | None = None
        self._saved_cookie = None
        self.loaded_program: dict | str | bytes | os.PathLike | None = None
        self.engine_listeners: list[Callable] = []  # called with the new engine after a swap

    # -- pipeline ------------------------------------------------------------------------------
    def load_json(self, program_json: dict | str | bytes | os.PathLike) -> None:
        """Start with a BMv2 JSON and no P4Info (the positional JSON argument of the CLI)."""
        from p4sim.engine import Switch
        engine = Switch(program_json, cpu_port=self.cpu_port, drop_port=self.drop_port, backend=self.backend)
        with self.lock:
            self.loaded_program = program_json  # what the Thrift bm_get_config answers
            self.pipeline = None
            self._install(engine, None, None)

    def set_pipeline(self, request: p4runtime_pb2.SetForwardingPipelineConfigRequest) -> None:
        action = request.action
        with self.lock:
            if action == SetRequest.UNSPECIFIED:
                raise invalid("SetForwardingPipelineConfig: action is UNSPECIFIED")
            if action == SetRequest.COMMIT:
                # P4Runtime spec, SetForwardingPipelineConfig: COMMIT realizes the config saved by
                # a previous VERIFY_AND_SAVE; a config in the request is INVALID_ARGUMENT, no
                # saved config NOT_FOUND
                if request.HasField("config"):
                    raise invalid("SetForwardingPipelineConfig COMMIT: config must not be provided "
                                  "(COMMIT realizes the config saved by VERIFY_AND_SAVE)")
                if self._saved is None:
                    raise not_found("SetForwardingPipelineConfig COMMIT: no config was saved by "
                                    "VERIFY_AND_SAVE")
                self._commit(self._saved, self._saved_cookie)
                return
            if not request.HasField("config"):
                raise invalid("SetForwardingPipelineConfig: config is missing")
            pipeline = self._verify(request.config)
            cookie = request.config.cookie.cookie if request.config.HasField("cookie") else None
            if action == SetRequest.VERIFY:
                return
            if action == SetRequest.VERIFY_AND_SAVE:
                self._saved, self._saved_cookie = pipeline, cookie
                return
            if action == SetRequest.VERIFY_AND_COMMIT:
                self._commit(pipeline, cookie)
            elif action == SetRequest.RECONCILE_AND_COMMIT:
                self._reconcile(pipeline, cookie)
            else:
                raise invalid(f"SetForwardingPipelineConfig: unknown action {action}")

    def _verify(self, config) -> Pipeline:
        if not config.HasField("p4info"):
            raise invalid("ForwardingPipelineConfig.p4info is missing")
        pipeline = Pipeline(config)
        pipeline.engine = pipeline.build_engine(self.cpu_port, self.drop_port, self.backend)
        return pipeline

    def _commit(self, pipeline: Pipeline, cookie):
        engine = pipeline.engine
        pipeline.engine = None
        if engine is None:
            engine = pipeline.build_engine(self.cpu_port, self.drop_port, self.backend)
        self.pipeline = pipeline
        self._install(engine, Tables(pipeline, engine), Replication(engine))
        self.cookie = cookie
        self._saved = None
        log.info("pipeline committed: %d tables, %d actions", len(pipeline.index.tables),
                 len(pipeline.index.actions))

    def _reconcile(self, pipeline: Pipeline, cookie):
        """Commit, keeping table entries and replication state that the new program accepts."""
        old_tables, old_replication = self.tables, self.replication
        old_pipeline = self.pipeline
        engine = pipeline.engine
        pipeline.engine = None
        tables, replication = Tables(pipeline, engine), Replication(engine)
        if old_tables is not None and old_pipeline is not None:
            for table_name, message in old_tables.messages_for_replay():
                try:
                    if pipeline.index.id_of("table", table_name) != message.table_id:
                        raise invalid("table id changed")
                    tables.write(p4runtime_pb2.Update.MODIFY if message.is_default_action
                                 else p4runtime_pb2.Update.INSERT, message)
                except (P4RuntimeError, KeyError) as exc:
                    log.warning("reconcile: dropped an entry of table '%s': %s", table_name, exc)
        if old_replication is not None:
            old_replication.replay_into(replication)
        old_engine = self.engine
        if old_engine is None:
            self.pipeline = pipeline
            self._install(engine, tables, replication)
        else:
            with old_engine.lock:  # no packet updates the old state between copy and swap
                _carry_stateful_externs(old_engine, engine)
                self.pipeline = pipeline
                self._install(engine, tables, replication)
        self.cookie = cookie

    def _install(self, engine, tables, replication):
        self.tables, self.replication = tables, replication
        self.engine = engine
        for listener in list(self.engine_listeners):
            listener(engine)

    def get_pipeline(self, request: p4runtime_pb2.GetForwardingPipelineConfigRequest
                     ) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        with self.lock:
            if self.pipeline is None:
                raise failed_precondition("no forwarding pipeline config has been set")
            response = p4runtime_pb2.GetForwardingPipelineConfigResponse()
            config = response.config
            kind = request.response_type
            if self.cookie is not None:
                config.cookie.cookie = self.cookie
            if kind in (GetRequest.ALL, GetRequest.P4INFO_AND_COOKIE):
                config.p4info.CopyFrom(self.pipeline.config.p4info)
            if kind in (GetRequest.ALL, GetRequest.DEVICE_CONFIG_AND_COOKIE):
                config.p4_device_config = self.pipeline.config.p4_device_config
            if kind not in (GetRequest.ALL, GetRequest.P4INFO_AND_COOKIE,
                            GetRequest.DEVICE_CONFIG_AND_COOKIE, GetRequest.COOKIE_ONLY):
                raise invalid(f"GetForwardingPipelineConfig: unknown response_type {kind}")
            return response

    # -- entities ------------------------------------------------------------------------------
    def _require_pipeline(self) -> None:
        if self.pipeline is None or self.tables is None:
            raise failed_precondition("no forwarding pipeline config has been set "
                                      "(SetForwardingPipelineConfig first)")

    def write(self, updates: Sequence[p4runtime_pb2.Update], atomic: bool = False) -> list[P4RuntimeError | None]:
        """Apply updates in order; returns None or the error per update.

        Not atomic (CONTINUE_ON_ERROR): every update is tried. Atomic (ROLLBACK_ON_ERROR,
        DATAPLANE_ATOMIC): the first failure undoes the updates already applied; the others are
        reported ABORTED."""
        with self.lock:
            self._require_pipeline()
            results: list[P4RuntimeError | None] = []
            undo = []
            with self.engine.lock:
                for update in updates:
                    try:
                        if atomic:
                            before = rollback.undo_updates(self, update)
                        self._write_one(update.type, update.entity)
                        results.append(None)
                        if atomic:
                            undo.append(before)
                    except P4RuntimeError as exc:
                        results.append(exc)
                        if atomic:
                            self._roll_back(undo)
                            aborted = aborted_error("rolled back: another update of the "
                                                    "atomic batch failed")
                            out: list[P4RuntimeError | None] = [r if r is not None else aborted for r in results]
                            return out + [aborted_error("not applied: an earlier update of the atomic "
                                                        "batch failed")] * (len(updates) - len(results))
            return results

    def _roll_back(self, undo):
        for updates in reversed(undo):
            for update in updates:
                try:
                    self._write_one(update.type, update.entity)
                except P4RuntimeError as exc:  # should not happen: state was read just before
                    log.error("rollback step failed: %s", exc)

    def _pipeline(self) -> Pipeline:
        if self.pipeline is None:
            raise failed_precondition("no forwarding pipeline config has been set "
                                      "(SetForwardingPipelineConfig first)")
        return self.pipeline

    def _tables(self) -> Tables:
        if self.tables is None:
            raise failed_precondition("no P4Info: tables need a pipeline pushed over P4Runtime")
        return self.tables

    def _replication(self) -> Replication:
        if self.replication is None:
            raise failed_precondition("no P4Info: replication needs a pipeline pushed over P4Runtime")
        return self.replication

    def _write_one(self, update_type, entity: p4runtime_pb2.Entity):
        if update_type == p4runtime_pb2.Update.UNSPECIFIED:
            raise invalid("Update.type is UNSPECIFIED")
        kind = entity.WhichOneof("entity")
        if kind == "table_entry":
            self._tables().write(update_type, entity.table_entry)
        elif kind == "register_entry":
            registers.write(self._pipeline(), self.engine, update_type, entity.register_entry)
        elif kind == "counter_entry":
            counters.write(self._pipeline(), self.engine, update_type, entity.counter_entry)
        elif kind == "direct_counter_entry":
            counters.write_direct(self._pipeline(), self._tables(), self.engine, update_type,
                                  entity.direct_counter_entry)
        elif kind == "packet_replication_engine_entry":
            self._replication().write(update_type, entity.packet_replication_engine_entry)
        elif kind == "meter_entry":
            meters.write(self._pipeline(), self.engine, update_type, entity.meter_entry)
        elif kind == "value_set_entry":
            value_sets.write(self._pipeline(), self.engine, update_type, entity.value_set_entry)
        elif kind is None:
            raise invalid("Update.entity is empty")
        else:
            raise unimplemented(f"{kind} is not supported by p4sim")

    def read(self, entities: Iterable[p4runtime_pb2.Entity], chunk: int = 1000) -> Iterator[bytes]:
        """Every entity matching the request's filters, as serialized ReadResponse messages of at
        most `chunk` entities.

        The request is checked before anything is returned (errors come before any data).  Table
        entries, replication, meters and value sets are read under the device lock, one request
        entity at a time; register and counter arrays are copied in blocks (consistent per cell,
        as on BMv2) without the device lock, so a read of hundreds of thousands of cells holds
        neither writes nor packets back for more than one block."""
        with self.lock:
            self._require_pipeline()
            pipeline, engine = self._pipeline(), self.engine
            plans = []
            for entity in entities:
                kind = entity.WhichOneof("entity")
                if kind == "register_entry":
                    plans.append(registers.plan_encoded(pipeline, engine, entity.register_entry))
                elif kind == "counter_entry":
                    plans.append(counters.plan_encoded(pipeline, engine, entity.counter_entry))
                else:
                    plans.append(self._read_small(entity))
        return self._stream(plans, chunk)

    def _read_small(self, entity):
        """Read one entity now (the caller holds the device lock; errors surface before any
        data); -> its wire blocks, serialized later outside the locks."""
        with self.engine.lock:
            found = list(self._read_one(entity))

        def blocks():
            for i in range(0, len(found), 1000):
                part = found[i:i + 1000]
                yield b"".join(read_response_bytes.entity_field(e) for e in part), len(part)
        return blocks()

    @staticmethod
    def _stream(plans, chunk):
        pending, count = [], 0
        for blocks in plans:
            for data, n in blocks:
                pending.append(data)
                count += n
                if count >= chunk:
                    yield b"".join(pending)
                    pending, count = [], 0
        if pending or count == 0:
            yield b"".join(pending)

    def _read_one(self, entity: p4runtime_pb2.Entity) -> Iterator[p4runtime_pb2.Entity]:
        kind = entity.WhichOneof("entity")
        if kind == "table_entry":
            for e in self._tables().read(entity.table_entry):
                yield p4runtime_pb2.Entity(table_entry=e)
        elif kind == "register_entry":
            for e in registers.read(self._pipeline(), self.engine, entity.register_entry):
                yield p4runtime_pb2.Entity(register_entry=e)
        elif kind == "counter_entry":
            for e in counters.read(self._pipeline(), self.engine, entity.counter_entry):
                yield p4runtime_pb2.Entity(counter_entry=e)
        elif kind == "direct_counter_entry":
            for e in counters.read_direct(self._pipeline(), self._tables(), entity.direct_counter_entry):
                yield p4runtime_pb2.Entity(direct_counter_entry=e)
        elif kind == "packet_replication_engine_entry":
            for e in self._replication().read(entity.packet_replication_engine_entry):
                yield p4runtime_pb2.Entity(packet_replication_engine_entry=e)
        elif kind == "meter_entry":
            for e in meters.read(self._pipeline(), self.engine, entity.meter_entry):
                yield p4runtime_pb2.Entity(meter_entry=e)
        elif kind == "value_set_entry":
            for e in value_sets.read(self._pipeline(), self.engine, entity.value_set_entry):
                yield p4runtime_pb2.Entity(value_set_entry=e)
        elif kind is None:
            raise invalid("Read: an entity is empty")
        else:
            raise unimplemented(f"reading {kind} is not supported by p4sim")


def _carry_stateful_externs(old, new):
    """Copy register cells and indirect counters that keep their name, size and width, so a
    RECONCILE_AND_COMMIT of the same program does not lose data-plane state (e.g. partial sums)."""
    for name, info in old.program.registers.items():
        target = new.program.registers.get(name)
        if target is None or (target.size, target.width) != (info.size, info.width):
            continue
        for index, value in enumerate(old.register_read(name)):
            if value:
                new.register_write(name, index, value)
    for name, info in old.program.counters.items():
        target = new.program.counters.get(name)
        if info.direct or target is None or target.direct or target.size != info.size:
            continue
        for index, (packets, octets) in enumerate(old.counter_read(name)):
            if packets or octets:
                new.counter_write(name, index, packets, octets)
