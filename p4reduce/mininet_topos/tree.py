"""Trees of P4 switches, one builder for the two-tier topology and the deeper `tree` topology.

A tree is built from the number of switches on each level, top down: one root, then each level's
switches split evenly among the switches of the level above (in order, the first ones taking one
more), and worker hosts split the same way among the leaves (hosts 1..N in order, so the first
hosts are on leaf1). Names: the root (`spine` on two-tier, `root` on the tree), `leaf1..` on the
lowest level and `agg1..` on the levels in between, numbered from the level above the leaves up
(so agg1 is the leftmost switch just above the leaves). Device ids follow the same order: leaves
from 0, then the aggregation switches, the root last (two-tier with 2 leaves: leaf1 0, leaf2 1,
spine 2, as before), so gRPC and Thrift ports (base + device id) are unique.

Ports: a switch's children (hosts on a leaf, switches elsewhere) sit on ports 1..c in order, and
its uplink to its parent is port c+1; the root has no uplink. Each switch node carries its
`role` (leaf, aggregation, spine or root) and its `parent` (None on the root), which the topology
description writes out (description.py). Host links get the host link options (--bw, --delay,
--loss), switch-to-switch links the uplink options (--uplink-bw, --uplink-delay, --uplink-loss).
"""
from __future__ import annotations

from mininet.topo import Topo

from p4reduce.mininet_topos.links import LinkOptions
from p4reduce.protocol.addressing import host_address

MAX_WORKERS = 64                 # as the star: hosts of one topology (each a Mininet host)
MAX_SWITCHES = 32                # each switch is a target process of its own
MAX_INTERFACE_NAME = 15          # Linux's IFNAMSIZ - 1

TREE_DEFAULT_DEPTH = 3
TREE_DEFAULT_FANOUT = 2
TREE_DEPTHS = range(2, 5)        # levels of switches: 2 is a two-tier tree; one switch is the star
TREE_FANOUTS = range(2, 9)


def whole(value: object, option: str, allowed: range) -> int:
    """`value` (an int, or the command line's text) as a whole number in `allowed`; else a
    ValueError naming `option`."""
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    else:
        try:
            number = int(str(value), 10)
        except ValueError:
            number = None
    if number is None or number not in allowed:
        raise ValueError(f"{option} {value}: must be a whole number in {allowed.start}..{allowed.stop - 1}")
    return number


def spread(items: int, groups: int) -> list[range]:
    """1..items split into `groups` consecutive runs of nearly equal length, the first runs one
    longer: spread(5, 2) -> [1..3, 4..5]."""
    base, extra = divmod(items, groups)
    out, start = [], 1
    for g in range(groups):
        n = base + (1 if g < extra else 0)
        out.append(range(start, start + n))
        start += n
    return out


def tree_switches(depth: int, fanout: int) -> int:
    """Switches of a tree of `depth` levels, each switch above the leaves with `fanout` children."""
    return sum(fanout ** level for level in range(depth))


def build_tree(topo: Topo, sizes: list[int], root: tuple[str, str], workers: int, link: LinkOptions,
               uplink: LinkOptions, prefix: str = "", switch_params: dict | None = None) -> None:
    """Add the switches, hosts and links of a tree with sizes[l] switches on level l (sizes[0] == 1,
    the root, named and given a role by `root`) and `workers` hosts spread over the leaves."""
    params = switch_params or {}
    depth = len(sizes)
    names: list[list[str]] = [[root[0]]]
    roles = [root[1]] + ["aggregation"] * (depth - 2) + ["leaf"]
    agg = 0
    for level in range(depth - 1, 0, -1):                 # bottom up: leaves, then agg1.. upwards
        if level == depth - 1:
            level_names = [f"leaf{j}" for j in range(1, sizes[level] + 1)]
        else:
            level_names = [f"agg{agg + j}" for j in range(1, sizes[level] + 1)]
            agg += sizes[level]
        names.insert(1, level_names)
    # children of switch j on level l: a run of level l+1 (or of the hosts, for a leaf)
    children = [spread(sizes[level + 1], sizes[level]) for level in range(depth - 1)]
    children.append(spread(workers, sizes[-1]))
    parent: dict[str, str | None] = {root[0]: None}
    for level in range(depth - 1):
        for j, run in enumerate(children[level]):
            for k in run:
                parent[names[level + 1][k - 1]] = names[level][j]
    longest = max(len(prefix + name) + len(f"-eth{len(run) + 1}")
                  for level in range(depth) for name, run in zip(names[level], children[level]))
    if longest > MAX_INTERFACE_NAME:
        raise ValueError(f"switch interface names would be {longest} characters, more than Linux's "
                         f"{MAX_INTERFACE_NAME}: use fewer switches or hosts")
    device_id = 0
    nodes: dict[str, str] = {}
    for level in range(depth - 1, -1, -1):
        for name in names[level]:
            up = parent[name]
            nodes[name] = topo.addSwitch(prefix + name, device_id=device_id, role=roles[level],
                                         parent=None if up is None else prefix + up, **params)
            device_id += 1
    for leaf, hosts in zip(names[-1], children[-1]):
        for port, i in enumerate(hosts, start=1):
            addr = host_address(i, prefix=f"{prefix}h")
            host = topo.addHost(addr.name, ip=addr.cidr, mac=addr.mac, index=i)
            topo.addLink(host, nodes[leaf], port1=0, port2=port, **link.tclink_params())
    for level in range(depth - 1):
        for name, run in zip(names[level], children[level]):
            for port, k in enumerate(run, start=1):
                child = names[level + 1][k - 1]
                child_uplink = len(children[level + 1][k - 1]) + 1
                topo.addLink(nodes[child], nodes[name], port1=child_uplink, port2=port,
                             **uplink.tclink_params())


class TreeTopo(Topo):
    """build(depth=3, fanout=2, ...) -> 'root' over `fanout` switches, each over `fanout` more, down
    to the leaves; fanout**depth hosts unless `workers` says how many (spread over the leaves)."""

    kind = "tree"

    def build(self, workers: int | None = None, link: LinkOptions = LinkOptions(),
              uplink: LinkOptions = LinkOptions(), prefix: str = "", switch_params: dict | None = None,
              depth: int | str | None = None, fanout: int | str | None = None) -> None:
        d = whole(TREE_DEFAULT_DEPTH if depth is None else depth, "--depth", TREE_DEPTHS)
        f = whole(TREE_DEFAULT_FANOUT if fanout is None else fanout, "--fanout", TREE_FANOUTS)
        switches, leaves = tree_switches(d, f), f ** (d - 1)
        if switches > MAX_SWITCHES:
            raise ValueError(f"--depth {d} --fanout {f}: {switches} switches, more than {MAX_SWITCHES} "
                             "(each one is a switch process): use a smaller --depth or --fanout")
        if workers is None:
            if f ** d > MAX_WORKERS:
                raise ValueError(f"--depth {d} --fanout {f}: {f ** d} hosts (fanout**depth), more than "
                                 f"{MAX_WORKERS}: give fewer with --workers ({leaves}..{MAX_WORKERS})")
            workers = f ** d
        if not leaves <= workers <= MAX_WORKERS:
            raise ValueError(f"--workers {workers}: the tree of depth {d} and fanout {f} has {leaves} leaves "
                             f"and takes {leaves}..{MAX_WORKERS} workers (at least one per leaf)")
        self.shape = {"depth": d, "fanout": f}
        build_tree(self, [f ** level for level in range(d)], ("root", "root"), workers, link, uplink,
                   prefix, switch_params)
