"""A running p4reduce network: Mininet hosts and P4 switches, addressed, shaped and described.

`P4Network` is what `run`, `demo` and the end-to-end tests share: it builds a topology with
P4Switch nodes and no OpenFlow controller, gives hosts static IPs and a static ARP table (no ARP
on the wire: every frame a worker sends is unicast to a known MAC and crosses the P4 switch),
applies the link options (the MTU on every interface, switch ports and links between switches
included), writes the topology description the controller reads, and tears all of
it down again, stopping only what it started.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mininet.link import TCLink
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.node import Host

from p4reduce.mininet_topos import links
from p4reduce.mininet_topos.certs import RunCertificates
from p4reduce.mininet_topos.description import describe, write_description
from p4reduce.mininet_topos.links import LinkOptions
from p4reduce.mininet_topos.p4switch import P4Switch
from p4reduce.mininet_topos.topologies import topology_class
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC

DEFAULT_GRPC_BASE = 9559
DEFAULT_THRIFT_BASE = 9090


class P4Network:
    """Build, start and stop one topology; usable as a context manager."""

    def __init__(self, topo: str = "star", workers: int | None = None, link: LinkOptions = LinkOptions(),
                 json_path: str | None = None, target: str = "auto", grpc_base: int = DEFAULT_GRPC_BASE,
                 thrift_base: int = DEFAULT_THRIFT_BASE, log_dir: str = "logs", pcap_dir: str | None = "pcaps",
                 description_path: str | None = None, prefix: str = "", cpu_port: int | None = 64,
                 switch_log_level: str | None = "info", start_timeout: float = 30.0,
                 uplink: LinkOptions = LinkOptions(), topo_options: dict[str, Any] | None = None):
        """`workers`: hosts (None: the topology's default); `link` shapes the worker links,
        `uplink` the switch-to-switch links; `topo_options` the topology's shape (two-tier:
        leaves; tree: depth, fanout; topologies.SHAPE_OPTIONS)."""
        self.kind = topo
        self.link = link
        self.uplink = uplink
        self.prefix = prefix
        self.description_path = Path(description_path) if description_path else None
        self.loss_table = f"{links.LOSS_TABLE}_{os.getpid()}"
        self.uplink_loss_table = f"{links.LOSS_TABLE}_up_{os.getpid()}"
        common = dict(json_path=json_path, target=target, log_dir=log_dir, pcap_dir=pcap_dir,
                      cpu_port=cpu_port, log_level=switch_log_level, start_timeout=start_timeout)
        self.topo = topology_class(topo)(workers=workers, link=link, uplink=uplink, prefix=prefix,
                                         **(topo_options or {}))
        self.workers = len(self.topo.hosts())
        for name in self.topo.switches():
            info = self.topo.nodeInfo(name)
            info.update(common, grpc_port=grpc_base + info["device_id"],
                        thrift_port=thrift_base + info["device_id"])
        self.net: Mininet | None = None
        self.tls: RunCertificates | None = None

    def use_tls(self, certs: RunCertificates) -> None:
        """Start every switch with P4Runtime over TLS, client certificates required (certs.py);
        before start()."""
        self.tls = certs
        for name in self.topo.switches():
            self.topo.nodeInfo(name)["target_args"] = certs.switch_args()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> P4Network:
        setLogLevel(os.environ.get("P4REDUCE_MININET_LOG", "warning"))
        self.net = Mininet(topo=self.topo, switch=P4Switch, host=Host, link=TCLink, controller=None,
                           autoSetMacs=False, autoStaticArp=False, build=False)
        try:
            self.net.build()
            if self.link.mtu is not None:    # before the targets open their ports (ring frame sizes)
                links.apply_mtu(self.net.links, self.link.mtu)
            for host in self.net.hosts:
                self._configure_host(host)
            if self.link.needs_nft_loss():
                self._apply_nft_loss()
            if self.uplink.needs_nft_loss():
                self._apply_uplink_nft_loss()
            self.net.start()
            if self.description_path:
                write_description(self.description(), self.description_path)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the targets this network started, then Mininet's links and hosts."""
        if self.net is None:
            return
        net, self.net = self.net, None
        for switch in net.switches:
            switch._terminate()
        if net.switches:
            for table in self.loss_tables():
                links.remove_nft_loss(_root_shell(net), table)
        net.stop()

    def __enter__(self) -> P4Network:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- configuration -----------------------------------------------------------------------
    def _configure_host(self, host: Any) -> None:
        """Static address, static ARP for every peer and the switch, no IPv6, no offloads."""
        intf = host.defaultIntf()
        host.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
        host.cmd(f"ethtool -K {intf} rx off tx off sg off tso off gso off gro off >/dev/null 2>&1")
        peers = [(h["ip"], h["mac"]) for h in self._planned_hosts() if h["name"] != host.name]
        peers.append((SERVICE_IP, SERVICE_MAC))
        for ip, mac in peers:
            host.cmd(f"ip neigh replace {ip} lladdr {mac} dev {intf} nud permanent")

    def _planned_hosts(self) -> list[dict[str, str]]:
        out = []
        for name in self.topo.hosts():
            info = self.topo.nodeInfo(name)
            out.append({"name": name, "ip": info["ip"].split("/")[0], "mac": info["mac"]})
        return out

    def _apply_nft_loss(self) -> None:
        """Loss on both directions of every worker link: egress of the host and of the switch port."""
        switch_side = []
        net = self.started()
        for host in net.hosts:
            intf = host.defaultIntf()
            links.apply_nft_loss(host, [intf.name], self.link.loss_pct)
            switch_side.append(intf.link.intf2.name if intf.link.intf1 is intf else intf.link.intf1.name)
        links.apply_nft_loss(_root_shell(net), switch_side, self.link.loss_pct, self.loss_table)

    def _apply_uplink_nft_loss(self) -> None:
        """Loss on both directions of every switch-to-switch link: egress of both switch ports
        (both in the root namespace), in a table of their own."""
        net = self.started()
        switch_names = {s.name for s in net.switches}
        ends = [intf.name for link in net.links for intf in (link.intf1, link.intf2)
                if link.intf1.node.name in switch_names and link.intf2.node.name in switch_names]
        if ends:
            links.apply_nft_loss(_root_shell(net), ends, self.uplink.loss_pct, self.uplink_loss_table,
                                 option=self.uplink.option("loss"))

    def loss_tables(self) -> list[str]:
        """The nftables tables this network installs in the root namespace (loss without netem)."""
        return ([self.loss_table] if self.link.needs_nft_loss() else []) + \
            ([self.uplink_loss_table] if self.uplink.needs_nft_loss() else [])

    # -- queries -----------------------------------------------------------------------------
    def host(self, name: str) -> Any:
        return self.started().get(self.prefix + name if not name.startswith(self.prefix) else name)

    @property
    def hosts(self) -> list[Any]:
        return self.started().hosts

    @property
    def switches(self) -> list[P4Switch]:
        return self.started().switches

    def started(self) -> Mininet:
        """The running Mininet network (start() first)."""
        if self.net is None:
            raise RuntimeError("the network is not started")
        return self.net

    def description(self) -> dict:
        return describe(self)


def _root_shell(net: Mininet) -> Any:
    """A node whose cmd() runs in the root namespace (the switches live there)."""
    return net.switches[0]
