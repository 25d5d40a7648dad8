"""The address plan of a p4reduce network, defined once: the switch's aggregation service address,
the worker hosts' addresses and each switch's own address.

Workers send contributions to SERVICE_IP/SERVICE_MAC (owned by the aggregating switch, the root of
the topology) on UDP port constants.AGG_UDP_PORT. Hosts are numbered 1..N across a whole topology:
host i is 10.0.0.i with MAC 00:00:00:00:00:i (hex), in one /24, so the plan is the same for the
star, two-tier and tree topologies, the benchmarks' networks and the in-process stand-ins.

Switches are numbered 1..N too (a Mininet switch with device id d is switch d + 1): switch k is
10.0.1.k with MAC 00:00:00:00:02:k (hex), outside the hosts' /24. A switch's address is never
routed: in a tree of switches it is only the source of the partial sums a switch sends to its
parent and the destination of the results its parent sends down, on the link between the two.
The root keeps the service address instead.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

SUBNET = ipaddress.ip_network("10.0.0.0/24")
MAX_HOSTS = 250
SERVICE_IP = "10.0.0.254"
SERVICE_MAC = "00:00:00:00:01:fe"
SWITCH_SUBNET = ipaddress.ip_network("10.0.1.0/24")
MAX_SWITCHES = 254


@dataclass(frozen=True)
class HostAddress:
    """Worker host number `index` (1-based) of the plan."""
    name: str
    index: int
    ip: str
    mac: str
    prefix_len: int = SUBNET.prefixlen

    @property
    def cidr(self) -> str:
        return f"{self.ip}/{self.prefix_len}"


def host_address(index: int, prefix: str = "h") -> HostAddress:
    """Address of worker host number `index` (1-based), named `prefix` + index."""
    if not 1 <= index <= MAX_HOSTS:
        raise ValueError(f"host index {index}: must be in 1..{MAX_HOSTS}")
    ip = str(SUBNET.network_address + index)
    mac = f"00:00:00:00:{index >> 8:02x}:{index & 0xFF:02x}"
    return HostAddress(name=f"{prefix}{index}", index=index, ip=ip, mac=mac)


@dataclass(frozen=True)
class SwitchAddress:
    """Switch number `index` (1-based) of the plan: its own address for a tree's uplink traffic."""
    index: int
    ip: str
    mac: str


def switch_address(index: int) -> SwitchAddress:
    """Own address of switch number `index` (1-based): 10.0.1.index, MAC 00:00:00:00:02:index."""
    if isinstance(index, bool) or not isinstance(index, int) or not 1 <= index <= MAX_SWITCHES:
        raise ValueError(f"switch index {index!r}: must be a whole number in 1..{MAX_SWITCHES}")
    return SwitchAddress(index=index, ip=str(SWITCH_SUBNET.network_address + index),
                         mac=f"00:00:00:00:02:{index:02x}")
