"""Roles (P4Runtime spec, "Arbitration and Controller Replication" and "Role Config"): which
clients may change which entities.

The default role (empty name) has full pipeline access. Any other role must be configured on the
switch (`p4sim-switch ... -- --role NAME=OBJECT[,OBJECT...]`): arbitrating as a role that is not
configured is NOT_FOUND, as the spec requires for a role the device does not know, so a second
client cannot make itself primary of a role of its own choosing and write around the controller.
A configured role is confined to its objects: P4Info names of tables (with their direct counters
and meters), registers, counters, meters, value sets and action profiles, plus `multicast` and
`clone` for the packet replication engine's groups and sessions; any other update is
PERMISSION_DENIED. Only the default role may set the pipeline or send packets (PacketOut), and
PacketIn goes to the default role's primary. The role configuration is the switch's: a client's
`Role.config` must be unset (INVALID_ARGUMENT otherwise).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import not_found, permission_denied

if TYPE_CHECKING:
    from p4.v1 import p4runtime_pb2

    from .p4info_index import P4InfoIndex

MULTICAST = "multicast"    # role object: PacketReplicationEngineEntry multicast_group_entry
CLONE = "clone"            # role object: PacketReplicationEngineEntry clone_session_entry
ROLE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
OBJECT_NAME = re.compile(r"[A-Za-z0-9_.$\[\]-]{1,256}")


class RoleConfigError(ValueError):
    """A --role argument that cannot be used (the message names the problem)."""


@dataclass(frozen=True)
class Role:
    name: str
    objects: frozenset[str]


def parse_role(text: str) -> Role:
    """`NAME=OBJECT[,OBJECT...]` -> Role."""
    name, sep, objects = text.partition("=")
    if not sep or not ROLE_NAME.fullmatch(name):
        raise RoleConfigError(f"--role {text!r}: expected NAME=OBJECT[,OBJECT...] with NAME of 1-64 "
                              f"characters [A-Za-z0-9_.-]")
    names = [o.strip() for o in objects.split(",") if o.strip()]
    if not names:
        raise RoleConfigError(f"--role {text!r}: role {name!r} names no object")
    for obj in names:
        if not OBJECT_NAME.fullmatch(obj):
            raise RoleConfigError(f"--role {text!r}: {obj!r} is not a P4Info object name")
    return Role(name, frozenset(names))


class Roles:
    """The roles a device accepts besides the default one."""

    def __init__(self, roles: Iterable[Role] = ()):
        self.by_name: dict[str, Role] = {}
        for role in roles:
            if role.name in self.by_name:
                raise RoleConfigError(f"--role: role {role.name!r} is configured twice")
            self.by_name[role.name] = role

    def check_known(self, role: str, what: str) -> None:
        """NOT_FOUND for a role that is neither the default nor configured."""
        if role and role not in self.by_name:
            known = ", ".join(sorted(self.by_name)) or "none"
            raise not_found(f"{what}: role '{role}' is not configured on this device (configured "
                            f"roles: {known}; the default role has an empty name)")

    def check_default(self, role: str, what: str) -> None:
        """PERMISSION_DENIED unless `role` is the default role."""
        if role:
            raise permission_denied(f"{what}: only the default role may do this, not role '{role}'")

    def check_write(self, role: str, updates: Iterable[p4runtime_pb2.Update], index: P4InfoIndex | None) -> None:
        """PERMISSION_DENIED naming the first update outside the role's objects."""
        if not role:
            return
        allowed = self.by_name[role].objects
        for position, update in enumerate(updates):
            target = entity_object(update.entity, index)
            if target not in allowed:
                raise permission_denied(f"Write: update {position}: {target} is not an object of role "
                                        f"'{role}' (its objects: {', '.join(sorted(allowed))})")


def entity_object(entity: p4runtime_pb2.Entity, index: P4InfoIndex | None) -> str:
    """The role object an Entity touches: a P4Info name, `multicast`, `clone`, or a description
    of what it is when it names nothing the P4Info has."""
    kind = entity.WhichOneof("entity")
    if kind == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry.WhichOneof("type")
        return MULTICAST if pre == "multicast_group_entry" else CLONE if pre == "clone_session_entry" else str(pre)
    # entity kind -> (its object id, what the id names, the P4Info objects by id)
    lookups: dict[str, tuple[Callable[[p4runtime_pb2.Entity], int], str, Mapping[int, Any]]] = {
        "table_entry": (lambda e: e.table_entry.table_id, "table", index.tables if index else {}),
        "direct_counter_entry": (lambda e: e.direct_counter_entry.table_entry.table_id, "table",
                                 index.tables if index else {}),
        "direct_meter_entry": (lambda e: e.direct_meter_entry.table_entry.table_id, "table",
                               index.tables if index else {}),
        "register_entry": (lambda e: e.register_entry.register_id, "register", index.registers if index else {}),
        "counter_entry": (lambda e: e.counter_entry.counter_id, "counter", index.counters if index else {}),
        "meter_entry": (lambda e: e.meter_entry.meter_id, "meter", index.meters if index else {}),
        "value_set_entry": (lambda e: e.value_set_entry.value_set_id, "value set",
                            index.value_sets if index else {}),
    }
    if kind in lookups:
        get_id, what, known = lookups[kind]
        object_id = get_id(entity)
        info = known.get(object_id)
        return info.name if info is not None else f"{what} id {object_id}"
    if kind in ("action_profile_member", "action_profile_group"):
        return f"action profile id {getattr(entity, kind).action_profile_id}"
    return f"a {kind or 'empty'} entity"
