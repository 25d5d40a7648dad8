"""Client arbitration (P4Runtime spec "Client Arbitration and Controller Replication").

Per role, the connected stream with the highest election id is the primary; every other stream
of that role is a backup. Writes and SetForwardingPipelineConfig must carry the primary's
election id. Every change of primary is announced to all streams of the role. Only the default
role and the roles configured on the device can be arbitrated for (roles.py).

Streams are bounded (StreamLimits): each one holds a server thread for its whole life, so idle
streams must never take the threads unary RPCs (Write, Read, pipeline) need.
"""
from __future__ import annotations

import itertools
import logging
import queue
import threading
from typing import TYPE_CHECKING

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from .errors import failed_precondition, invalid, not_found, permission_denied, resource_exhausted, unimplemented
from .roles import Roles

if TYPE_CHECKING:
    from .errors import P4RuntimeError

log = logging.getLogger("p4sim.runtime")


def election_value(election_id: p4runtime_pb2.Uint128) -> int:
    return (election_id.high << 64) | election_id.low


class StreamSession:
    """One StreamChannel: its arbitration data and the queue of messages to send it."""

    _ids = itertools.count(1)

    def __init__(self, peer: str = ""):
        self.id = next(StreamSession._ids)
        self.peer = peer
        self.role: str | None = None   # set by the first arbitration message
        self.role_message = p4runtime_pb2.Role()
        self.election_id: int | None = None
        self.outbox: queue.Queue = queue.Queue(maxsize=4096)
        self.dropped_in_a_row = 0

    def send(self, message: p4runtime_pb2.StreamMessageResponse) -> None:
        """Queue a message; if the client does not keep up, drop it (warned once per overflow)."""
        try:
            self.outbox.put_nowait(message)
            self.dropped_in_a_row = 0
        except queue.Full:
            if not self.dropped_in_a_row:
                log.warning("stream %s (%s): client is not reading, dropping stream messages",
                            self.id, self.peer)
            self.dropped_in_a_row += 1

    def close(self, error: P4RuntimeError | None = None) -> None:
        """Ask the stream's response loop to end (with an error status if given). Never blocks:
        a full outbox loses its oldest message to make room."""
        while True:
            try:
                self.outbox.put_nowait(("close", error))
                return
            except queue.Full:
                try:
                    self.outbox.get_nowait()
                except queue.Empty:
                    pass


def client_of(peer: str) -> str:
    """The client host of a gRPC peer string ('ipv4:127.0.0.1:5000' -> 'ipv4:127.0.0.1')."""
    if peer.startswith(("ipv4:", "ipv6:")):
        return peer.rsplit(":", 1)[0]
    return peer


class StreamLimits:
    """At most `per_client` open StreamChannels per client host and `total` in all.

    A stream that has not arbitrated yet (no MasterArbitrationUpdate accepted) is a candidate for
    eviction: when a new stream would pass a limit, the oldest such stream (of the same host for
    the per-host limit, of any host for the total) is closed with RESOURCE_EXHAUSTED to make room.
    Only when every stream that counts is arbitrated is the new stream refused. So idle streams
    can never lock out a client that arbitrates; they also end on their own after the server's
    arbitration timeout (P4RuntimeService)."""

    def __init__(self, per_client: int, total: int):
        self.per_client, self.total = per_client, total
        self.lock = threading.Lock()
        self.streams: list[StreamSession] = []      # open streams, oldest first

    @property
    def open(self) -> dict[str, int]:
        """Open streams per client host."""
        with self.lock:
            counts: dict[str, int] = {}
            for s in self.streams:
                counts[client_of(s.peer)] = counts.get(client_of(s.peer), 0) + 1
            return counts

    def acquire(self, session: StreamSession) -> None:
        """Count `session` in, evicting an unarbitrated stream if a limit is reached; raises
        RESOURCE_EXHAUSTED (naming the limit) when nothing can be evicted."""
        client = client_of(session.peer)
        evicted: list[StreamSession] = []
        with self.lock:
            mine = [s for s in self.streams if client_of(s.peer) == client]
            if len(mine) >= self.per_client:
                victim = next((s for s in mine if s.role is None), None)
                if victim is None:
                    raise resource_exhausted(f"StreamChannel: client {client} already has {len(mine)} "
                                             f"open streams, the most one client may have; close one first")
                self.streams.remove(victim)
                evicted.append(victim)
            if len(self.streams) >= self.total:
                victim = next((s for s in self.streams if s.role is None), None)
                if victim is None:
                    for s in evicted:           # nothing admitted: the evicted stream stays
                        self.streams.append(s)
                    raise resource_exhausted(f"StreamChannel: the device already serves {len(self.streams)} "
                                             f"streams, the most it keeps open at once")
                self.streams.remove(victim)
                evicted.append(victim)
            self.streams.append(session)
        for victim in evicted:
            log.warning("stream %s (%s) closed: it had not arbitrated and a new stream from %s needed its place",
                        victim.id, victim.peer, client)
            victim.close(resource_exhausted("StreamChannel closed: the stream had not sent a "
                                            "MasterArbitrationUpdate and its place was needed"))

    def release(self, session: StreamSession) -> None:
        with self.lock:
            if session in self.streams:
                self.streams.remove(session)


class Arbitration:
    def __init__(self, device_id: int, roles: Roles | None = None):
        self.device_id = device_id
        self.roles = roles or Roles()
        self.lock = threading.Lock()
        self.sessions: list[StreamSession] = []
        self.primary: dict[str, StreamSession] = {}
        self.highest: dict[str, int] = {}

    def update(self, session: StreamSession, update: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        """Handle a MasterArbitrationUpdate; raises (ending the stream) on a bad request."""
        if update.device_id != self.device_id:
            raise not_found(f"MasterArbitrationUpdate: device_id {update.device_id} is not this "
                            f"device ({self.device_id})")
        role = update.role.name if update.HasField("role") else ""
        if update.role.id:
            raise unimplemented("MasterArbitrationUpdate: role.id is deprecated, name the role (role.name)")
        self.roles.check_known(role, "MasterArbitrationUpdate")
        if update.role.HasField("config"):
            raise invalid(f"MasterArbitrationUpdate: role '{role}': role.config must be unset; this "
                          f"device's roles are configured on the device (p4sim-switch --role)")
        election = election_value(update.election_id) if update.HasField("election_id") else None
        with self.lock:
            if session.role is not None and session.role != role:
                raise failed_precondition(f"MasterArbitrationUpdate: the stream is bound to role "
                                          f"'{session.role}', it cannot switch to '{role}'")
            for other in self.sessions:
                if (other is not session and other.role == role and election is not None
                        and other.election_id == election):
                    raise invalid(f"MasterArbitrationUpdate: election id {election} is already "
                                  f"used by another client of role '{role or 'default'}'")
            session.role = role
            session.role_message.CopyFrom(update.role)
            session.election_id = election
            if session not in self.sessions:
                self.sessions.append(session)
            if election is not None:
                self.highest[role] = max(self.highest.get(role, 0), election)
            changed = self._elect(role)
            targets = [s for s in self.sessions if s.role == role] if changed else [session]
            for target in targets:
                target.send(self._status_for(target))

    def remove(self, session: StreamSession) -> None:
        with self.lock:
            if session not in self.sessions:
                return
            self.sessions.remove(session)
            role = session.role
            if role is None:  # never arbitrated: it was no role's candidate
                return
            if self._elect(role):
                for target in self.sessions:
                    if target.role == role:
                        target.send(self._status_for(target))

    def _elect(self, role: str) -> bool:
        """Recompute the primary of a role; True if it changed."""
        candidates = [s for s in self.sessions if s.role == role and s.election_id is not None]
        new = max(candidates, key=lambda s: s.election_id or 0, default=None)
        old = self.primary.get(role)
        if new is None:
            self.primary.pop(role, None)
        else:
            self.primary[role] = new
        if new is not old:
            log.info("role '%s': primary is now %s", role or "default",
                     f"election id {new.election_id} ({new.peer})" if new else "none")
        return new is not old

    def _status_for(self, session: StreamSession) -> p4runtime_pb2.StreamMessageResponse:
        role = session.role or ""
        primary = self.primary.get(role)
        response = p4runtime_pb2.StreamMessageResponse()
        arb = response.arbitration
        arb.device_id = self.device_id
        if role:
            arb.role.CopyFrom(session.role_message)
        election = (primary.election_id or 0) if primary else self.highest.get(role, 0)
        arb.election_id.high = election >> 64
        arb.election_id.low = election & ((1 << 64) - 1)
        if primary is session:
            arb.status.code = code_pb2.OK
            arb.status.message = "Is primary"
        elif primary is not None:
            arb.status.code = code_pb2.ALREADY_EXISTS
            arb.status.message = "Is backup (a primary client exists)"
        else:
            arb.status.code = code_pb2.NOT_FOUND
            arb.status.message = "No primary client"
        return response

    def check_primary(self, election_id: p4runtime_pb2.Uint128, role: str, what: str) -> None:
        """PERMISSION_DENIED unless `election_id` is the current primary's of `role`."""
        election = election_value(election_id)
        with self.lock:
            primary = self.primary.get(role)
            if primary is None:
                raise permission_denied(f"{what}: no primary client for role "
                                        f"'{role or 'default'}' (open a StreamChannel and send a "
                                        f"MasterArbitrationUpdate first)")
            if primary.election_id != election:
                raise permission_denied(f"{what}: election id {election} is not the primary's "
                                        f"({primary.election_id}) for role '{role or 'default'}'")

    def is_primary(self, session: StreamSession) -> bool:
        with self.lock:
            return session.role is not None and self.primary.get(session.role) is session

    def primaries(self, role: str = "") -> list[StreamSession]:
        """The primary of `role` (default: the default role), as a list of zero or one."""
        with self.lock:
            primary = self.primary.get(role)
            return [primary] if primary is not None else []

    def close_all(self) -> None:
        with self.lock:
            sessions = list(self.sessions)
        for session in sessions:
            session.close()
