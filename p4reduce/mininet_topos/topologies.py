"""The topologies the command line can name (`--topo star|two-tier`)."""
from mininet.topo import Topo

from p4reduce.mininet_topos.star import StarTopo
from p4reduce.mininet_topos.twotier import TwoTierTopo

TOPOLOGIES = {"star": StarTopo, "two-tier": TwoTierTopo}


def topology_class(name: str) -> type[Topo]:
    try:
        return TOPOLOGIES[name]
    except KeyError:
        raise ValueError(f"--topo {name!r}: choose one of {', '.join(TOPOLOGIES)}") from None
