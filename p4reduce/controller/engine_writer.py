"""Jobs written into p4sim's in-process engine, as the controller writes them over P4Runtime.

For tests, stand-ins and benchmarks that run the program in-process (p4sim.engine.Switch):
the entries come from the same builder as the controller's (controller/job_entries.py), in the
same order, so what they exercise is what the controller installs.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from p4reduce.controller.job_entries import (
    RESET_REGISTERS,
    Entry,
    JobSpec,
    ParentLink,
    SwitchMember,
    group_replicas,
    job_entry,
    member_entries,
    slot_registers,
    tree_entry,
)


class EngineControl(Protocol):
    """The part of the engine's control API the writer uses (p4sim.engine.Switch)."""

    def table_add(self, table: str, match: dict[str, Any], action: str, params: Any = None,
                  priority: int | None = None) -> Any: ...

    def mc_group_set(self, group: int, replicas: list[tuple[int, int]]) -> None: ...

    def register_write(self, name: str, index: int | None, value: int) -> None: ...


class EngineJobWriter:
    """Installs jobs and their workers on one in-process engine switch.

    install_job clears the job's slot registers and writes its jobs-table entry; set_tree its place
    in a tree of switches; add_member writes the worker's entries (a child switch is a member too)
    and sets the job's multicast group to every member added so far.
    """

    def __init__(self, switch: EngineControl):
        self.sw = switch
        self._members: dict[int, dict[int, SwitchMember]] = {}  # job id -> rank -> member

    def _write(self, entry: Entry) -> None:
        if entry.action is None:
            raise ValueError(f"{entry.table}: an entry without an action cannot be installed")
        self.sw.table_add(entry.table, entry.match, entry.action, entry.params)

    def install_job(self, job: JobSpec) -> None:
        start, stop = slot_registers(job)
        for name in RESET_REGISTERS:
            for i in range(start, stop):
                self.sw.register_write(name, i, 0)
        self._write(job_entry(job))
        self._members[job.job_id] = {}

    def set_tree(self, job_id: int, children: int, parent: ParentLink | None) -> None:
        """The job's tree entry: the root (parent None) or an interior switch below `parent`."""
        self._write(tree_entry(job_id, children, parent))

    def add_member(self, job: JobSpec, member: SwitchMember) -> None:
        for entry in member_entries(job.job_id, member):
            self._write(entry)
        members = self._members.setdefault(job.job_id, {})
        members[member.rank] = member
        self.sw.mc_group_set(job.multicast_group, group_replicas(members.values()))

    def install(self, job: JobSpec, members: Sequence[SwitchMember],
                tree: tuple[int, ParentLink | None] | None = None) -> None:
        """A whole job at once: the job, its tree entry (children, parent) when given, then every
        member."""
        self.install_job(job)
        if tree is not None:
            self.set_tree(job.job_id, *tree)
        for member in members:
            self.add_member(job, member)
