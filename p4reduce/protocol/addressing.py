"""The address plan of a p4reduce network, defined once: the switch's aggregation service address
and the worker hosts' addresses.

Workers send contributions to SERVICE_IP/SERVICE_MAC (owned by the aggregating switch) on UDP port
constants.AGG_UDP_PORT. Hosts are numbered 1..N across a whole topology: host i is 10.0.0.i with
MAC 00:00:00:00:00:i (hex), in one /24, so the plan is the same for the star and the two-tier
topology, the benchmarks' networks and the in-process stand-ins.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

SUBNET = ipaddress.ip_network("10.0.0.0/24")
MAX_HOSTS = 250
SERVICE_IP = "10.0.0.254"
SERVICE_MAC = "00:00:00:00:01:fe"


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
