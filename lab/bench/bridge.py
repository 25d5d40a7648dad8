"""A Linux-bridge Mininet switch: the fallback data path while no P4 switch node is available.

Only for developing the harness and for running the baselines on a machine without the P4
toolchain: results taken on it are labelled ``"switch": "linux-bridge"`` and p4reduce is never
measured through it. Uses iproute2 (Debian's mininet LinuxBridge needs brctl, absent here).
"""
from typing import Any

from mininet.node import Switch


class BenchBridge(Switch):
    """A kernel bridge named after the switch, holding all of the switch's interfaces."""

    def connected(self) -> bool:
        return True

    def start(self, _controllers: list[Any]) -> None:
        self.cmd("ip link del", self.name, "2>/dev/null")
        self.cmd("ip link add name", self.name, "type bridge stp_state 0 forward_delay 0")
        for intf in self.intfList():
            if self.name not in intf.name:
                continue
            self.cmd("ip link set", intf, "master", self.name)
            self.cmd("ip link set", intf, "up")
        self.cmd("ip link set", self.name, "up")

    def stop(self, deleteIntfs: bool = True) -> None:
        self.cmd("ip link del", self.name)
        super().stop(deleteIntfs)
