"""The switches a controller manages, and jobs written to them as trees (issue #23).

A controller is a collection of switches: each SwitchNode is one p4reduce switch with its own
P4Runtime session (its JobProgrammer), slot pool and packet layout. JobNetwork is what the
JobManager programs jobs through: the center switch (the service address's owner) admits a job
and its members as it always has; once every rank has joined, the job's tree (controller/aggregation_tree.py)
is written to the switches on its members' paths, children first, so each switch sums its own
children and sends one partial sum up. When a rank leaves, only its own entries go: the tree and
every round in it stay, so its peers still finishing a call through the tree (a job's last call,
when a rank that got its result first leaves while a peer waits for a result lost on an uplink)
are answered. When a rank joins again the tree is taken down, the center holds the job's members
directly until the job is whole, and the tree is planned again (the rank may come back from
another host). A job created with
aggregation "root", or whose tree cannot be made (a switch without free slots, a member on a host
the topology does not know), is aggregated at the center alone, as before trees existed.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from p4reduce.controller.aggregation_tree import JobTree, NoTree, TreeNode, plan
from p4reduce.controller.errors import ControllerError
from p4reduce.controller.job_entries import JobSpec
from p4reduce.controller.slots import SlotPool, SlotRange
from p4reduce.protocol.wire import Layout

if TYPE_CHECKING:
    from p4reduce.controller.job_programmer import JobProgrammer
    from p4reduce.controller.jobs import Job, Member
    from p4reduce.controller.topology import Topology


@dataclass
class SwitchNode:
    """One p4reduce switch of the network."""
    name: str
    programmer: JobProgrammer
    pool: SlotPool
    layout: Layout


class JobNetwork:
    """Writes jobs to the network: the center switch, and each whole job's tree below it."""

    def __init__(self, center: SwitchNode, others: dict[str, SwitchNode], topology: Topology | None,
                 log: Callable[[str], None] | None = None):
        self.center = center
        self.nodes = {center.name: center, **others}
        self.topology = topology
        self.log: Callable[[str], None] = log or (lambda msg: None)

    @property
    def programmer(self) -> JobProgrammer:
        """The center switch's programmer (its registers, its pipeline)."""
        return self.center.programmer

    @property
    def registers(self) -> Any:
        return self.center.programmer.registers

    @registers.setter
    def registers(self, value: Any) -> None:
        self.center.programmer.registers = value

    # -- the job's state on one switch ---------------------------------------------------------
    def _spec(self, job: Job, switch: str) -> JobSpec:
        """The job as `switch` knows it: its own slot range there."""
        if switch == self.center.name:
            return job.spec
        rng = job.tree_slots[switch]
        return JobSpec(job.job_id, job.workers, rng.base, rng.count, job.spec.mode, job.wire_token)

    # -- the JobManager's operations -------------------------------------------------------------
    def install_job(self, job: Job) -> None:
        self.center.programmer.install_job(job)

    def add_member(self, job: Job, member: Member) -> None:
        """`member` is in job.members already."""
        if job.tree is not None:       # a rank back in a job whose tree stayed up after it left
            self._back_to_center(job, joining=member)
        self.center.programmer.add_member(job, member)
        if len(job.members) == job.workers:
            self._grow(job)

    def remove_member(self, job: Job, member: Member) -> None:
        """`member` is no longer in job.members."""
        if job.tree is None:
            self.center.programmer.remove_member(job, member)
            return
        self._leave_tree(job, member)

    def remove_job(self, job: Job) -> None:
        if job.tree is not None:
            self._take_down(job)
        self.center.programmer.remove_job(job)

    def reinstall_job(self, job: Job) -> None:
        """The center switch lost its state: the job's entries there again, as a tree if it was one."""
        if job.tree is None or self.center.name not in job.tree.nodes:
            self.center.programmer.reinstall_job(job)
            return
        prog = self.center.programmer
        prog.reset_slots(job.spec)
        prog.restore_node(job, job.tree.nodes[self.center.name], job.spec, own_job_entry=False)

    def restore_job(self, job: Job) -> None:
        """Every switch of the job holds its entries as this controller wrote them (a new wire token)."""
        if job.tree is None:
            self.center.programmer.restore_job(job)
            return
        if self.center.name not in job.tree.nodes:
            self.center.programmer.restore_job(job)
        for node in job.tree.bottom_up():
            self.nodes[node.switch].programmer.restore_node(
                job, node, self._spec(job, node.switch), own_job_entry=node.switch != self.center.name)

    def rearm_job(self, job: Job) -> None:
        """The job back on the switches after the host fallback: every entry restored (its new
        wire token), then every slot it holds anywhere reset (no rank sends to them now)."""
        self.restore_job(job)
        self.center.programmer.reset_slots(job.spec)
        if job.tree is not None:
            for name in job.tree.nodes:
                if name != self.center.name:
                    self.nodes[name].programmer.reset_slots(self._spec(job, name))

    def progress_mark(self, job: Job) -> tuple[Any, ...] | None:
        """The root's slot registers: they advance only when every rank has contributed."""
        if job.tree is None or job.tree.root == self.center.name:
            return self.center.programmer.progress_mark(job)
        return self.nodes[job.tree.root].programmer.progress_mark_of(self._spec(job, job.tree.root))

    def replay_switch(self, name: str, jobs: list[Job]) -> int:
        """Switch `name` (not the center) restarted: its nodes of the jobs' trees written again."""
        done = 0
        for job in jobs:
            if job.tree is not None and name in job.tree.nodes and name != self.center.name:
                spec = self._spec(job, name)
                prog = self.nodes[name].programmer
                prog.reset_slots(spec)
                prog.restore_node(job, job.tree.nodes[name], spec, own_job_entry=True)
                done += 1
        return done

    def resume(self, job: Job) -> None:
        """After a controller restart: a whole job of aggregation "tree" gets its tree back, reusing
        the slots each switch still holds for it (workers keep aggregating through them)."""
        if job.aggregation == "tree" and len(job.members) + len(job.tree_absent) == job.workers:
            self._grow(job, resuming=True)
        if job.tree is None:            # no tree to keep the places of those that left in
            job.tree_absent.clear()

    # -- trees -----------------------------------------------------------------------------------
    def _plan(self, job: Job) -> JobTree:
        if self.topology is None:
            raise NoTree("the controller has no topology")
        tree = plan(self.topology, {**job.tree_absent, **job.members})
        for name in tree.nodes:
            if name not in self.nodes:
                raise NoTree(f"switch {name} does not run a p4reduce program this controller manages")
            if self.nodes[name].layout != self.center.layout:
                raise NoTree(f"switch {name} runs another packet layout than {self.center.name}")
        return tree

    def _grow(self, job: Job, resuming: bool = False) -> None:
        """Write the whole job's tree (children first); on any failure the job stays at the center."""
        if job.aggregation != "tree" or not job.on_switch:
            return
        try:
            tree = self._plan(job)
        except NoTree as e:
            self.log(f"job {job.name}: aggregated at {self.center.name} only: {e}")
            return
        if tree.root == self.center.name and len(tree.nodes) == 1:
            return                      # every member on the center itself: nothing to add
        slots: dict[str, SlotRange] = {}
        try:
            for name in tree.nodes:
                if name == self.center.name:
                    continue
                pool = self.nodes[name].pool
                held = self.nodes[name].programmer.node_slots(job.job_id) if resuming else None
                if held is not None and held[1] == job.slots.count:
                    slots[name] = pool.reserve(job.name, held[0], held[1])
                else:
                    slots[name] = pool.allocate(job.name, job.slots.count)
        except ControllerError as e:
            for name in slots:
                self.nodes[name].pool.release(job.name)
            self.log(f"job {job.name}: aggregated at {self.center.name} only: no tree ({e.message})")
            return
        job.tree, job.tree_slots = tree, slots
        written: list[TreeNode] = []
        try:
            if self.center.name in tree.nodes and not resuming:    # resuming: the switch holds the tree
                self.center.programmer.flat_members(job, install=False)
            for node in tree.bottom_up():
                own = node.switch != self.center.name
                prog = self.nodes[node.switch].programmer
                if resuming:
                    prog.restore_node(job, node, self._spec(job, node.switch), own_job_entry=own)
                else:
                    prog.install_node(job, node, self._spec(job, node.switch), own_job_entry=own)
                written.append(node)
            self.center.programmer.restore_job_entry(job)     # its descriptor now lists the members
        except ControllerError as e:
            self.log(f"job {job.name}: writing its tree failed ({e.message}); aggregated at "
                     f"{self.center.name} only")
            self._take_down(job, written)
            if self.center.name in tree.nodes:
                self.center.programmer.flat_members(job, install=True)
            return
        self.log(f"job {job.name}: aggregated as a tree rooted at {tree.root}: "
                 + "; ".join(f"{n.switch} sums {', '.join(c.to_json() for c in n.children)}"
                             for n in tree.bottom_up()))

    def _take_down(self, job: Job, nodes: list[TreeNode] | None = None) -> None:
        """Remove the tree's nodes (all, or those given), free their slots; job.tree is cleared."""
        tree = job.tree
        if tree is None:
            return
        for node in reversed(nodes if nodes is not None else tree.bottom_up()):
            own = node.switch != self.center.name
            try:
                self.nodes[node.switch].programmer.remove_node(job, node, self._spec(job, node.switch),
                                                               own_job_entry=own)
            except ControllerError as e:
                self.log(f"job {job.name}: removing its entries from {node.switch} failed: {e.message}")
        for name in job.tree_slots:
            self.nodes[name].pool.release(job.name)
        job.tree, job.tree_slots = None, {}
        job.tree_absent.clear()

    def _leave_tree(self, job: Job, gone: Member) -> None:
        """A rank left a job aggregated as a tree: its entries go from the switch it is a child of
        (and from the center, which keeps flat entries when it is not in the tree); nothing else."""
        tree = job.tree
        assert tree is not None
        job.tree_absent[gone.rank] = gone
        for node in tree.nodes.values():
            for child in node.children:
                if child.switch is None and child.rank == gone.rank:
                    self.nodes[node.switch].programmer.remove_child(job, node, self._spec(job, node.switch), child)
        if self.center.name not in tree.nodes:
            self.center.programmer.remove_member(job, gone)
        self.center.programmer.restore_job_entry(job)       # its descriptor lists who left
        self.log(f"job {job.name}: rank {gone.rank} left; its tree stays until a rank joins again")

    def _back_to_center(self, job: Job, joining: Member) -> None:
        """A rank joins a job whose tree stayed up after ranks left: the tree comes down and the
        center holds the other members directly until the job is whole (planned again then)."""
        tree = job.tree
        assert tree is not None
        self._take_down(job)
        if self.center.name in tree.nodes:
            # the center's rounds counted switches by their rank at it: none may answer a member now
            self.center.programmer.reset_slots(job.spec)
            self.center.programmer.flat_members(
                job, install=True, members=[m for m in job.members.values() if m.rank != joining.rank])
        self.center.programmer.restore_job_entry(job)
        self.log(f"job {job.name}: rank {joining.rank} joins again; aggregated at {self.center.name} until it "
                 "is whole")
