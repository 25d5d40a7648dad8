"""A job's aggregation tree (issue #23): which switches aggregate it, and what each one's children
and parent are.

The switches of a topology form a tree around the aggregating switch (the service address's owner,
`Topology.aggregation_switch`): every other switch's parent is its neighbour one hop closer to it.
A job's tree is the part of that tree on the paths from its members' switches up to their lowest
common switch, the job's root. Every switch of the job's tree aggregates: a member's contribution
is summed at its own switch, and each switch below the root sends one partial sum up, as one
worker of its parent (docs/protocol.md section 11). A switch's rank at its parent is the lowest
rank of the members below it, so ranks never collide at a switch (subtrees are disjoint), and
every rank a switch sees is a job rank (< MAX_WORKERS).

Planning is pure: it reads the topology and the members and returns a JobTree, or raises
NoTree saying why the job is aggregated at one switch instead (a member on an unknown host, a
switch without an address). Writing the tree to the switches is controller/network.py's.
"""
from __future__ import annotations

import collections
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from p4reduce.controller.job_entries import ParentLink, SwitchMember
from p4reduce.controller.topology import Topology
from p4reduce.protocol import constants


class NoTree(Exception):
    """The job cannot be aggregated as a tree; the message says why."""


@dataclass(frozen=True)
class Child:
    """One child of a switch in a job's tree: a member, or a switch below (`switch` set). It is
    what the switch's workers table and multicast group hold (a job_entries.SwitchMember)."""
    rank: int           # the member's rank; a switch's: the lowest rank below it
    ip: str
    udp_port: int
    mac: str
    port: int           # the port of the parent switch towards the child
    switch: str | None = None

    def to_json(self) -> str:
        return f"switch {self.switch}" if self.switch else f"rank {self.rank}"


@dataclass(frozen=True)
class TreeNode:
    """One aggregating switch of a job's tree."""
    switch: str
    children: tuple[Child, ...]
    parent: str | None              # None: the job's root
    uplink: ParentLink | None       # how this switch sends its partial sums up (None at the root)

    @property
    def ranks(self) -> tuple[int, ...]:
        return tuple(sorted(c.rank for c in self.children))


def present_children(node: TreeNode, absent: Collection[int]) -> tuple[Child, ...]:
    """The node's children but the members of ranks `absent` (left the job); a child switch stays."""
    return tuple(c for c in node.children if c.switch is not None or c.rank not in absent)


@dataclass(frozen=True)
class JobTree:
    root: str
    nodes: Mapping[str, TreeNode]

    def bottom_up(self) -> list[TreeNode]:
        """Children before their parents: the order to install in (a parent's child entry may
        only point at a switch that already aggregates)."""
        depth = {}
        for name in self.nodes:
            d, here = 0, name
            while self.nodes[here].parent is not None:
                here = self.nodes[here].parent  # type: ignore[assignment]
                d += 1
            depth[name] = d
        return sorted(self.nodes.values(), key=lambda n: (-depth[n.switch], n.switch))

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root,
                "switches": {n.switch: {"parent": n.parent, "children": [c.to_json() for c in n.children],
                                        "rank_at_parent": n.uplink.rank if n.uplink else None}
                             for n in self.bottom_up()}}


def parents(topology: Topology, center: str) -> dict[str, tuple[str, int, int]]:
    """Each switch's parent towards `center`: name -> (parent, port of the switch towards its
    parent, port of the parent towards the switch); breadth-first, so a parent is one hop closer."""
    adj: dict[str, list[tuple[str, int, int]]] = collections.defaultdict(list)
    for a, ap, b, bp in topology.links:
        adj[a].append((b, ap, bp))
        adj[b].append((a, bp, ap))
    up: dict[str, tuple[str, int, int]] = {}
    seen, frontier = {center}, collections.deque([center])
    while frontier:
        here = frontier.popleft()
        for nxt, here_port, nxt_port in sorted(adj[here]):
            if nxt not in seen:
                seen.add(nxt)
                up[nxt] = (here, nxt_port, here_port)
                frontier.append(nxt)
    return up


def plan(topology: Topology, members: Mapping[int, SwitchMember]) -> JobTree:
    """The job's tree over `members` (by rank), rooted at their lowest common switch."""
    center = topology.aggregation_switch.name
    up = parents(topology, center)
    paths: dict[int, list[str]] = {}
    for rank, m in members.items():
        host = topology.host_by_ip(m.ip)
        if host is None:
            raise NoTree(f"rank {rank}'s address {m.ip} is not a host of the topology")
        path, here = [host.switch], host.switch
        while here != center:
            if here not in up:
                raise NoTree(f"switch {here} (rank {rank}'s) has no path to {center}")
            here = up[here][0]
            path.append(here)
        paths[rank] = path
    if not paths:
        raise NoTree("the job has no members")
    # the root: the lowest switch on every member's path (paths end at the center)
    common = set.intersection(*(set(p) for p in paths.values()))
    root = next(s for s in next(iter(paths.values())) if s in common)
    children: dict[str, list[Child]] = collections.defaultdict(list)
    below: dict[str, list[int]] = collections.defaultdict(list)     # ranks under each switch
    for rank, path in paths.items():
        for s in path[:path.index(root) + 1]:
            below[s].append(rank)
    for rank, path in paths.items():
        m, host = members[rank], topology.host_by_ip(members[rank].ip)
        assert host is not None
        mac = m.mac or host.mac
        children[path[0]].append(Child(rank, m.ip, m.udp_port, mac, host.port))
    nodes: dict[str, TreeNode] = {}
    for s in below:
        uplink, parent = None, None
        if s != root:
            parent, up_port, parent_port = up[s]
            me, them = topology.switches[s], topology.switches[parent]
            if not me.ip or not me.mac:
                raise NoTree(f"switch {s} has no address of its own (ip and mac in the topology)")
            uplink = ParentLink(port=up_port, rank=min(below[s]), ip=me.ip, src_mac=me.mac,
                                dst_mac=them.mac or me.mac)
            children[parent].append(Child(min(below[s]), me.ip, constants.AGG_UDP_PORT, me.mac,
                                          parent_port, switch=s))
        nodes[s] = TreeNode(s, (), parent, uplink)
    for s, node in nodes.items():
        kids = tuple(sorted(children[s], key=lambda c: c.rank))
        if len(kids) > constants.MAX_WORKERS:
            raise NoTree(f"switch {s} would have {len(kids)} children, more than {constants.MAX_WORKERS}")
        nodes[s] = TreeNode(s, kids, node.parent, node.uplink)
    return JobTree(root, nodes)
