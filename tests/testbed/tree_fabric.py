"""A tree of p4reduce switches aggregating hop by hop (docs/protocol.md section 11), for tests.

Every switch is the compiled program on p4sim's engine in lockstep with its own reference model
(testbed.fabric.Fabric: each output frame byte-identical to the model's). Switches are wired
parent to child by direct links; workers sit on the leaves, unchanged (JobRun, the reference
worker). A job's entries are what a controller installs for a tree: on every switch of the job,
the jobs entry (num_workers = the job's total), the tree entry (the root's aggregate_root, every
other switch's aggregate_child towards its parent), and its members: the workers attached there,
and each child switch as one worker (its own address, AGG_UDP_PORT, rank = its place among its
parent's children).

TreeNetwork moves frames over every link, worker links and links between switches alike, with
loss, duplication and reordering (except that one sender's contributions on one slot stay in
order, hop by hop: docs/protocol.md section 7, "Limits"), and counts the frames each link carries.
"""
from __future__ import annotations

import collections
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from p4reduce.controller.job_entries import JobSpec, ParentLink
from p4reduce.protocol import constants as C
from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC
from p4reduce.protocol.constants import Mode, MsgType
from p4reduce.protocol.frames import parse_udp_frame, udp_frame
from p4reduce.protocol.wire import Header, Layout
from testbed.fabric import Fabric, WorkerEnd
from testbed.lossy_net import StalledError
from testbed.reference_worker import JobRun

UPLINK = 9                  # every switch's port towards its parent
FIRST_CHILD_PORT = 21       # a switch's ports towards its children: 21, 22, ... in declaration order


@dataclasses.dataclass
class Node:
    """One switch of the tree: its fabric (engine + model), its own addresses, its parent."""
    name: str
    fabric: Fabric
    parent: str | None
    ip: str
    mac: str
    children: list[str] = dataclasses.field(default_factory=list)

    def port_to(self, child: str) -> int:
        return FIRST_CHILD_PORT + self.children.index(child)


class TreeFabric:
    """Switches `parents` (name -> parent name, None for the root), wired parent to child."""

    def __init__(self, program: Any, layout: Layout, parents: Mapping[str, str | None]):
        from p4sim.engine import Switch
        self.layout = layout
        self.nodes: dict[str, Node] = {}
        for i, (name, parent) in enumerate(parents.items()):
            self.nodes[name] = Node(name, Fabric(Switch(program), layout), parent,
                                    ip=f"10.255.0.{i + 1}", mac=f"02:ff:00:00:00:{i + 1:02x}")
        for node in self.nodes.values():
            if node.parent is not None:
                self.nodes[node.parent].children.append(node.name)
        self.jobs: dict[int, JobSpec] = {}
        self.ends: dict[tuple[int, int], tuple[str, WorkerEnd]] = {}      # (job, rank) -> (leaf, end)
        self.by_addr: dict[tuple[str, int], tuple[int, int]] = {}          # (ip, UDP port) -> (job, rank)

    # ---- control plane, as a controller installs a tree ------------------------------------------
    def add_job(self, job_id: int, placement: Sequence[str], slot_count: int, mode: Mode = Mode.DENSE,
                wire_token: int = 0, slot_base: int = 0) -> None:
        """Job `job_id` with worker r on switch placement[r] (its port 1, 2, ... in rank order; usually
        a leaf, but any switch may have workers next to its child switches). A child switch's rank
        at its parent is the lowest one none of the parent's own workers has."""
        n = len(placement)
        job = JobSpec(job_id, n, slot_base, slot_count, Mode(mode), wire_token)
        self.jobs[job_id] = job
        on: set[str] = set()                # the switches of this job's tree: leaves and their ancestors
        for leaf in placement:
            name: str | None = leaf
            while name is not None:
                on.add(name)
                name = self.nodes[name].parent
        for name in self.nodes:             # parents first: the declaration order
            if name not in on:
                continue
            node = self.nodes[name]
            workers = [r for r in range(n) if placement[r] == name]
            child_switches = [c for c in node.children if c in on]
            node.fabric.install_job(job)
            parent = None
            if node.parent is not None:
                up = self.nodes[node.parent]
                parent = ParentLink(port=UPLINK, rank=self._up_ranks(placement, on, up)[name],
                                    ip=node.ip, src_mac=node.mac, dst_mac=up.mac)
            node.fabric.set_tree(job_id, len(workers) + len(child_switches), parent)
            for local, r in enumerate(workers):
                end = WorkerEnd(job_id, r, f"10.{job_id % 256}.{r // 200}.{r % 200 + 1}", 40000 + r,
                                f"02:00:{job_id >> 8:02x}:{job_id & 255:02x}:00:{r + 1:02x}", local + 1)
                node.fabric.add_worker(end)
                self.ends[(job_id, r)] = (name, end)
                self.by_addr[(end.ip, end.port)] = (job_id, r)
            up_ranks = self._up_ranks(placement, on, node)
            for child in child_switches:
                c = self.nodes[child]
                node.fabric.add_worker(WorkerEnd(job_id, up_ranks[child], c.ip, C.AGG_UDP_PORT, c.mac,
                                                 node.port_to(child)))

    @staticmethod
    def _up_ranks(placement: Sequence[str], on: set[str], node: Node) -> dict[str, int]:
        """The ranks of `node`'s child switches in the job: those its own workers leave free."""
        free = [r for r in range(len(placement)) if placement[r] != node.name]
        return dict(zip([c for c in node.children if c in on], free))

    # ---- data plane ---------------------------------------------------------------------------
    def worker_frame(self, job_id: int, rank: int, payload: bytes) -> tuple[str, int, bytes]:
        """A worker's contribution as its leaf receives it: (leaf, ingress port, frame)."""
        leaf, end = self.ends[(job_id, rank)]
        return leaf, end.switch_port, udp_frame(end.mac, SERVICE_MAC, end.ip, SERVICE_IP, end.port,
                                                C.AGG_UDP_PORT, payload)

    def peer(self, switch: str, port: int) -> tuple[str, int] | None:
        """The switch and port at the other end of a link between switches, None for a host port."""
        node = self.nodes[switch]
        if port == UPLINK and node.parent is not None:
            parent = self.nodes[node.parent]
            return parent.name, parent.port_to(switch)
        k = port - FIRST_CHILD_PORT
        if 0 <= k < len(node.children):
            return node.children[k], UPLINK
        return None

    def to_host(self, switch: str, port: int, frame: bytes) -> tuple[int, int, bytes]:
        """A frame leaving a host port: it must be a result for a worker on that port, from the
        service address and AGG_UDP_PORT, with its job's wire token. -> (job, rank, payload)."""
        udp = parse_udp_frame(frame, strict=True)
        job_id, rank = self.by_addr[(udp.dst_ip, udp.dport)]
        leaf, end = self.ends[(job_id, rank)]
        assert (leaf, end.switch_port) == (switch, port), f"result for {end} left {switch} port {port}"
        assert (udp.src_ip, udp.sport) == (SERVICE_IP, C.AGG_UDP_PORT), udp
        assert udp.dst_mac == end.mac
        h = Header.unpack(udp.payload)
        assert h.msg_type == MsgType.RESULT and h.wire_token == self.jobs[job_id].wire_token, h
        return job_id, rank, udp.payload

    def inject(self, switch: str, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """One frame into one switch (and its model); its output frames."""
        return self.nodes[switch].fabric.inject(port, frame)

    def send(self, job_id: int, rank: int, payload: bytes,
             log: list[tuple[str, str, bytes]] | None = None) -> list[tuple[int, int, bytes]]:
        """A worker's payload through the tree without loss, until nothing moves: what reached
        the workers, as (job, rank, payload). `log` gets every frame between switches as
        (from, to, frame)."""
        leaf, port, frame = self.worker_frame(job_id, rank, payload)
        pending = collections.deque([(leaf, port, frame)])
        delivered = []
        while pending:
            switch, port, frame = pending.popleft()
            for out_port, out in self.inject(switch, port, frame):
                peer = self.peer(switch, out_port)
                if peer is None:
                    delivered.append(self.to_host(switch, out_port, out))
                else:
                    if log is not None:
                        log.append((switch, peer[0], out))
                    pending.append((*peer, out))
        return delivered

    # ---- counters -----------------------------------------------------------------------------
    def events(self, switch: str) -> dict[int, int]:
        return self.nodes[switch].fabric.events()

    def drops(self, switch: str) -> dict[int, int]:
        return self.nodes[switch].fabric.drops()

    def total_drops(self) -> collections.Counter[int]:
        out: collections.Counter[int] = collections.Counter()
        for name in self.nodes:
            out.update(self.drops(name))
        return out

    def assert_counters_match_models(self) -> None:
        for node in self.nodes.values():
            node.fabric.assert_counters_match_model()


@dataclasses.dataclass
class _InFlight:
    to_switch: str | None           # a switch's ingress, or (None) a worker
    port: int
    frame: bytes                    # a frame to a switch, a result payload to a worker
    fifo: tuple | None              # contributions: (sender, job, slot); kept in order per key
    link: tuple[str, str]           # (from, to) for the frame counts
    worker: tuple[int, int] = (0, 0)


class TreeNetwork:
    """Loss (each link, each direction), duplication and reordering over a TreeFabric; worker
    timeouts retransmit when nothing is in flight. `link_frames[(from, to, msg_type)]` counts the
    frames put on each link ("w<job>.<rank>" names a worker)."""

    def __init__(self, tree: TreeFabric, seed: int = 0, loss: float = 0.0, dup: float = 0.0,
                 switch_loss: float | None = None, spurious_timeout: float = 0.0):
        self.tree = tree
        self.rng = np.random.default_rng(seed)
        self.loss = loss
        self.switch_loss = loss if switch_loss is None else switch_loss
        self.dup = dup
        self.spurious = spurious_timeout
        self.stats = collections.Counter[str]()
        self.link_frames: collections.Counter[tuple[str, str, int]] = collections.Counter()

    def _from_worker(self, job_id: int, rank: int, payload: bytes) -> _InFlight:
        leaf, port, frame = self.tree.worker_frame(job_id, rank, payload)
        h = Header.unpack(payload)
        name = f"w{job_id}.{rank}"
        self.link_frames[(name, leaf, h.msg_type)] += 1
        return _InFlight(leaf, port, frame, (name, job_id, h.slot), (name, leaf))

    def _from_switch(self, switch: str, port: int, frame: bytes) -> _InFlight:
        peer = self.tree.peer(switch, port)
        if peer is None:
            job_id, rank, payload = self.tree.to_host(switch, port, frame)
            name = f"w{job_id}.{rank}"
            self.link_frames[(switch, name, MsgType.RESULT)] += 1
            return _InFlight(None, port, payload, None, (switch, name), (job_id, rank))
        h = Header.unpack(frame[C.FRAME_HEADER_BYTES:])
        self.link_frames[(switch, peer[0], h.msg_type)] += 1
        fifo = (switch, h.job_id, h.slot) if h.msg_type == MsgType.CONTRIB else None
        return _InFlight(peer[0], peer[1], frame, fifo, (switch, peer[0]))

    def _eligible(self, inflight: list[_InFlight]) -> list[int]:
        seen, out = set(), []
        for i, item in enumerate(inflight):
            if item.fifo is None:
                out.append(i)
            elif item.fifo not in seen:
                seen.add(item.fifo)
                out.append(i)
        return out

    def run(self, runs: dict[int, JobRun], max_timeouts: int = 500) -> None:
        inflight = [self._from_worker(job_id, r, p) for job_id, run in runs.items() for r, p in run.start()]
        stalled = 0
        while not all(run.done() for run in runs.values()):
            if inflight and self.rng.random() < self.spurious:
                job_id = list(runs)[int(self.rng.integers(len(runs)))]
                rank = int(self.rng.integers(runs[job_id].n))
                resend = [(r, p) for r, p in runs[job_id].retransmissions() if r == rank]
                self.stats["retransmitted"] += len(resend)
                inflight += [self._from_worker(job_id, r, p) for r, p in resend]
                continue
            if not inflight:
                self.stats["timeouts"] += 1
                stalled += 1
                if stalled > max_timeouts:
                    raise StalledError(f"no progress after {max_timeouts} timeouts")
                for job_id, run in runs.items():
                    resend = run.retransmissions()
                    self.stats["retransmitted"] += len(resend)
                    inflight += [self._from_worker(job_id, r, p) for r, p in resend]
                continue
            eligible = self._eligible(inflight)
            i = eligible[int(self.rng.integers(len(eligible)))]
            item = inflight.pop(i)
            between_switches = item.link[0] in self.tree.nodes and item.link[1] in self.tree.nodes
            if self.rng.random() < (self.switch_loss if between_switches else self.loss):
                self.stats["lost"] += 1
                continue
            if self.rng.random() < self.dup:
                self.stats["duplicated"] += 1
                inflight.insert(i, item)        # same place: per-key order is kept
            if item.to_switch is None:
                job_id, rank = item.worker
                sends = runs[job_id].on_result(rank, item.frame)
                if sends:
                    stalled = 0
                inflight += [self._from_worker(job_id, r, p) for r, p in sends]
            else:
                for port, out in self.tree.inject(item.to_switch, item.port, item.frame):
                    inflight.append(self._from_switch(item.to_switch, port, out))

    def uplink(self, switch: str) -> tuple[int, int]:
        """(contributions up, results down) carried by `switch`'s link to its parent."""
        parent = self.tree.nodes[switch].parent
        assert parent is not None
        return (self.link_frames[(switch, parent, MsgType.CONTRIB)],
                self.link_frames[(parent, switch, MsgType.RESULT)])

