"""Jobs on a switch over P4Runtime: the writer of the job builder's entries (controller/job_entries.py)
and their reader.

Each job's table entry carries its descriptor (name, mode, lease) as P4Runtime entry `metadata`, so
a restarted controller can read jobs back from the switch alone (`read_back`).
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from p4reduce.controller import defaults
from p4reduce.controller.aggregation_tree import present_children
from p4reduce.controller.codec import format_ipv4, format_mac
from p4reduce.controller.connection import SwitchConnection, Update, update
from p4reduce.controller.entities import (
    all_multicast_groups,
    decode_multicast_group,
    decode_table_entry,
    multicast_group,
    register_entry,
    table_entry,
)
from p4reduce.controller.errors import SwitchError
from p4reduce.controller.job_entries import (
    RESET_REGISTERS,
    Entry,
    JobSpec,
    SwitchMember,
    group_replicas,
    job_entry,
    member_entries,
    slot_registers,
    tree_entry,
)
from p4reduce.controller.p4info import P4InfoIndex
from p4reduce.protocol import constants, p4names
from p4reduce.protocol.wire import Layout, WireError

if TYPE_CHECKING:
    from p4reduce.controller.aggregation_tree import TreeNode
    from p4reduce.controller.jobs import Job, Member
    from p4reduce.controller.registers import RegisterAccess


log = logging.getLogger("p4reduce.controller.jobs")


def slot_pool_size(index: P4InfoIndex) -> int:
    """SLOTS as compiled into the program: the `seen` register holds 2 * SLOTS entries."""
    if index.has("register", p4names.SEEN):
        return index.get("register", p4names.SEEN).size // 2
    return defaults.num_slots()


def program_layout(index: P4InfoIndex) -> Layout:
    """The packet layout (LANES, SUBBLOCK) compiled into the program, from its lane registers
    (docs/protocol.md section 1), so the job description tells workers what the switch really
    parses. Raises ValueError naming the problem when the program has no lane-register grid."""
    names = [r.preamble.name for r in index.all("register")]
    num_subblocks, subblock = p4names.lane_layout(names)
    try:
        return Layout(num_subblocks * subblock, subblock)
    except WireError as e:
        raise ValueError(f"the program's lane registers give an unusable layout: {e}") from None


class JobProgrammer:
    """Writes jobs' entries (controller/job_entries.py) to one switch through a SwitchConnection.

    Jobs are controller.jobs.Job objects: `job.spec` is what the switch knows of the job,
    `job.members` its admitted workers by rank, `job.descriptor()` what the job-table entry
    carries as metadata so a restarted controller can resume the job from the switch alone.
    """

    def __init__(self, conn: SwitchConnection, registers: RegisterAccess | None = None):
        self.conn = conn
        self.registers = registers  # P4RuntimeRegisters / ThriftRegisters, for slot resets

    @property
    def index(self) -> P4InfoIndex:
        return self.conn.pipeline

    # -- entries -------------------------------------------------------------------------------
    def _entity(self, entry: Entry) -> Any:
        """The P4Runtime TableEntry of a builder Entry."""
        if entry.action is None:
            return table_entry(self.index, entry.table, entry.match)
        return table_entry(self.index, entry.table, entry.match, entry.action, entry.params)

    def _job_entity(self, job: Job) -> Any:
        entity = self._entity(job_entry(job.spec))
        entity.metadata = json.dumps(job.descriptor(), sort_keys=True).encode()
        return entity

    def _member_entities(self, job: Job, member: Member, keys_only: bool = False) -> list[Any]:
        return [self._entity(e.key() if keys_only else e) for e in member_entries(job.job_id, member)]

    def _group(self, job: Job, members: Iterable[Member]) -> Any:
        return multicast_group(job.spec.multicast_group, group_replicas(members))

    # -- operations ----------------------------------------------------------------------------
    def install_job(self, job: Job) -> None:
        self.reset_slots(job.spec)
        self.conn.write([update(Update.INSERT, self._job_entity(job))])

    def add_member(self, job: Job, member: Member) -> None:
        """Worker entries, then the multicast group with every current member (job.members)."""
        self.conn.write([update(Update.INSERT, e) for e in self._member_entities(job, member)])
        others = [m for m in job.members.values() if m.rank != member.rank]
        try:
            kind = Update.MODIFY if others else Update.INSERT
            self.conn.write([update(kind, self._group(job, job.members.values()))])
        except SwitchError:
            self._delete_quietly(self._member_entities(job, member, keys_only=True))
            raise

    def remove_member(self, job: Job, member: Member) -> None:
        """Delete the worker's entries; shrink (or delete) the multicast group. `member` is no
        longer in job.members."""
        if job.members:
            self.conn.write([update(Update.MODIFY, self._group(job, job.members.values()))])
        else:
            self._delete_quietly([self._group(job, [])])
        self._delete_quietly(self._member_entities(job, member, keys_only=True))

    def remove_job(self, job: Job) -> None:
        """Delete everything of the job (continuing past entries already gone), reset its slots."""
        ents = []
        for m in job.members.values():
            ents += self._member_entities(job, m, keys_only=True)
        if job.members:
            ents.append(self._group(job, []))
        ents.append(self._entity(job_entry(job.spec).key()))
        self._delete_quietly(ents)
        try:
            self.reset_slots(job.spec)
        except SwitchError as e:
            log.warning("job %s: could not reset slot registers: %s", job.name, e.message)

    def reinstall_job(self, job: Job) -> None:
        """Write the whole job again (after the switch lost its state): entries and group."""
        self.reset_slots(job.spec)
        updates = [update(Update.INSERT, self._job_entity(job))]
        for m in job.members.values():
            updates += [update(Update.INSERT, e) for e in self._member_entities(job, m)]
        if job.members:
            updates.append(update(Update.INSERT, self._group(job, job.members.values())))
        self.conn.write(updates)

    def restore_job(self, job: Job) -> None:
        """Make the switch hold the job's entries and group as this controller wrote them, whatever
        another client changed (missing ones inserted, changed ones modified back)."""
        entities = [self._job_entity(job)]
        for m in job.members.values():
            entities += self._member_entities(job, m)
        if job.members:
            entities.append(self._group(job, job.members.values()))
        self._insert_or_modify(entities)

    def _insert_or_modify(self, entities: Iterable[Any]) -> None:
        """Each entity inserted, or modified back where the switch holds one under its key."""
        for ent in entities:
            try:
                self.conn.write([update(Update.INSERT, ent)])
            except SwitchError as e:
                if "ALREADY_EXISTS" not in e.message:
                    raise
                self.conn.write([update(Update.MODIFY, ent)])

    # -- a job's node of its aggregation tree (controller/aggregation_tree.py, controller/network.py) -----------
    def _node_entities(self, job: Job, node: TreeNode, keys_only: bool = False) -> list[Any]:
        """The node's tree entry (a round still needs every child) and its children's entries
        (workers table and addresses): every child's keys, the present children's entries."""
        entries = [tree_entry(job.job_id, len(node.children), node.uplink)]
        for child in (node.children if keys_only else present_children(node, job.tree_absent)):
            entries += member_entries(job.job_id, child)
        return [self._entity(e.key() if keys_only else e) for e in entries]

    def _node_group(self, spec: JobSpec, children: Iterable[SwitchMember]) -> Any:
        return multicast_group(spec.multicast_group, group_replicas(children))

    def _node_group_updates(self, job: Job, node: TreeNode, spec: JobSpec) -> list[Any]:
        """The node's multicast group to its present children (none left: no group)."""
        children = present_children(node, job.tree_absent)
        return [self._node_group(spec, children)] if children else []

    def _node_job_entity(self, job: Job, spec: JobSpec) -> Any:
        entity = self._entity(job_entry(spec))
        entity.metadata = json.dumps({"name": job.name, "tree_node_of": job.job_id}, sort_keys=True).encode()
        return entity

    def install_node(self, job: Job, node: TreeNode, spec: JobSpec, own_job_entry: bool) -> None:
        """Make this switch aggregate `node` of the job's tree: its slots reset and its jobs entry
        (`own_job_entry`: a switch other than the center, whose entry the job already has), the tree
        entry, every child's entries and the multicast group to the children."""
        updates = []
        if own_job_entry:
            self.reset_slots(spec)
            updates.append(update(Update.INSERT, self._node_job_entity(job, spec)))
        updates += [update(Update.INSERT, e) for e in self._node_entities(job, node)]
        updates += [update(Update.INSERT, g) for g in self._node_group_updates(job, node, spec)]
        self.conn.write(updates)

    def restore_node(self, job: Job, node: TreeNode, spec: JobSpec, own_job_entry: bool) -> None:
        """install_node whatever the switch holds now (missing entries inserted, others modified)."""
        entities = [self._node_job_entity(job, spec) if own_job_entry else self._job_entity(job)]
        entities += self._node_entities(job, node)
        entities += self._node_group_updates(job, node, spec)
        self._insert_or_modify(entities)

    def remove_child(self, job: Job, node: TreeNode, spec: JobSpec, child: SwitchMember) -> None:
        """A member of the job left (it is in job.tree_absent): its entries on this switch go, the
        node's group goes to the children left; the tree entry, the slots and every round in
        them stay, so the peers still finishing a call through this switch are answered."""
        groups = self._node_group_updates(job, node, spec)
        if groups:
            self.conn.write([update(Update.MODIFY, g) for g in groups])
        else:
            self._delete_quietly([self._node_group(spec, [])])
        self._delete_quietly([self._entity(e.key()) for e in member_entries(job.job_id, child)])

    def remove_node(self, job: Job, node: TreeNode, spec: JobSpec, own_job_entry: bool) -> None:
        """Undo install_node (continuing past entries already gone)."""
        ents = self._node_entities(job, node, keys_only=True) + [self._node_group(spec, [])]
        if own_job_entry:
            ents.append(self._entity(job_entry(spec).key()))
        self._delete_quietly(ents)
        if own_job_entry:
            try:
                self.reset_slots(spec)
            except SwitchError as e:
                log.warning("job %s: could not reset slot registers: %s", job.name, e.message)

    def restore_job_entry(self, job: Job) -> None:
        """Rewrite the job's entry (its descriptor changed: a tree's members are listed in it)."""
        self.conn.write([update(Update.MODIFY, self._job_entity(job))])

    def flat_members(self, job: Job, install: bool, members: Iterable[Member] | None = None) -> None:
        """The job's members (or those given) as direct workers of this switch (`install`), or none
        of them: what the center switch holds of a job aggregated here alone."""
        chosen = list(job.members.values() if members is None else members)
        ents = []
        for m in chosen:
            ents += self._member_entities(job, m, keys_only=not install)
        if install:
            updates = [update(Update.INSERT, e) for e in ents]
            if chosen:
                updates.append(update(Update.INSERT, self._group(job, chosen)))
            self.conn.write(updates)
        else:
            self._delete_quietly(ents + [self._group(job, [])])

    def node_slots(self, job_id: int) -> tuple[int, int] | None:
        """(slot_base, slot_count) of job `job_id`'s entry on this switch, None without one."""
        idx = self.index
        for ent in self.conn.read(table_entry(idx, p4names.JOBS)):
            d = decode_table_entry(idx, ent.table_entry)
            if d["is_default"] or not d["action"]:
                continue
            if next(iter(d["match"].values())) == job_id:
                return d["params"]["slot_base"], d["params"]["slot_count"]
        return None

    def _delete_quietly(self, entities: Iterable[Any]) -> None:
        """Delete one by one so one missing entry does not keep the others installed."""
        for ent in entities:
            try:
                self.conn.write([update(Update.DELETE, ent)])
            except SwitchError as e:
                if "NOT_FOUND" not in e.message:
                    log.warning("delete failed: %s", e.message)

    def reset_slots(self, job: JobSpec) -> None:
        """Clear seen and count of both shadow copies of the job's slots (where the target allows)."""
        if self.registers is None:
            return
        start, stop = slot_registers(job)
        for name in RESET_REGISTERS:
            if self.index.has("register", name):
                self.registers.fill(name, start, stop, 0)

    def progress_mark(self, job: Job) -> tuple[Any, ...] | None:
        """A snapshot of the job's slot registers (seen, count and round offset of both shadow
        copies), which change whenever a contribution is aggregated; None when registers cannot
        be read here. Two snapshots that differ mean the job made progress on the data plane (a
        slot advances only when all ranks contribute); equal ones, taken a second apart while
        the job runs, are rare (the same point of the same tensor), and only lose that second."""
        return self.progress_mark_of(job.spec)

    def progress_mark_of(self, spec: JobSpec) -> tuple[Any, ...] | None:
        """progress_mark of the slots `spec` names (a job's node below its center switch)."""
        if self.registers is None:
            return None
        start, stop = slot_registers(spec)
        names = [n for n in (*RESET_REGISTERS, p4names.ROUND_OFFSET) if self.index.has("register", n)]
        if not names:
            return None
        if self.registers.backend == "p4runtime":   # the job's cells only, in one Read
            cells = self.conn.read(*[register_entry(self.index, n, i) for n in names for i in range(start, stop)])
            return tuple(sorted((e.register_entry.register_id, e.register_entry.index.index,
                                 e.register_entry.data.SerializeToString()) for e in cells))
        return tuple(tuple(self.registers.read_range(n, start, stop).get(i, 0) for i in range(start, stop))
                     for n in names)

    # -- restart -------------------------------------------------------------------------------
    def read_back(self) -> list[dict[str, Any]]:
        """Jobs installed on the switch, as dicts for recovery.adopt_jobs()."""
        idx = self.index
        jobs, by_id = [], {}
        for ent in self.conn.read(table_entry(idx, p4names.JOBS)):
            te = ent.table_entry
            d = decode_table_entry(idx, te)
            if d["is_default"] or not d["action"] or not d["action"].endswith("set_job"):
                continue
            job_id = d["match"][idx.match_field(idx.get("table", p4names.JOBS), p4names.JOBS_KEY[0]).name]
            p = d["params"]
            try:
                desc = json.loads(te.metadata.decode()) if te.metadata else {}
            except (ValueError, UnicodeDecodeError):
                desc = {}
            rec = {"name": desc.get("name") or f"job-{job_id}", "job_id": job_id,
                   "workers": p["num_workers"],
                   "mode": "sparse" if p["mode"] == constants.Mode.SPARSE else "dense",
                   "slots": {"base": p["slot_base"], "count": p["slot_count"]},
                   "mcast_grp": p["mcast_grp"], "wire_token": p.get("wire_token", 0), "members": []}
            if descriptor_number(desc.get("lease_s"), 0.1, 86400.0):
                rec["lease_s"] = float(desc["lease_s"])
            if descriptor_number(desc.get("created_at"), 0.0, 1e11):   # the job's creation (wall clock), kept
                rec["created_at"] = float(desc["created_at"])
            if desc.get("aggregation") in ("tree", "root"):
                rec["aggregation"] = desc["aggregation"]
            if isinstance(desc.get("members"), list):   # aggregated as a tree: its members are below
                rec["members"] = [m for m in desc["members"] if isinstance(m, dict)]
                rec["members_known"] = True
                if isinstance(desc.get("absent"), list):  # and the places in its tree of those that left
                    rec["absent"] = [m for m in desc["absent"] if isinstance(m, dict)]
            if isinstance(desc.get("credential_sha256"), str):   # who may change the job (controller/auth.py)
                rec["credential_sha256"] = desc["credential_sha256"]
            jobs.append(rec)
            by_id[job_id] = rec
        addrs = {}
        for ent in self.conn.read(table_entry(idx, p4names.WORKER_ADDRS)):
            d = decode_table_entry(idx, ent.table_entry)
            if d["is_default"] or not d["action"]:
                continue
            vals = list(d["match"].values())
            addrs[(vals[0], vals[1])] = d["params"]
        ports = {}
        for ent in self.conn.read(all_multicast_groups()):
            group, replicas = decode_multicast_group(ent)
            ports[group] = {instance: port for port, instance in replicas}
        for ent in self.conn.read(table_entry(idx, p4names.WORKERS)):
            d = decode_table_entry(idx, ent.table_entry)
            if d["is_default"] or not d["action"]:
                continue
            ip_k, port_k, job_k = (idx.match_field(idx.get("table", p4names.WORKERS), k).name
                                   for k in p4names.WORKERS_KEY)
            job_id, rank = d["match"][job_k], d["params"]["rank"]
            owner = by_id.get(job_id)
            if owner is None or owner.get("members_known"):
                continue
            addr = addrs.get((job_id, rank), {})
            owner["members"].append({
                "rank": rank, "ip": format_ipv4(d["match"][ip_k]), "udp_port": d["match"][port_k],
                "mac": format_mac(addr["mac"]) if "mac" in addr else None,
                "port": d["params"].get("port", ports.get(owner["mcast_grp"], {}).get(rank))})
        return jobs


def descriptor_number(value: object, lo: float, hi: float) -> bool:
    """A descriptor field read back from a switch is a finite number in [lo, hi] (else ignored)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and lo <= value <= hi
