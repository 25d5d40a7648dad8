"""Star topology: one P4 switch, N worker hosts; host hi sits on switch port i.

The layout of SwitchML/OmniReduce's single-rack experiments: every worker's traffic crosses the one
switch that aggregates.
"""
from mininet.topo import Topo

from p4reduce.mininet_topos.links import LinkOptionError, LinkOptions
from p4reduce.protocol.addressing import host_address

DEFAULT_WORKERS = 4


class StarTopo(Topo):
    """build(workers=4, link=LinkOptions(), prefix='') -> switch 's1', hosts 'h1'..'hN'."""

    kind = "star"

    def build(self, workers: int | None = None, link: LinkOptions = LinkOptions(),
              uplink: LinkOptions = LinkOptions(), prefix: str = "", switch_params: dict | None = None) -> None:
        workers = DEFAULT_WORKERS if workers is None else workers
        if not 1 <= workers <= 64:
            raise ValueError(f"--workers {workers}: the star topology takes 1..64 workers")
        if uplink.shaped:
            raise LinkOptionError("--uplink-bw/--uplink-delay/--uplink-loss: the star topology has no "
                                  "switch-to-switch links (use --topo two-tier or tree)")
        switch = self.addSwitch(f"{prefix}s1", device_id=0, role="tor", **(switch_params or {}))
        for i in range(1, workers + 1):
            addr = host_address(i, prefix=f"{prefix}h")
            host = self.addHost(addr.name, ip=addr.cidr, mac=addr.mac, index=i)
            self.addLink(host, switch, port1=0, port2=i, **link.tclink_params())
