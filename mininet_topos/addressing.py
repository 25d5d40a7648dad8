"""The address plan: every worker host's IP and MAC, and the switch's aggregation address.

Hosts are numbered 1..N across the whole topology (h1 is 10.0.0.1, MAC 00:00:00:00:00:01) in one
/24, so the plan is the same for the star and the two-tier topology. The aggregation service
address (what workers send to) comes from the wire protocol when `protocol/` defines it.
"""
import ipaddress
from dataclasses import dataclass

SUBNET = ipaddress.ip_network("10.0.0.0/24")
MAX_HOSTS = 250
SERVICE_IP = "10.0.0.254"
SERVICE_MAC = "00:00:00:00:01:fe"


@dataclass(frozen=True)
class HostAddress:
    name: str
    index: int
    ip: str
    mac: str
    prefix_len: int = SUBNET.prefixlen

    @property
    def cidr(self) -> str:
        return f"{self.ip}/{self.prefix_len}"


def host_address(index: int, prefix: str = "h") -> HostAddress:
    """Address of worker host number index (1-based)."""
    if not 1 <= index <= MAX_HOSTS:
        raise ValueError(f"host index {index}: must be in 1..{MAX_HOSTS}")
    ip = str(SUBNET.network_address + index)
    mac = f"00:00:00:00:{index >> 8:02x}:{index & 0xFF:02x}"
    return HostAddress(name=f"{prefix}{index}", index=index, ip=ip, mac=mac)


def service_address():
    """(ip, mac) the switch answers aggregation packets on; the protocol's values when defined."""
    try:
        from p4reduce import protocol
        ip = getattr(protocol, "SWITCH_IP", None) or getattr(protocol, "SERVICE_IP", None)
        mac = getattr(protocol, "SWITCH_MAC", None) or getattr(protocol, "SERVICE_MAC", None)
        if ip and mac:
            return str(ip), str(mac)
    except ImportError:
        pass
    return SERVICE_IP, SERVICE_MAC
