"""Forwarding state from the topology: host routes, L2 entries, the flood group, the source guard,
extra entries.

For each switch: `ipv4_routes` sends each host's /32 (and the aggregation switch's address, from
other switches) out of the port towards it; `l2_forward` does the same by MAC and floods broadcast
through multicast group FLOOD_GROUP (every host port and inter-switch port); `source_guard` binds
each port with a host attached to that host's IPv4 address, so the host cannot send under another
(a worker's, or the aggregation address: docs/protocol.md section 3); `arp_responder` answers ARP
for the aggregating switch's own address. Installing twice is
harmless: an entry that exists is modified, so a restarted controller can re-run it.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from p4reduce.controller import defaults
from p4reduce.controller.connection import SwitchConnection, Update, update
from p4reduce.controller.entities import multicast_group, table_entry
from p4reduce.controller.errors import SwitchError
from p4reduce.controller.p4info import P4InfoIndex
from p4reduce.controller.topology import Host, Topology
from p4reduce.protocol import p4names

log = logging.getLogger("p4reduce.controller.forwarding")

BROADCAST = "ff:ff:ff:ff:ff:ff"


def forwarding_entries(topology: Topology, switch_name: str, index: P4InfoIndex) -> list[tuple[str, Any]]:
    """(description, entity) pairs this switch needs; skips tables the program lacks."""
    out = []
    has_routes = index.has("table", p4names.IPV4_ROUTES)
    has_l2 = index.has("table", p4names.L2_FORWARD)
    flood_ports = set()
    for host in topology.hosts.values():
        port = topology.next_hop_port(switch_name, host)
        if port is None:
            continue
        flood_ports.add(port)
        if has_routes:
            out.append((f"route {host.ip}/32 -> port {port}",
                        table_entry(index, p4names.IPV4_ROUTES, {p4names.IPV4_ROUTES_KEY[0]: f"{host.ip}/32"},
                                    p4names.FORWARD, {"port": port})))
        if has_l2:
            out.append((f"l2 {host.mac} -> port {port}",
                        table_entry(index, p4names.L2_FORWARD, {p4names.L2_FORWARD_KEY[0]: host.mac},
                                    p4names.FORWARD, {"port": port})))
    agg = topology.aggregation_switch
    if has_routes and agg.name != switch_name and agg.ip:
        port = topology.port_towards(switch_name, agg.name)
        if port is not None:
            out.append((f"route {agg.ip}/32 (aggregation switch {agg.name}) -> port {port}",
                        table_entry(index, p4names.IPV4_ROUTES, {p4names.IPV4_ROUTES_KEY[0]: f"{agg.ip}/32"},
                                    p4names.FORWARD, {"port": port})))
    for a, ap, b, bp in topology.links:
        if a == switch_name:
            flood_ports.add(ap)
        if b == switch_name:
            flood_ports.add(bp)
    if has_l2 and flood_ports:
        out.append((f"l2 {BROADCAST} -> flood group {defaults.FLOOD_GROUP}",
                    table_entry(index, p4names.L2_FORWARD, {p4names.L2_FORWARD_KEY[0]: BROADCAST},
                                p4names.FLOOD, {"mcast_grp": defaults.FLOOD_GROUP})))
        out.append((f"multicast group {defaults.FLOOD_GROUP}: ports {sorted(flood_ports)}",
                    multicast_group(defaults.FLOOD_GROUP, [(p, 0) for p in sorted(flood_ports)])))
    for ent in topology.entries:
        if ent.get("switch", switch_name) != switch_name:
            continue
        try:
            te = table_entry(index, ent["table"], ent.get("match", {}), ent["action"], ent.get("params", {}),
                             ent.get("priority"))
        except ValueError as e:
            raise SwitchError(f"{ent['where']}: {e}", code="bad_topology", http_status=400) from None
        out.append((f"{ent['table']} {ent.get('match', {})} -> {ent['action']}", te))
    out.extend(source_guard_entries(topology, switch_name, index))
    out.extend(arp_responder_entries(topology, switch_name, index))
    if not has_routes and not has_l2:
        log.warning("switch %s: the program has neither %s nor %s; only explicit entries installed",
                    switch_name, p4names.IPV4_ROUTES, p4names.L2_FORWARD)
    return out


def source_guard_entries(topology: Topology, switch_name: str, index: P4InfoIndex) -> list[tuple[str, Any]]:
    """(description, entity) pairs binding this switch's host ports to their hosts' addresses.
    A port with several hosts behind it (a hub) is left unguarded rather than cut off."""
    if not index.has("table", p4names.SOURCE_GUARD):
        return []
    by_port: dict[int, list[Host]] = {}
    for host in topology.hosts.values():
        if host.switch == switch_name:
            by_port.setdefault(host.port, []).append(host)
    out = []
    for port, hosts in sorted(by_port.items()):
        if len(hosts) > 1:
            log.warning("switch %s port %d: hosts %s share it; its source is not guarded", switch_name, port,
                        ", ".join(h.name for h in hosts))
            continue
        host = hosts[0]
        out.append((f"source guard port {port} -> {host.ip} ({host.name})",
                    table_entry(index, p4names.SOURCE_GUARD, {p4names.SOURCE_GUARD_KEY[0]: port},
                                p4names.HOST_SOURCE, {"ip": host.ip})))
    return out


def arp_responder_entries(topology: Topology, switch_name: str, index: P4InfoIndex) -> list[tuple[str, Any]]:
    """On the aggregating switch: answer ARP for its service address (`ip` -> `mac`), so hosts
    need no static ARP entry for it (docs/deploy.md)."""
    agg = topology.aggregation_switch
    if agg.name != switch_name or not agg.ip or not agg.mac or not index.has("table", p4names.ARP_RESPONDER):
        return []
    return [(f"arp {agg.ip} is at {agg.mac}",
             table_entry(index, p4names.ARP_RESPONDER, {p4names.ARP_RESPONDER_KEY[0]: agg.ip},
                         p4names.ARP_REPLY, {"mac": agg.mac}))]


def install_forwarding(conn: SwitchConnection, topology: Topology, switch_name: str,
                       report: Callable[[str], None] | None = None) -> int:
    """Insert (or modify, when present) every forwarding entry; returns how many were written."""
    report = report or log.info
    entries = forwarding_entries(topology, switch_name, conn.pipeline)
    for desc, ent in entries:
        try:
            conn.write([update(Update.INSERT, ent)])
        except SwitchError as e:
            if "ALREADY_EXISTS" not in e.message:
                raise SwitchError(f"switch {switch_name}: installing {desc}: {e.message}") from None
            conn.write([update(Update.MODIFY, ent)])
    report(f"switch {switch_name}: {len(entries)} forwarding entries installed")
    return len(entries)
