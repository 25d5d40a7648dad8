"""Two-tier topology: two leaf P4 switches under one spine P4 switch.

Workers are split between the leaves (the first half on leaf1); each leaf's hosts sit on ports
1..k and its uplink to the spine is port k+1; the spine reaches leaf1 on port 1 and leaf2 on port
2. Every switch is a separate P4 target with its own device id and gRPC port, so a controller can
program the leaves to aggregate their rack and the spine to aggregate the leaves (hierarchical
aggregation). Worker links get the command line's link options; the leaf-spine links do not.
"""
from mininet.topo import Topo

from p4reduce.mininet_topos.links import LinkOptions
from p4reduce.protocol.addressing import host_address

DEFAULT_WORKERS = 4


class TwoTierTopo(Topo):
    """build(workers=4, ...) -> 'leaf1', 'leaf2' (device ids 0, 1), 'spine' (device id 2)."""

    kind = "two-tier"

    def build(self, workers: int = DEFAULT_WORKERS, link: LinkOptions = LinkOptions(), prefix: str = "",
              switch_params: dict | None = None) -> None:
        if not 2 <= workers <= 64:
            raise ValueError(f"--workers {workers}: the two-tier topology takes 2..64 workers")
        params = switch_params or {}
        leaves = [self.addSwitch(f"{prefix}leaf{j}", device_id=j - 1, role="leaf", **params)
                  for j in (1, 2)]
        spine = self.addSwitch(f"{prefix}spine", device_id=2, role="spine", **params)
        split = (workers + 1) // 2
        groups = [range(1, split + 1), range(split + 1, workers + 1)]
        for leaf, hosts in zip(leaves, groups):
            for port, i in enumerate(hosts, start=1):
                addr = host_address(i, prefix=f"{prefix}h")
                host = self.addHost(addr.name, ip=addr.cidr, mac=addr.mac, index=i)
                self.addLink(host, leaf, port1=0, port2=port, **link.tclink_params())
        for spine_port, (leaf, hosts) in enumerate(zip(leaves, groups), start=1):
            self.addLink(leaf, spine, port1=len(hosts) + 1, port2=spine_port)

