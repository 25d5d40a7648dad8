"""The topology description: switches, hosts and links, from a JSON or YAML file.

The Mininet topology writes one (run/topology.json); people may write one by hand. Format:

    switches:
      s1: {grpc_addr: "127.0.0.1:9559", device_id: 0, thrift_port: 9090,
           ip: "10.0.0.254", mac: "00:00:00:00:01:fe", aggregate: true}
    hosts:
      h1: {ip: "10.0.0.1", mac: "00:00:00:00:00:01", switch: s1, port: 1,
           api_source: "127.100.0.1"}   # optional: the job-API relay's address for this host
    service: {ip: "10.0.0.254", mac: "00:00:00:00:01:fe"}   # optional: the aggregating switch's
    links:            # switch-to-switch links (optional)
      - {a: s1, a_port: 5, b: s2, b_port: 1}
    entries:          # extra table entries (optional), p4runtime-shell value syntax
      - {switch: s1, table: ipv4_routes, match: {hdr.ipv4.dstAddr: "10.1.0.0/16"},
         action: route, params: {port: 3, dst_mac: "00:00:00:00:03:00", src_mac: "00:00:00:00:01:fe"}}

Every problem is reported as "FILE: object.field: what is wrong".
"""
from __future__ import annotations

import collections
import json
import pathlib
from collections.abc import Iterable
from typing import Any

import yaml

from p4reduce.controller.codec import parse_int, parse_ipv4, parse_mac


class TopologyError(ValueError):
    pass


Link = tuple[str, int, str, int]   # a switch-to-switch link: (a, a_port, b, b_port)


class Switch:
    def __init__(self, name: str, grpc_addr: str, device_id: int = 0, thrift_port: int | None = None,
                 ip: str | None = None, mac: str | None = None, aggregate: bool = False, cpu_port: int | None = None):
        self.name, self.grpc_addr, self.device_id = name, grpc_addr, device_id
        self.thrift_port, self.ip, self.mac = thrift_port, ip, mac
        self.aggregate, self.cpu_port = aggregate, cpu_port


class Host:
    def __init__(self, name: str, ip: str, mac: str, switch: str, port: int, api_source: str | None = None):
        self.name, self.ip, self.mac, self.switch, self.port = name, ip, mac, switch, port
        self.api_source = api_source  # address the job-API relay calls from on this host's behalf


class Topology:
    """Switches, hosts, links, and the port each switch uses to reach each host."""

    def __init__(self, switches: Iterable[Switch], hosts: Iterable[Host], links: Iterable[Link] = (),
                 entries: Iterable[dict[str, Any]] = ()):
        self.switches = {s.name: s for s in switches}
        self.hosts = {h.name: h for h in hosts}
        self.links = list(links)
        self.entries = list(entries)  # extra table entries: {switch, table, match, action, params, priority}

    @property
    def aggregation_switch(self) -> Switch:
        """The switch that aggregates: the one marked `aggregate`, else the first."""
        for s in self.switches.values():
            if s.aggregate:
                return s
        return next(iter(self.switches.values()))

    def host_by_ip(self, ip: str) -> Host | None:
        for h in self.hosts.values():
            if h.ip == ip:
                return h
        return None

    def host_by_source(self, addr: str) -> Host | None:
        """The host a job-API request came from: its own IP, or the relay address standing for it."""
        for h in self.hosts.values():
            if h.api_source == addr:
                return h
        return self.host_by_ip(addr)

    def next_hop_port(self, switch: str, host: Host) -> int | None:
        """Port of `switch` on a shortest path to `host` (None if unreachable)."""
        if host.switch == switch:
            return host.port
        return self.port_towards(switch, host.switch)

    def arrival_port(self, switch: str, host: Host) -> int | None:
        """Port of `switch` on which `host`'s packets to it arrive, following the routes the
        controller installs (each switch forwards towards `switch` by `port_towards`): what the
        aggregating switch binds a worker to (docs/protocol.md section 3). None if unreachable."""
        here, port = host.switch, host.port
        visited = set()
        while here != switch:
            if here in visited:
                return None
            visited.add(here)
            out = self.port_towards(here, switch)
            nxt = self._link_peer(here, out)
            if nxt is None:
                return None
            here, port = nxt
        return port

    def _link_peer(self, switch: str, port: int | None) -> tuple[str, int] | None:
        """(switch, port) at the far end of the link leaving `switch` by `port`, or None."""
        for a, ap, b, bp in self.links:
            if (a, ap) == (switch, port):
                return b, bp
            if (b, bp) == (switch, port):
                return a, ap
        return None

    def port_towards(self, switch: str, target: str) -> int | None:
        """Port of `switch` on a shortest path to switch `target` (None if unreachable or same)."""
        adj = collections.defaultdict(list)
        for a, ap, b, bp in self.links:
            adj[a].append((b, ap))
            adj[b].append((a, bp))
        seen, frontier = {switch}, collections.deque((n, p) for n, p in adj[switch])
        while frontier:
            node, first_port = frontier.popleft()
            if node in seen:
                continue
            seen.add(node)
            if node == target:
                return first_port
            frontier.extend((n, first_port) for n, _ in adj[node] if n not in seen)
        return None


def _require(obj: Any, key: str, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise TopologyError(f"{where}: missing field '{key}'")
    return obj[key]


def _ip(value: object, where: str) -> str:
    try:
        return parse_ipv4(value, where)
    except ValueError as e:
        raise TopologyError(str(e)) from None


def _mac(value: object, where: str) -> str:
    try:
        return parse_mac(value, where)
    except ValueError as e:
        raise TopologyError(str(e)) from None


def _int(value: object, where: str, lo: int = 0, hi: int | None = None) -> int:
    try:
        n = parse_int(value, None, where)
    except ValueError as e:
        raise TopologyError(str(e)) from None
    if n < lo or (hi is not None and n > hi):
        raise TopologyError(f"{where}: {value!r} is out of range")
    return n


def from_dict(data: Any, source: str = "topology") -> Topology:
    if not isinstance(data, dict):
        raise TopologyError(f"{source}: expected a mapping with 'switches' and 'hosts'")
    raw_switches = data.get("switches") or {}
    if isinstance(raw_switches, list):  # also accept a list of {name: ...} (mininet_topos writes that)
        raw_switches = {s.get("name") if isinstance(s, dict) else None: s for s in raw_switches}
    if not raw_switches:
        raise TopologyError(f"{source}: no switches")
    switches = []
    for name, s in raw_switches.items():
        where = f"{source}: switches.{name}"
        addr = _require(s, "grpc_addr", where)
        if not isinstance(addr, str) or ":" not in addr:
            raise TopologyError(f"{where}.grpc_addr: expected HOST:PORT, got {addr!r}")
        switches.append(Switch(
            name, addr,
            device_id=_int(s.get("device_id", 0), f"{where}.device_id"),
            thrift_port=_int(s["thrift_port"], f"{where}.thrift_port", 1, 65535) if s.get("thrift_port") else None,
            ip=_ip(s["ip"], f"{where}.ip") if s.get("ip") else None,
            mac=_mac(s["mac"], f"{where}.mac") if s.get("mac") else None,
            aggregate=bool(s.get("aggregate", False)),
            cpu_port=_int(s["cpu_port"], f"{where}.cpu_port") if s.get("cpu_port") is not None else None))
    service = data.get("service") or {}
    if service:  # mininet_topos' description: where workers send, owned by the aggregating switch
        agg = next((s for s in switches if s.aggregate), switches[0])
        agg.ip = agg.ip or _ip(_require(service, "ip", f"{source}: service"), f"{source}: service.ip")
        agg.mac = agg.mac or _mac(_require(service, "mac", f"{source}: service"), f"{source}: service.mac")
    names = {s.name for s in switches}
    raw_hosts = data.get("hosts") or {}
    if isinstance(raw_hosts, list):
        raw_hosts = {h.get("name"): h for h in raw_hosts}
    hosts: list[Host] = []
    ips: dict[str, str] = {}
    for name, h in raw_hosts.items():
        where = f"{source}: hosts.{name}"
        ip = _ip(_require(h, "ip", where), f"{where}.ip")
        if ip in ips:
            raise TopologyError(f"{where}.ip: {ip} is also the address of host {ips[ip]}")
        ips[ip] = name
        sw = _require(h, "switch", where)
        if sw not in names:
            raise TopologyError(f"{where}.switch: no switch named {sw!r}")
        hosts.append(Host(name, ip, _mac(_require(h, "mac", where), f"{where}.mac"), sw,
                          _int(_require(h, "port", where), f"{where}.port", 0, 510),
                          _ip(h["api_source"], f"{where}.api_source") if h.get("api_source") else None))
    links = []
    for i, link in enumerate(data.get("links") or []):
        where = f"{source}: links[{i}]"
        a, b = _require(link, "a", where), _require(link, "b", where)
        for end in (a, b):
            if end not in names:
                raise TopologyError(f"{where}: no switch named {end!r}")
        links.append((a, _int(_require(link, "a_port", where), f"{where}.a_port"),
                      b, _int(_require(link, "b_port", where), f"{where}.b_port")))
    entries = []
    for i, ent in enumerate(data.get("entries") or []):
        where = f"{source}: entries[{i}]"
        for key in ("table", "action"):
            _require(ent, key, where)
        sw = ent.get("switch")
        if sw is not None and sw not in names:
            raise TopologyError(f"{where}.switch: no switch named {sw!r}")
        if not isinstance(ent.get("match", {}), dict) or not isinstance(ent.get("params", {}), dict):
            raise TopologyError(f"{where}: 'match' and 'params' must be mappings")
        entries.append(dict(ent, where=where))
    return Topology(switches, hosts, links, entries)


def load(path: str | pathlib.Path) -> Topology:
    """Topology from a .json, .yaml or .yml file."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise TopologyError(f"topology file {path} does not exist")
    text = path.read_text()
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise TopologyError(f"{path}: cannot parse: {e}") from None
    return from_dict(data, str(path))


def single_switch(grpc_addr: str, device_id: int = 0, thrift_port: int | None = None) -> Topology:
    """A topology with one switch and no known hosts (for the shell and plain CLI use)."""
    return Topology([Switch("s1", grpc_addr, device_id, thrift_port)], [])
