"""The benchmark network: N worker hosts and one server host in a star around one switch.

Every system (p4reduce, gloo, the parameter server) runs on the same hosts through the same
switch and links. The switch is the project's P4 switch node (``bench.p4net``, built on
``mininet_topos``) whenever it is available; otherwise a Linux bridge (``bench.bridge``) so that
the baselines can still be measured, labelled as such, with p4reduce skipped. The network is torn
down with Mininet's own ``net.stop()``; nothing else is cleaned.
"""
from __future__ import annotations

import os
import pathlib
from typing import Any

from lab.bench import aggregation_program as progmod
from lab.bench.p4net import P4Net
from p4reduce.mininet_topos.links import LinkOptions, apply_mtu
from p4reduce.protocol.addressing import host_address

BRIDGE = "linux-bridge"
P4 = "p4"
SWITCH_CHOICES = ("auto", P4, BRIDGE)

HOST_PREFIX = "bh"       # bench hosts: bh1..bhN workers, bh(N+1) server
SWITCH_NAME = "bs1"


class TopologyError(RuntimeError):
    """The benchmark network cannot be built (not root, P4 switch unavailable, ...)."""


class BenchNet:
    """Context manager: ``with BenchNet(4, SHAPED) as bn: bn.workers, bn.server, bn.iface(h)``."""

    def __init__(self, workers: int, link: LinkOptions, switch: str = "auto",
                 program: str | pathlib.Path | None = None):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if switch not in SWITCH_CHOICES:
            raise ValueError(f"switch must be one of {SWITCH_CHOICES}, got {switch!r}")
        self.nworkers = workers
        self.link = link
        self.switch_choice = switch
        self.program = pathlib.Path(program or progmod.DEFAULT)
        self.switch_kind: str | None = None
        self.switch_detail = ""
        self.net: Any = None               # the Mininet network while started
        self.p4: P4Net | None = None       # when the P4 switch is in use
        self.workers: list = []
        self.server: Any = None

    # -- lifecycle -----------------------------------------------------------------------------
    def __enter__(self) -> BenchNet:
        if os.geteuid() != 0:
            raise TopologyError("the benchmark network needs root (Mininet)")
        try:
            if self.switch_choice in ("auto", P4):
                reason = progmod.unavailable_reason(self.program)
                if reason is None:
                    self._start_p4()
                elif self.switch_choice == P4:
                    raise TopologyError(f"P4 switch requested but unavailable: {reason}")
                else:
                    self.switch_detail = f"P4 switch unavailable ({reason})"
            if self.net is None:
                self._start_bridge()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.p4 is not None:
            self.p4.stop()
            self.p4 = None
            self.net = None
        elif self.net is not None:
            self.net.stop()
            self.net = None

    def _start_bridge(self) -> None:
        from mininet.link import TCLink
        from mininet.log import setLogLevel
        from mininet.net import Mininet

        from lab.bench.bridge import BenchBridge

        setLogLevel("error")
        net = Mininet(topo=None, controller=None, link=TCLink, build=False, autoSetMacs=True)
        self.net = net
        sw = net.addSwitch(SWITCH_NAME, cls=BenchBridge)
        plan = [host_address(i, prefix=HOST_PREFIX) for i in range(1, self.nworkers + 2)]
        hosts = [net.addHost(a.name, ip=a.cidr) for a in plan]
        for h in hosts:
            net.addLink(h, sw, cls=TCLink, **self.link.tclink_params())
        net.build()
        if self.link.mtu is not None:
            apply_mtu(net.links, self.link.mtu)   # the bridge takes its ports' MTU
        net.start()
        for h in hosts:  # as on the P4 path: the wire carries real frames, not offloaded ones
            h.cmd(f"ethtool -K {h.defaultIntf()} rx off tx off sg off tso off gso off gro off >/dev/null 2>&1")
        self.workers, self.server = hosts[:-1], hosts[-1]
        self.switch_kind = BRIDGE
        self.switch_detail = (self.switch_detail + "; " if self.switch_detail else "") + \
            "Linux bridge (kernel forwarding)"

    def _start_p4(self) -> None:
        p4 = self.p4 = P4Net(self.nworkers + 1, self.link, self.program)
        self.net = p4.start()
        hosts = p4.hosts
        self.workers, self.server = hosts[:-1], hosts[-1]
        self.switch_kind = P4
        self.switch_detail = p4.describe()

    # -- queries -------------------------------------------------------------------------------
    @staticmethod
    def iface(host: Any) -> str:
        """The host's interface toward the switch (where its bytes are counted)."""
        return host.defaultIntf().name

    @staticmethod
    def switch_iface(host: Any) -> str:
        """The switch's port toward the host (root namespace: readable in /sys/class/net)."""
        link = host.defaultIntf().link
        peer = link.intf2 if link.intf1.node is host else link.intf1
        return peer.name

    @staticmethod
    def ip(host: Any) -> str:
        return host.IP()

    def describe(self) -> dict:
        return {"switch": self.switch_kind, "switch_detail": self.switch_detail,
                "link": self.link.describe(), "workers": self.nworkers, "server_host": True}
