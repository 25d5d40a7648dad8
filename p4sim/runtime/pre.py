"""PacketReplicationEngineEntry: multicast groups and clone sessions.

The runtime keeps what was written (for ALREADY_EXISTS / NOT_FOUND and for reads) and mirrors it
into the engine's packet replication engine.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from p4.v1 import p4runtime_pb2

from . import bytestrings
from .errors import already_exists, call_engine, invalid, not_found, unimplemented

if TYPE_CHECKING:
    from p4sim.engine import Engine

INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE


def _replicas(what, replicas) -> list[tuple[int, int]]:
    out = []
    for replica in replicas:
        kind = replica.WhichOneof("port_kind")
        if kind == "port":
            port = bytestrings.decode(replica.port, 32, f"{what} replica port")
        else:
            port = replica.egress_port
        if (port, replica.instance) in out:
            raise invalid(f"{what}: replica (port {port}, instance {replica.instance}) is listed twice")
        out.append((port, replica.instance))
    return out


class Replication:
    """Multicast groups and clone sessions of one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.groups: dict[int, p4runtime_pb2.MulticastGroupEntry] = {}
        self.sessions: dict[int, p4runtime_pb2.CloneSessionEntry] = {}

    def write(self, update_type: int, entry: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
        kind = entry.WhichOneof("type")
        if kind == "multicast_group_entry":
            self._write_group(update_type, entry.multicast_group_entry)
        elif kind == "clone_session_entry":
            self._write_session(update_type, entry.clone_session_entry)
        else:
            raise invalid("PacketReplicationEngineEntry: neither multicast_group_entry nor "
                          "clone_session_entry is set")

    def _write_group(self, update_type, group):
        gid = group.multicast_group_id
        what = f"multicast group {gid}"
        if gid == 0:
            raise invalid("multicast group id 0 is reserved (no multicast)")
        self._check_existence(update_type, gid in self.groups, what)
        if update_type == DELETE:
            call_engine(what, self.engine.mc_group_delete, gid)
            del self.groups[gid]
            return
        replicas = _replicas(what, group.replicas)
        call_engine(what, self.engine.mc_group_set, gid, replicas)
        self.groups[gid] = _canonical_group(group, replicas)

    def _write_session(self, update_type, session):
        sid = session.session_id
        what = f"clone session {sid}"
        if sid == 0:
            raise invalid("clone session id 0 is reserved")
        self._check_existence(update_type, sid in self.sessions, what)
        if update_type == DELETE:
            call_engine(what, self.engine.clone_session_delete, sid)
            del self.sessions[sid]
            return
        replicas = _replicas(what, session.replicas)
        call_engine(what, self.engine.clone_session_set, sid, replicas,
                    packet_length_bytes=session.packet_length_bytes)
        stored = p4runtime_pb2.CloneSessionEntry(
            session_id=sid, class_of_service=session.class_of_service,
            packet_length_bytes=session.packet_length_bytes)
        for port, instance in replicas:
            stored.replicas.add(egress_port=port, instance=instance)
        self.sessions[sid] = stored

    @staticmethod
    def _check_existence(update_type, exists, what):
        if update_type == INSERT and exists:
            raise already_exists(f"{what} already exists")
        if update_type in (MODIFY, DELETE) and not exists:
            raise not_found(f"{what} does not exist")
        if update_type not in (INSERT, MODIFY, DELETE):
            raise invalid(f"{what}: unknown update type {update_type}")

    def read(self, entry: p4runtime_pb2.PacketReplicationEngineEntry
             ) -> Iterator[p4runtime_pb2.PacketReplicationEngineEntry]:
        kind = entry.WhichOneof("type")
        if kind == "multicast_group_entry":
            gid = entry.multicast_group_entry.multicast_group_id
            for key in ([gid] if gid else sorted(self.groups)):
                if key in self.groups:
                    yield p4runtime_pb2.PacketReplicationEngineEntry(
                        multicast_group_entry=self.groups[key])
        elif kind == "clone_session_entry":
            sid = entry.clone_session_entry.session_id
            for key in ([sid] if sid else sorted(self.sessions)):
                if key in self.sessions:
                    yield p4runtime_pb2.PacketReplicationEngineEntry(
                        clone_session_entry=self.sessions[key])
        else:
            raise unimplemented("PacketReplicationEngineEntry read: set multicast_group_entry or "
                                "clone_session_entry")

    def replay_into(self, other: Replication) -> None:
        for group in self.groups.values():
            other.write(INSERT, p4runtime_pb2.PacketReplicationEngineEntry(multicast_group_entry=group))
        for session in self.sessions.values():
            other.write(INSERT, p4runtime_pb2.PacketReplicationEngineEntry(clone_session_entry=session))


def _canonical_group(group, replicas):
    stored = p4runtime_pb2.MulticastGroupEntry(
        multicast_group_id=group.multicast_group_id, metadata=group.metadata)
    for port, instance in replicas:
        stored.replicas.add(egress_port=port, instance=instance)
    return stored
