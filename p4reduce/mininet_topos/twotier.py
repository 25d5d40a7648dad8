"""Two-tier topology: leaf P4 switches under one spine P4 switch (`--leaves L`, 2..16, default 2).

Workers are split evenly between the leaves in host order (the first ones on leaf1: 8 workers on
2 leaves are h1..h4 on leaf1, h5..h8 on leaf2); each leaf's hosts sit on ports 1..k and its uplink
to the spine is port k+1; the spine reaches leaf j on port j. Every switch is a separate P4 target
with its own device id and gRPC port, so a controller can program the leaves to aggregate their
rack and the spine to aggregate the leaves (hierarchical aggregation). Worker links get the
command line's host link options, the leaf-spine links the uplink options. The layout rules are
tree.py's (a two-tier topology is a tree of depth 2 whose root is named `spine`).
"""
from mininet.topo import Topo

from p4reduce.mininet_topos.links import LinkOptions
from p4reduce.mininet_topos.tree import MAX_WORKERS, build_tree, whole

DEFAULT_WORKERS = 4
DEFAULT_LEAVES = 2
MAX_LEAVES = 16


class TwoTierTopo(Topo):
    """build(workers=4, leaves=2, ...) -> 'leaf1'..'leafL' (device ids 0..L-1) under 'spine'
    (device id L); the first hosts on leaf1."""

    kind = "two-tier"

    def build(self, workers: int | None = None, link: LinkOptions = LinkOptions(),
              uplink: LinkOptions = LinkOptions(), prefix: str = "", switch_params: dict | None = None,
              leaves: int | str | None = None) -> None:
        n_leaves = whole(DEFAULT_LEAVES if leaves is None else leaves, "--leaves",
                         range(2, MAX_LEAVES + 1))
        n_workers = DEFAULT_WORKERS if workers is None else workers
        if not n_leaves <= n_workers <= MAX_WORKERS:
            raise ValueError(f"--workers {n_workers}: the two-tier topology with {n_leaves} leaves takes "
                             f"{n_leaves}..{MAX_WORKERS} workers (at least one per leaf)")
        self.shape = {"leaves": n_leaves}
        build_tree(self, [1, n_leaves], ("spine", "spine"), n_workers, link, uplink, prefix, switch_params)
