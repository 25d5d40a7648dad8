"""The topology description file: what the controller needs to know about a running network.

Written by `python -m p4reduce.mininet_topos run|demo` (default `run/topology.json`) once every switch's
gRPC port is up. Format (version 1):

    {
      "version": 1,
      "topology": "star" | "two-tier",
      "service": {"ip": "10.0.0.254", "mac": "00:00:00:00:01:fe"},   # where workers send
      "switches": [{"name": "s1", "device_id": 0, "role": "tor"|"leaf"|"spine",
                    "aggregate": true, "ip": "10.0.0.254", "mac": "00:00:00:00:01:fe",
                    "grpc_addr": "127.0.0.1:9559", "thrift_port": 9090, "cpu_port": 64,
                    "target": "p4sim-switch", "pid": 1234, "log_file": "logs/s1.log",
                    "pcap_dir": "pcaps", "program": "build/p4reduce.json" | null,
                    "ports": [{"port": 1, "intf": "s1-eth1", "peer": "h1", "peer_port": 0,
                               "peer_intf": "h1-eth0"}, ...],
                    "uplink_port": 3 | null}],          # leaves: the port towards the spine
      "hosts": [{"name": "h1", "ip": "10.0.0.1", "prefix_len": 24, "mac": "00:00:00:00:00:01",
                 "intf": "h1-eth0", "switch": "s1", "port": 1, "pid": 4321,
                 "netns": "/proc/4321/ns/net", "api_source": "127.100.0.1"}],
      "links": [{"a": "leaf1", "a_port": 3, "b": "spine", "b_port": 1}],   # switch-to-switch
      "p4runtime_tls": {"ca": "run/tls/ca.pem", "cert": "run/tls/controller.pem",
                        "key": "run/tls/controller.key"},     # only when the switches require TLS
      "link_options": {"name": null, "bw_mbps": null, "delay": null, "loss_pct": 0.0, "queue_ms": null,
                       "loss_method": null, "delay_applied": null, "applied": "unshaped veth"}
    }

The switch marked `aggregate` (the star's switch, the two-tier's spine) owns the service address.
This is a superset of what `controller/topology.py` reads (switches, hosts, links).

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
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC

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
    aggregator = "spine" if network.kind == "two-tier" else "s1"
    ip, mac = SERVICE_IP, SERVICE_MAC
    switches, hosts, switch_links = [], [], []
    for switch in net.switches:
        entry = switch.describe()
        entry["role"] = switch.params.get("role")
        entry["aggregate"] = switch.name == network.prefix + aggregator
        if entry["aggregate"]:
            entry["ip"], entry["mac"] = ip, mac
        entry["ports"], entry["uplink_port"] = [], None
        for port, intf in switch.data_ports():
            peer = _peer(intf)
            peer_port = peer.node.ports[peer]
            entry["ports"].append({"port": port, "intf": intf.name, "peer": peer.node.name,
                                   "peer_port": peer_port, "peer_intf": peer.name})
            if peer.node.name in switch_names:
                if entry["role"] == "leaf":
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
                   "link_options": network.link.describe()}
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

