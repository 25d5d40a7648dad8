"""The topologies the command line can name (`--topo star|two-tier|tree`), and the options each
one takes besides --workers and the link options."""
from mininet.topo import Topo

from p4reduce.mininet_topos.star import StarTopo
from p4reduce.mininet_topos.tree import TreeTopo
from p4reduce.mininet_topos.twotier import TwoTierTopo

TOPOLOGIES: dict[str, type[Topo]] = {"star": StarTopo, "two-tier": TwoTierTopo, "tree": TreeTopo}
#: the shape options of each topology (keyword arguments of its build(), command-line --NAME)
SHAPE_OPTIONS: dict[str, tuple[str, ...]] = {"star": (), "two-tier": ("leaves",), "tree": ("depth", "fanout")}


def topology_class(name: str) -> type[Topo]:
    try:
        return TOPOLOGIES[name]
    except KeyError:
        raise ValueError(f"--topo {name!r}: choose one of {', '.join(TOPOLOGIES)}") from None
