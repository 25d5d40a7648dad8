"""A job's state on a p4reduce switch, as plain values (docs/protocol.md section 3): the jobs-table
entry, its place in a tree of switches (section 11), each worker's admission and egress-address
entries, the job's multicast group and the slot registers to clear before the job uses its slots.

The one builder for everything that programs a p4reduce switch; two writers put its output on a
switch: JobProgrammer (controller/job_programmer.py) over P4Runtime, as the controller does, and
EngineJobWriter (controller/engine_writer.py) into p4sim's in-process engine, for tests, stand-ins
and benchmarks. Only names from protocol/p4names.py are used, so the entries follow the program.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from p4reduce.protocol import p4names
from p4reduce.protocol.constants import Mode

JOB_MULTICAST_BASE = 0x100  # job J multicasts its results to group JOB_MULTICAST_BASE + J
RESET_REGISTERS = (p4names.SEEN, p4names.COUNT)  # what must be clear before a job uses a slot


def job_multicast_group(job_id: int) -> int:
    """The multicast group job `job_id` sends its results to."""
    return JOB_MULTICAST_BASE + job_id


@dataclass(frozen=True)
class JobSpec:
    """What the switch knows of a job: its id, size, slot range, mode and wire token (the 32-bit
    secret its contributions must carry and its results are stamped with; 0 for stand-ins and
    tests that build packets without one)."""
    job_id: int
    workers: int
    slot_base: int
    slot_count: int
    mode: Mode = Mode.DENSE
    wire_token: int = 0

    @property
    def multicast_group(self) -> int:
        return job_multicast_group(self.job_id)


class SwitchMember(Protocol):
    """What the switch knows of one worker of a job (controller.jobs.Member is one)."""

    @property
    def rank(self) -> int: ...

    @property
    def ip(self) -> str: ...

    @property
    def udp_port(self) -> int: ...

    @property
    def mac(self) -> str | None: ...

    @property
    def port(self) -> int | None:
        """The switch port its packets arrive on, and its results leave by."""


@dataclass(frozen=True)
class MemberSpec:
    """A SwitchMember for callers that have no controller Member (stand-ins, benchmarks)."""
    rank: int
    ip: str
    udp_port: int
    mac: str
    port: int


@dataclass(frozen=True)
class Entry:
    """One table entry by name: `action` None makes it a match-only key (for reads and deletes)."""
    table: str
    match: dict[str, Any]
    action: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def key(self) -> Entry:
        """The same entry without its action: what a delete or a read names."""
        return Entry(self.table, self.match)


def job_entry(job: JobSpec) -> Entry:
    """jobs: job_id -> set_job(slot range, size, multicast group, mode, wire token)."""
    return Entry(p4names.JOBS, {p4names.JOBS_KEY[0]: job.job_id}, p4names.SET_JOB,
                 {"slot_base": job.slot_base, "slot_count": job.slot_count, "num_workers": job.workers,
                  "mcast_grp": job.multicast_group, "mode": int(job.mode), "wire_token": job.wire_token})


@dataclass(frozen=True)
class ParentLink:
    """How an interior switch of a job's tree reaches its parent, to which it is one worker: out of
    `port`, as rank `rank`, from its own address `ip` (and AGG_UDP_PORT), MACs src_mac -> dst_mac.
    The parent knows it as a member (ip, AGG_UDP_PORT, rank, its port towards this switch)."""
    port: int
    rank: int
    ip: str
    src_mac: str
    dst_mac: str


def tree_entry(job_id: int, children: int, parent: ParentLink | None) -> Entry:
    """tree: job_id -> aggregate_root(children) at the tree's root (parent None), else
    aggregate_child(children, the parent link). A round completes after `children` contributions;
    a job without an entry is flat (its num_workers workers, no parent)."""
    match = {p4names.TREE_KEY[0]: job_id}
    if parent is None:
        return Entry(p4names.TREE, match, p4names.AGGREGATE_ROOT, {"children": children})
    return Entry(p4names.TREE, match, p4names.AGGREGATE_CHILD,
                 {"children": children, "up_port": parent.port, "up_rank": parent.rank, "up_ip": parent.ip,
                  "up_src_mac": parent.src_mac, "up_dst_mac": parent.dst_mac})


def worker_entry(job_id: int, member: SwitchMember) -> Entry:
    """workers: (ip, UDP port, job) -> set_rank(rank, port). Bound to the port its packets arrive
    on: from any other port the same addresses are dropped as SPOOFED_PORT."""
    ip_k, port_k, job_k = p4names.WORKERS_KEY
    return Entry(p4names.WORKERS, {ip_k: member.ip, port_k: member.udp_port, job_k: job_id},
                 p4names.SET_RANK, {"rank": member.rank, "port": member.port})


def worker_addr_entry(job_id: int, member: SwitchMember) -> Entry:
    """worker_addrs: (job, rank = the replica's egress_rid) -> set_worker_addr(mac, ip, UDP port)."""
    job_k, rid_k = p4names.WORKER_ADDRS_KEY
    return Entry(p4names.WORKER_ADDRS, {job_k: job_id, rid_k: member.rank}, p4names.SET_WORKER_ADDR,
                 {"mac": member.mac, "ip": member.ip, "udp_port": member.udp_port})


def member_entries(job_id: int, member: SwitchMember) -> list[Entry]:
    """Both entries of one worker, in the order they are installed."""
    return [worker_entry(job_id, member), worker_addr_entry(job_id, member)]


def group_replicas(members: Iterable[SwitchMember]) -> list[tuple[int, int]]:
    """The job's multicast replicas: (switch port, rank) of every member, by rank."""
    return [(m.port, m.rank) for m in sorted(members, key=lambda m: m.rank) if m.port is not None]


def slot_registers(job: JobSpec) -> tuple[int, int]:
    """[start, stop) of the job's slots (both shadow copies) in the slot registers."""
    return (p4names.register_index(job.slot_base, 0, 0),
            p4names.register_index(job.slot_base, job.slot_count, 0))
