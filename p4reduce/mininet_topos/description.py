"""The topology description file: what the controller needs to know about a running network.

Written by `python -m p4reduce.mininet_topos run|demo` (default `run/topology.json`) once every switch's
gRPC port is up. Format (version 1; fields are only ever added):

    {
      "version": 1,
      "topology": "star" | "two-tier" | "tree",
      "service": {"ip": "10.0.0.254", "mac": "00:00:00:00:01:fe"},   # where workers send
      "switches": [{"name": "s1", "device_id": 0,
                    "role": "tor" | "leaf" | "aggregation" | "spine" | "root",
                    "aggregate": true, "ip": "10.0.0.254", "mac": "00:00:00:00:01:fe",
                    "grpc_addr": "127.0.0.1:9559", "thrift_port": 9090, "cpu_port": 64,
                    "target": "p4sim-switch", "pid": 1234, "log_file": "logs/s1.log",
                    "pcap_dir": "pcaps", "program": "build/p4reduce.json" | null,
                    "ports": [{"port": 1, "intf": "s1-eth1", "peer": "h1", "peer_port": 0,
                               "peer_intf": "h1-eth0"}, ...],
                    "parent": "agg1" | null,       # the switch above this one; null on the root
                    "uplink_port": 3 | null}],     # this switch's port towards its parent; null on the root
      "hosts": [{"name": "h1", "ip": "10.0.0.1", "prefix_len": 24, "mac": "00:00:00:00:00:01",
                 "intf": "h1-eth0", "switch": "s1", "port": 1, "pid": 4321,
                 "netns": "/proc/4321/ns/net", "api_source": "127.100.0.1"}],
      "links": [{"a": "leaf1", "a_port": 3, "b": "spine", "b_port": 1}],   # switch-to-switch
      "p4runtime_tls": {"ca": "run/tls/ca.pem", "cert": "run/tls/controller.pem",
                        "key": "run/tls/controller.key"},     # only when the switches require TLS
      "link_options": {"name": null, "bw_mbps": null, "delay": null, "loss_pct": 0.0, "queue_ms": null,
                       "mtu": 1500, "loss_method": null, "delay_applied": null, "applied": "unshaped veth",
                       "uplink": {...the same fields...} | null}
    }

The switches form a tree: the root (the star's `s1`, the two-tier's `spine`, the tree's `root`) is
the one without a parent; it is marked `aggregate` and owns the service address (its `ip`/`mac`
are the service's). Every other switch has an address of its own from the address plan
(protocol/addressing.py: the switch with device id d is `switch_address(d + 1)`, 10.0.1.(d+1),
MAC 00:00:00:00:02:(d+1)): never routed, it is the source of the partial sums the switch sends up
its uplink to its parent and the destination of the results the parent sends down, in a job
aggregated as a tree. `link_options`' own fields describe the worker links (--bw, --delay,
--loss); `link_options.uplink` the switch-to-switch links (--uplink-bw, --uplink-delay,
--uplink-loss), null on a topology without them (the star). This is a superset of what
`controller/topology.py` reads (switches, hosts, links).

`hosts[].api_source` is the loopback address the job-API relay (mininet_topos/apirelay.py) connects
from on behalf of that host: a controller seeing a request from it knows which host is calling.
`hosts[].pid` is the host's shell: `mnexec -a PID CMD` (or `nsenter --net=/proc/PID/ns/net`) runs a
command inside the host, which is how `make run` starts workers there.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p4reduce.mininet_topos.apirelay import api_source
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC, switch_address

if TYPE_CHECKING:
    from p4reduce.mininet_topos.network import P4Network


VERSION = 1


def _peer(intf: Any) -> Any:
    link = intf.link
    return link.intf2 if link.intf1 is intf else link.intf1


def describe(network: P4Network) -> dict[str, Any]:
    """The description of a started P4Network."""
    net = network.started()
    switch_names = {s.name for s in net.switches}
    ip, mac = SERVICE_IP, SERVICE_MAC
    switches, hosts, switch_links = [], [], []
    for switch in net.switches:
        entry = switch.describe()
        entry["role"] = switch.params.get("role")
        parent = switch.params.get("parent")
        entry["aggregate"] = parent is None              # the root aggregates, at the service address
        if entry["aggregate"]:
            entry["ip"], entry["mac"] = ip, mac
        else:
            own = switch_address(switch.device_id + 1)
            entry["ip"], entry["mac"] = own.ip, own.mac
        entry["ports"], entry["parent"], entry["uplink_port"] = [], parent, None
        for port, intf in switch.data_ports():
            peer = _peer(intf)
            peer_port = peer.node.ports[peer]
            entry["ports"].append({"port": port, "intf": intf.name, "peer": peer.node.name,
                                   "peer_port": peer_port, "peer_intf": peer.name})
            if peer.node.name in switch_names:
                if peer.node.name == parent:
                    entry["uplink_port"] = port
                if switch.name < peer.node.name:
                    switch_links.append({"a": switch.name, "a_port": port,
                                         "b": peer.node.name, "b_port": peer_port})
        switches.append(entry)
    for host in sorted(net.hosts, key=lambda h: h.params.get("index", 0)):
        intf = host.defaultIntf()
        peer = _peer(intf)
        hosts.append({"name": host.name, "ip": host.IP(), "prefix_len": int(host.params["ip"].split("/")[1]),
                      "mac": host.MAC(), "intf": intf.name, "switch": peer.node.name,
                      "port": peer.node.ports[peer], "pid": host.pid,
                      "netns": f"/proc/{host.pid}/ns/net",
                      "api_source": api_source(host.params.get("index", 0))})
    description = {"version": VERSION, "topology": network.kind, "service": {"ip": ip, "mac": mac},
                   "switches": switches, "hosts": hosts, "links": switch_links,
                   "link_options": dict(network.link.describe(),
                                        uplink=network.uplink.describe() if switch_links else None)}
    if network.tls is not None:   # how the controller's tools reach the switches (certs.py)
        description["p4runtime_tls"] = network.tls.describe()
    return description

def write_description(description: dict[str, Any], path: str | Path) -> Path:
    """Write atomically (readers never see half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".topology.", dir=path.parent)
    with os.fdopen(fd, "w") as out:
        json.dump(description, out, indent=2)
        out.write("\n")
    os.replace(tmp, path)
    return path

