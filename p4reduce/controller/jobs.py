"""Jobs and their workers: admission, ranks, leases, and freeing everything at the end.

The JobManager is the single owner of job state. It takes slots from the SlotPool and, through a
JobProgrammer (controller/job_programmer.py), installs and removes the switch state of each job; with
no programmer it keeps the bookkeeping only (`serve --no-switch`, handy for testing worker agents
without a switch). Every change that the switch refuses is rolled back, so state and switch agree.

Every change to an existing job needs its job credential or the admin credential (controller/auth.py): the
caller of each request is passed in as a Caller; in-process callers use auth.TRUSTED. A worker's
binding (IP and UDP port, MAC, switch port) belongs to one rank of one job at a time. Each job also
has a wire token, the 32-bit secret of its packets (docs/protocol.md section 10): it is installed in
the switch's jobs table and appears only in the answers of callers who hold the job's credential.
"""
from __future__ import annotations

import builtins
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from p4reduce.controller import defaults
from p4reduce.controller.auth import TRUSTED, Caller, credential_digest, new_credential, new_wire_token
from p4reduce.controller.codec import parse_ipv4, parse_mac
from p4reduce.controller.errors import (
    BadRequest,
    Conflict,
    ControllerError,
    Forbidden,
    NotFound,
    SwitchError,
    Unauthorized,
)
from p4reduce.controller.job_entries import JobSpec
from p4reduce.controller.slots import SlotPool, SlotRange
from p4reduce.protocol.constants import Mode
from p4reduce.protocol.job_api import JOB_NAME, JOB_NAME_RULE
from p4reduce.protocol.wire import DEFAULT_LAYOUT, Layout

if TYPE_CHECKING:
    from p4reduce.controller.aggregation_tree import JobTree
    from p4reduce.controller.network import JobNetwork
    from p4reduce.controller.topology import Topology

log = logging.getLogger("p4reduce.controller")

MODES = ("dense", "sparse")
# where a job's sums are made: "tree", at every switch on its members' paths (controller/network.py),
# or "root", at the aggregating switch alone
AGGREGATIONS = ("tree", "root")


# how long every rank of a job must have been on the host fallback before its slots are reset for
# the return: longer than a datagram sent just before the last one left can stay queued on a link
REARM_QUIET_S = 1.0


class Member:
    """One admitted worker."""

    def __init__(self, rank: int, ip: str, udp_port: int, mac: str | None, port: int | None, now: float):
        self.rank, self.ip, self.udp_port, self.mac, self.port = rank, ip, udp_port, mac, port
        self.last_seen = now
        # where its calls run, as its heartbeats say: "switch", or "fallback" (the host fallback,
        # worker/fallback.py) with why and the job's generation it left the switch at
        self.path, self.path_reason, self.left_generation = "switch", "", -1
        self.path_since = now

    def to_json(self, now: float) -> dict[str, Any]:
        return {"rank": self.rank, "ip": self.ip, "udp_port": self.udp_port, "mac": self.mac,
                "port": self.port, "last_seen_s": round(max(0.0, now - self.last_seen), 3), "path": self.path}


class Job:
    def __init__(self, name: str, job_id: int, workers: int, mode: str, slots: SlotRange, lease_s: float,
                 now: float, wall: float):
        self.name, self.job_id, self.workers, self.mode = name, job_id, workers, mode
        self.slots = slots  # SlotRange
        self.lease_s = lease_s
        self.members: dict[int, Member] = {}  # by rank
        self.created = now
        self.created_at = wall
        self.last_activity = now  # join/leave/heartbeat: a memberless job expires from here
        self.state = "waiting"
        self.credential_digest: str | None = None  # SHA-256 of the job credential (None: admin only)
        self.wire_token = 0                   # the packets' secret (jobs table; members only)
        # liveness from the data plane (JobManager.progress): the last snapshot of the job's slot
        # registers, and when the switch last showed them change
        self.progress_mark: object = None
        self.progress_at = float("-inf")
        self.progress_logged = float("-inf")
        # bumped each time the job's slots are reset for its workers to come back from the host
        # fallback (JobManager.rearm); heartbeats hand it out, workers return when it passes theirs
        self.generation = 0
        # why the job holds no slots on the switch (admitted while none were free; JobManager.admit
        # gives it some once they are), else None; and how many it asked for
        self.off_switch: str | None = None
        self.install_failure: str | None = None   # why the last try to put it on the switch failed
        self.slots_asked = slots.count
        self.aggregation = "tree"
        # the switches that sum the job below the aggregating one, once it is whole (network.py),
        # and the slots each of them gives it
        self.tree: JobTree | None = None
        self.tree_slots: dict[str, SlotRange] = {}
        # members that left while the tree stays written (their place in it): a rank's leave must
        # not disturb the calls its peers still finish through the tree (the last call's results)
        self.tree_absent: dict[int, Member] = {}

    @property
    def on_switch(self) -> bool:
        """Whether the switch holds this job (its entries, group and slots)."""
        return self.off_switch is None

    def fallback_reason(self, switch_down: str | None) -> str | None:
        """Why the job's calls run on the host fallback (None: on the switch): it holds no slots,
        its switch is down, or a rank said so in its heartbeat."""
        if self.off_switch:
            return self.off_switch
        if switch_down:
            return switch_down
        on = sorted(m.rank for m in self.members.values() if m.path == "fallback")
        if not on:
            return None
        first = self.members[on[0]]
        return f"rank{'s' if len(on) > 1 else ''} {', '.join(map(str, on))} on the host fallback" + \
            (f" ({first.path_reason})" if first.path_reason else "")

    def alive_at(self, member: Member) -> float:
        """When `member` was last known alive: its last heartbeat, or the job's last progress on
        the switch (a job's slots advance only when every rank contributes)."""
        return max(member.last_seen, self.progress_at)

    @property
    def spec(self) -> JobSpec:
        """What the switch knows of this job (controller/job_entries.py builds its entries)."""
        return JobSpec(self.job_id, self.workers, self.slots.base, self.slots.count,
                       Mode.SPARSE if self.mode == "sparse" else Mode.DENSE, self.wire_token)

    def update_state(self) -> None:
        if self.state != "ended":
            self.state = "running" if len(self.members) == self.workers else "waiting"

    def to_json(self, now: float, switch_info: dict[str, Any], layout: Layout,
                members_only: bool = False, switch_down: str | None = None) -> dict[str, Any]:
        """The job description; `members_only` adds the wire token (for callers holding the job's
        credential: its workers, its creator, the admin)."""
        desc = {
            "name": self.name, "job_id": self.job_id, "state": self.state, "mode": self.mode,
            "workers": self.workers, "joined": len(self.members),
            "lanes": layout.lanes, "subblock": layout.subblock,
            "slots": self.slots.to_json(), "multicast_group": self.spec.multicast_group,
            "lease_s": self.lease_s, "switch": switch_info, "aggregation": self.aggregation,
            "members": [m.to_json(now) for _, m in sorted(self.members.items())],
            "created_at": self.created_at,
        }
        why = self.fallback_reason(switch_down)
        desc["path"] = "fallback" if why else "switch"
        if why:
            desc["path_reason"] = why
        desc["generation"] = self.generation
        if self.tree is not None:
            tree = self.tree.to_json()
            for name, node in tree["switches"].items():
                rng = self.tree_slots.get(name)
                node["slots"] = (rng or self.slots).to_json()
            desc["tree"] = tree
        if members_only:
            desc["wire_token"] = self.wire_token
        return desc

    def descriptor(self) -> dict[str, Any]:
        """What the switch must remember to resume this job after a controller restart."""
        desc: dict[str, Any] = {"name": self.name, "workers": self.workers, "mode": self.mode, "lease_s": self.lease_s,
                "slots": self.slots.to_json(), "aggregation": self.aggregation,
                # kept across restarts: workers tell this job from an earlier one with the same id by it
                "created_at": self.created_at}
        if self.tree is not None:      # the members sit below other switches: a restart finds them here
            desc["members"] = [_member_record(m) for _, m in sorted(self.members.items())]
            if self.tree_absent:       # and the tree's places of those that left
                desc["absent"] = [_member_record(m) for _, m in sorted(self.tree_absent.items())]
        if self.credential_digest:
            desc["credential_sha256"] = self.credential_digest
        return desc


def _member_record(m: Member) -> dict[str, Any]:
    return {"rank": m.rank, "ip": m.ip, "udp_port": m.udp_port, "mac": m.mac, "port": m.port}


def _check_int(value: object, field: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise BadRequest(f"field '{field}': must be an integer in {lo}..{hi}, got {value!r}", field=field)
    return value


def _check_number(value: object, field: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise BadRequest(f"field '{field}': must be a number in {lo:g}..{hi:g}, got {value!r}", field=field)
    return float(value)


class JobManager:
    """Creates, admits, renews and ends jobs; thread-safe."""

    def __init__(self, pool: SlotPool, programmer: JobNetwork | None = None, topology: Topology | None = None,
                 default_workers: int | None = None, default_mode: str = "dense", default_slots: int | None = None,
                 default_lease_s: float = 10.0, join_timeout_s: float = 120.0,
                 clock: Callable[[], float] = time.monotonic, switch_info: dict[str, Any] | None = None,
                 log: Callable[[str], None] | None = None, layout: Layout = DEFAULT_LAYOUT):
        self.pool = pool
        # the packet layout of the program the switch runs (controller.job_programmer.program_layout),
        # handed to workers in every job description
        self.layout = layout
        self.programmer = programmer
        self.topology = topology
        self.default_workers = default_workers
        self.default_mode = default_mode
        self.default_slots = default_slots
        self.default_lease_s = default_lease_s
        self.join_timeout_s = join_timeout_s
        self.clock = clock
        self.switch_info = switch_info or defaults.switch_endpoint(topology)
        self.log: Callable[[str], None] = log or (lambda msg: None)
        self.jobs: dict[str, Job] = {}
        self.ended: dict[str, tuple[str, float]] = {}  # name -> (reason, when): 409 job_ended for a while
        self.lock = threading.RLock()
        self.on_change: Callable[[], None] | None = None  # called (under the lock) after every change
        # the job's data-plane state as a comparable snapshot (None: unknown), read from the switch
        # (JobProgrammer.progress_mark); while it changes, a job whose heartbeats do not arrive
        # is making progress and is kept (issue #24: the job API may be flooded)
        self.progress: Callable[[Job], object] | None = None
        # why the aggregating switch cannot serve jobs now (its connection lost), else None
        self.switch_down: str | None = None
        # why no switch can aggregate at all (the aggregating switch runs another program): every
        # job is created for the host fallback with this reason, and stays there
        self.no_aggregation: str | None = None
        # the controller's own blind stretches (JobManager.watched): the reaper's period (its
        # LeaseReaper sets it), when its last pass decided, and the (from, to) spans it was late
        self.reap_period_s = 0.5
        self._passed_at: float | None = None
        self._blind: builtins.list[tuple[float, float]] = []

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception as e:  # saving state must not break the job API
                self.log(f"saving controller state failed: {e}")

    # -- validation ----------------------------------------------------------------------------
    def _validate_params(self, workers: object, mode: object, slots: object,
                         lease_s: object) -> tuple[int, str, int, float]:
        workers = _check_int(workers, "workers", 1, defaults.max_workers())
        if mode not in MODES:
            raise BadRequest(f"field 'mode': must be one of {', '.join(MODES)}, got {mode!r}", field="mode")
        slots = _check_int(slots, "slots", 1, self.pool.total or 65536)   # 0: no switch aggregates
        lease_s = _check_number(lease_s, "lease_s", 0.1, 86400)
        return workers, mode, slots, lease_s

    @staticmethod
    def _check_name(name: object) -> str:
        if not isinstance(name, str) or not JOB_NAME.fullmatch(name):
            raise BadRequest(f"field 'name': must be {JOB_NAME_RULE}, got {name!r}", field="name")
        return name

    @staticmethod
    def _authorize(job: Job, caller: Caller, what: str) -> None:
        """Unauthorized without a credential, Forbidden with one that does not open `job`."""
        if caller.may_change(job.credential_digest):
            return
        if caller.credential is None:
            raise Unauthorized(f"{what} job {job.name!r} needs its job credential (header 'Authorization: "
                               f"Bearer CREDENTIAL'; the credential is returned when the job is created)")
        raise Forbidden(f"the credential presented does not open job {job.name!r}")

    def _free_job_id(self) -> int:
        used = {j.job_id for j in self.jobs.values()}
        for job_id in range(1, defaults.max_jobs() + 1):
            if job_id not in used:
                return job_id
        raise Conflict(f"the switch already runs {len(used)} jobs, the most it can hold", code="too_many_jobs")

    # -- queries -------------------------------------------------------------------------------
    def get(self, name: str) -> Job:
        with self.lock:
            job = self.jobs.get(name)
            if job is None:
                if name in self.ended:
                    reason = self.ended[name][0]
                    raise Conflict(f"job {name!r} has ended ({reason})", code="job_ended")
                raise NotFound(f"no job named {name!r}", code="no_such_job")
            return job

    def status(self, name: str, caller: Caller | None = None) -> dict[str, Any]:
        """The job's description; with the wire token only for a `caller` who may change the job."""
        with self.lock:
            job = self.get(name)
            secret = caller is not None and caller.may_change(job.credential_digest)
            return job.to_json(self.clock(), self.switch_info, self.layout, members_only=secret,
                               switch_down=self.switch_down)

    def list(self) -> builtins.list[dict[str, Any]]:
        with self.lock:
            now = self.clock()
            return [j.to_json(now, self.switch_info, self.layout, switch_down=self.switch_down)
                    for _, j in sorted(self.jobs.items())]

    # -- create --------------------------------------------------------------------------------
    def create(self, name: str, workers: int | None = None, mode: str | None = None, slots: int | None = None,
               lease_s: float | None = None, caller: Caller = TRUSTED,
               aggregation: str | None = None) -> tuple[dict[str, Any], bool, str | None]:
        """Create a job (idempotent for identical parameters and the job's own credential).
        `aggregation`: "tree" (the default: summed at every switch on its members' paths, once
        whole) or "root" (at the aggregating switch alone, e.g. to compare).

        Returns (job_json, created, credential): the new job's credential, or None when it existed."""
        self._check_name(name)
        if workers is None:
            workers = self.default_workers
            if workers is None:
                raise BadRequest("field 'workers': required (the controller has no --default-workers)",
                                 field="workers")
        mode = self.default_mode if mode is None else mode
        asked_slots = slots is not None
        if slots is None:
            slots = self.default_slots or (defaults.default_job_slots(self.pool.total, self.layout)
                                           if self.pool.total else 1)
        lease_s = self.default_lease_s if lease_s is None else lease_s
        workers, mode, slots, lease_s = self._validate_params(workers, mode, slots, lease_s)
        if aggregation is not None and aggregation not in AGGREGATIONS:
            raise BadRequest(f"field 'aggregation': must be one of {', '.join(AGGREGATIONS)}, got {aggregation!r}",
                             field="aggregation")
        with self.lock:
            existing = self.jobs.get(name)
            if existing is not None:
                if not caller.may_change(existing.credential_digest):
                    raise Conflict(f"job {name!r} exists (creating it again needs its job credential)",
                                   code="job_exists")
                if (existing.workers, existing.mode, existing.lease_s) != (workers, mode, lease_s) or \
                        (asked_slots and existing.slots_asked != slots) or \
                        (aggregation is not None and existing.aggregation != aggregation):
                    raise Conflict(
                        f"job {name!r} exists with workers={existing.workers}, mode={existing.mode}, "
                        f"slots={existing.slots_asked}, lease_s={existing.lease_s:g}, "
                        f"aggregation={existing.aggregation}", code="job_exists")
                return existing.to_json(self.clock(), self.switch_info, self.layout, members_only=True), False, None
            job_id = self._free_job_id()
            largest = self.pool.largest_free()
            wanted = slots
            if 0 < largest < slots:   # a smaller window, not none (the job's calls are the same)
                how = "asked for" if asked_slots else "would get by default"
                self.log(f"job {name}: {largest} slots free of the {slots} it {how}: takes {largest}")
                slots = largest
            rng = self.pool.allocate(name, slots) if largest else SlotRange(0, 0)
            now = self.clock()
            job = Job(name, job_id, workers, mode, rng, lease_s, now, time.time())
            job.slots_asked = wanted
            job.aggregation = aggregation or "tree"
            if self.no_aggregation is not None:
                job.off_switch = f"{self.no_aggregation}: every call on the host fallback"
            elif not largest:
                job.off_switch = (f"no free slots on the switch (all {self.pool.total} held by other jobs): "
                                  "on the host fallback until some are freed")
            elif self.switch_down is not None:
                job.off_switch = f"{self.switch_down}: on the host fallback until the switch serves again"
            credential = new_credential()
            job.credential_digest = credential_digest(credential)
            job.wire_token = new_wire_token()
            try:
                if self.programmer is not None and job.on_switch:
                    self.programmer.install_job(job)
            except SwitchError as e:   # unreachable, full, refusing: the job runs on the host fallback
                self._uninstall_quietly(job)
                job.off_switch = f"the switch could not take the job ({e.message}): on the host fallback until it can"
            except Exception:
                self.pool.release(name)
                raise
            if not job.on_switch:
                self.pool.release(name)
                job.slots = SlotRange(0, 0)
            self.jobs[name] = job
            self.ended.pop(name, None)
            self._changed()
            where = f"slots [{rng.base}, {rng.end})" if job.on_switch else f"no slots: {job.off_switch}"
            self.log(f"job {name}: created (id {job_id}, {workers} workers, {mode}, {where})")
            return job.to_json(now, self.switch_info, self.layout, members_only=True), True, credential

    # -- join ----------------------------------------------------------------------------------
    def join(self, name: str, ip: str | None = None, udp_port: int | None = None, mac: str | None = None,
             rank: int | None = None, workers: int | None = None, mode: str | None = None, slots: int | None = None,
             peer_ip: str | None = None, switch_port: int | None = None,
             caller: Caller = TRUSTED) -> tuple[int, dict[str, Any], str | None]:
        """Admit a worker (creating the job if needed). Returns (rank, job_json, credential): the job
        credential when this join created the job, else None."""
        self._check_name(name)
        if ip is None and peer_ip is not None:
            calling_host = self.topology.host_by_source(peer_ip) if self.topology is not None else None
            ip = calling_host.ip if calling_host is not None else peer_ip
        if ip is None:
            raise BadRequest("field 'ip': required (could not tell the worker's address)", field="ip")
        try:
            ip = parse_ipv4(ip, "field 'ip'")
        except ValueError as e:
            raise BadRequest(str(e), field="ip") from None
        if mac is not None:
            try:
                mac = parse_mac(mac, "field 'mac'")
            except ValueError as e:
                raise BadRequest(str(e), field="mac") from None
        host = self.topology.host_by_ip(ip) if self.topology is not None else None
        if mac is None:
            if host is None:
                raise BadRequest(f"field 'mac': required, the topology does not know host {ip}", field="mac")
            mac = host.mac
        udp_port = defaults.udp_port() if udp_port is None else _check_int(udp_port, "udp_port", 1, 65535)
        port = None
        if switch_port is not None:
            port = _check_int(switch_port, "switch_port", 0, 510)
        elif self.topology is not None and host is not None:
            port = self.topology.arrival_port(self.topology.aggregation_switch.name, host)
        if self.programmer is not None and port is None:
            raise BadRequest(f"field 'switch_port': required, the topology has no switch port towards {ip}",
                             field="switch_port")
        with self.lock:
            created_here = name not in self.jobs
            credential = None
            if created_here:
                if name in self.ended:   # never silently re-create a job its workers saw end
                    self.get(name)       # raises 409 job_ended with the reason
                _, _, credential = self.create(name, workers, mode, slots, caller=caller)
            else:
                self._authorize(self.jobs[name], caller, "joining")
            try:
                rank, job = self._admit(self.jobs[name], ip, udp_port, mac, port, rank, workers, mode, slots)
                return rank, job, credential
            except ControllerError:
                if created_here:  # a job made for a join that failed must not linger
                    self.end(name, "its first join failed")
                    self.ended.pop(name, None)
                raise

    def _admit(self, job: Job, ip: str, udp_port: int, mac: str, port: int | None, rank: int | None,
               workers: int | None, mode: str | None, slots: int | None) -> tuple[int, dict[str, Any]]:
        """Add one worker to an existing job (under the lock)."""
        name = job.name
        for field, want, have in (("workers", workers, job.workers), ("mode", mode, job.mode),
                                  ("slots", slots, job.slots.count)):
            if want is not None and want != have:
                raise Conflict(f"job {name!r} exists with {field}={have}, the join asked for {want}",
                               code="job_exists", field=field)
        same = [m for m in job.members.values() if (m.ip, m.udp_port) == (ip, udp_port)]
        if same and (rank is None or rank == same[0].rank):
            old = same[0]
            if (old.mac, old.port) != (mac, port):
                raise Conflict(f"rank {old.rank} of job {name!r} is live at {ip}:{udp_port} with MAC {old.mac} "
                               f"on switch port {old.port}; a re-join must keep them (asked for MAC {mac} "
                               f"on port {port})", code="rank_taken", field="rank")
            kept = rank = old.rank  # a restarted worker keeps its rank
            job.members.pop(kept)
            self._apply(job, lambda p: p.remove_member(job, old),
                        undo=lambda: job.members.__setitem__(kept, old))
        elif same:
            raise Conflict(f"worker {ip}:{udp_port} already holds rank {same[0].rank} of job {name!r}",
                           code="rank_taken", field="rank")
        else:
            self._check_binding(job, ip, udp_port, mac, port)
        if rank is None:
            free = [r for r in range(job.workers) if r not in job.members]
            if not free:
                raise Conflict(f"job {name!r} already has all {job.workers} workers", code="job_full")
            rank = free[0]
        else:
            rank = _check_int(rank, "rank", 0, job.workers - 1)
            if rank in job.members:
                other = job.members[rank]
                silent = self.clock() - job.alive_at(other)
                if other.ip != ip or silent <= job.lease_s / 3:
                    raise Conflict(f"rank {rank} of job {name!r} belongs to {other.ip}:{other.udp_port}"
                                   + (f" (a new process on {ip} may take it once it is silent for "
                                      f"{job.lease_s / 3:g} s)" if other.ip == ip else ""),
                                   code="rank_taken", field="rank")
                # a new process on the same host takes over a rank whose process stopped (it missed
                # three heartbeats): what a restarted worker does (torchelastic, a supervisor)
                job.members.pop(rank)
                self._apply(job, lambda p: p.remove_member(job, other),
                            undo=lambda: job.members.__setitem__(rank, other))
                self.log(f"job {name}: rank {rank} taken over from {ip}:{udp_port} (its process at "
                         f"{other.ip}:{other.udp_port} silent for {silent:.1f} s)")
        now = self.clock()
        member = Member(rank, ip, udp_port, mac, port, now)
        job.members[rank] = member
        self._apply(job, lambda p: p.add_member(job, member),
                    undo=lambda: job.members.pop(rank, None))
        job.last_activity = now
        job.update_state()
        self._changed()
        self.log(f"job {name}: rank {rank} joined from {ip}:{udp_port} ({len(job.members)}/{job.workers})")
        return rank, job.to_json(now, self.switch_info, self.layout, members_only=True)

    def _check_binding(self, job: Job, ip: str, udp_port: int, mac: str, port: int | None) -> None:
        """409 if the new worker's address, MAC or switch port is bound to a worker of another host
        (any job), or its address to another rank or job: results must not be redirected."""
        shared = self._shared_ports()
        for other in self.jobs.values():
            for m in other.members.values():
                where = f"rank {m.rank} of job {other.name!r}"
                if (m.ip, m.udp_port) == (ip, udp_port):
                    raise Conflict(f"address {ip}:{udp_port} is bound to {where}", code="address_taken",
                                   field="udp_port")
                if m.mac == mac and m.ip != ip:
                    raise Conflict(f"MAC {mac} is bound to {where} at {m.ip}", code="mac_taken", field="mac")
                if m.ip == ip and mac is not None and m.mac not in (None, mac):
                    raise Conflict(f"{ip} is bound to MAC {m.mac} by {where}, not {mac}", code="mac_taken",
                                   field="mac")
                if port is not None and m.port == port and m.ip != ip and port not in shared:
                    raise Conflict(f"switch port {port} is bound to {where} at {m.ip}", code="port_taken",
                                   field="switch_port")
                if m.ip == ip and port is not None and m.port not in (None, port):
                    raise Conflict(f"{ip} is bound to switch port {m.port} by {where}, not {port}",
                                   code="port_taken", field="switch_port")

    def _shared_ports(self) -> set[int]:
        """Ports of the aggregating switch that lead to other switches: many hosts arrive by them."""
        topo = self.topology
        if topo is None or not topo.links:
            return set()
        agg = topo.aggregation_switch.name
        return {ap for a, ap, _b, _bp in topo.links if a == agg} | {bp for _a, _ap, b, bp in topo.links if b == agg}

    def _apply(self, job: Job, action: Callable[[JobNetwork], None], undo: Callable[[], object]) -> None:
        """Run `action` on the switch (when there is one and it holds the job); on failure `undo`
        the bookkeeping."""
        if self.programmer is None or not job.on_switch:
            return
        try:
            action(self.programmer)
        except Exception:
            undo()
            raise

    # -- heartbeat / leave / end ---------------------------------------------------------------
    def _member(self, job: Job, rank: object) -> Member:
        rank = _check_int(rank, "rank", 0, 1 << 16)
        if rank not in job.members:
            raise NotFound(f"job {job.name!r} has no worker with rank {rank}", code="no_such_rank", field="rank")
        return job.members[rank]

    def heartbeat(self, name: str, rank: int, caller: Caller = TRUSTED, path: str | None = None,
                  reason: str | None = None, generation: int | None = None) -> dict[str, Any]:
        """Renew `rank`'s lease; `path` (with `reason` and the `generation` it left the switch at)
        says where its calls run now. The answer says whether the switch serves the job and its
        generation (a worker on the fallback returns to the switch once that passes its own)."""
        with self.lock:
            job = self.get(name)
            self._authorize(job, caller, "a heartbeat for")
            member = self._member(job, rank)
            member.last_seen = job.last_activity = self.clock()
            if path is not None:
                if path not in ("switch", "fallback"):
                    raise BadRequest(f"field 'path': must be 'switch' or 'fallback', got {path!r}", field="path")
                if reason is not None and (not isinstance(reason, str) or len(reason) > 500):
                    raise BadRequest("field 'reason': must be a string of at most 500 characters", field="reason")
                generation = _check_int(generation if generation is not None else job.generation, "generation",
                                        0, 1 << 31)
                if path != member.path:
                    moved = (f"moved to the host fallback ({reason or 'no reason given'})" if path == "fallback"
                             else "is back on the switch")
                    self.log(f"job {name}: rank {rank} {moved}")
                    member.path_since = self.clock()
                member.path, member.path_reason = path, (reason or "") if path == "fallback" else ""
                member.left_generation = generation
            return {"state": job.state, "lease_s": job.lease_s, "joined": len(job.members),
                    "workers": job.workers, "generation": job.generation, "switch_serving": self.switch_down is None}

    # -- the switch lost and back, jobs re-armed -------------------------------------------------
    def _uninstall_quietly(self, job: Job) -> None:
        """Whatever part of the job a failed install wrote, removed (best effort: the switch may be gone)."""
        if self.programmer is None:
            return
        try:
            self.programmer.remove_job(job)
        except Exception as e:     # unreachable: nothing of it stays once the switch is restored
            log.debug("job %s: removing a partial install failed: %s", job.name, e)

    def _admit_waiting(self) -> None:
        """Give slots to jobs admitted without any, as far as free ones go (oldest job first): their
        entries, group and slots are written; their ranks come to the switch at the next re-arm."""
        if self.no_aggregation is not None:
            return
        for job in sorted((j for j in self.jobs.values() if not j.on_switch), key=lambda j: j.created):
            largest = self.pool.largest_free()
            if not largest:
                return
            rng = self.pool.allocate(job.name, min(job.slots_asked, largest))
            job.slots = rng
            reason, job.off_switch = job.off_switch, None
            try:
                if self.programmer is not None:
                    self.programmer.reinstall_job(job)
            except Exception as e:     # the switch refused, or a bug: the job stays off the switch, whole
                self._uninstall_quietly(job)
                self.pool.release(job.name)
                job.slots, job.off_switch = SlotRange(0, 0), reason
                why = str(getattr(e, "message", e))
                if why != job.install_failure:     # said once per reason, not at every pass
                    job.install_failure = why
                    self.log(f"job {job.name}: slots [{rng.base}, {rng.end}) free, but installing it failed: {why}")
                continue
            job.install_failure = None
            self._changed()
            self.log(f"job {job.name}: slots [{rng.base}, {rng.end}) freed up: on the switch once its ranks "
                     f"are re-armed there")

    def switch_lost(self, reason: str) -> None:
        """The aggregating switch cannot serve jobs (its P4Runtime connection broke)."""
        with self.lock:
            if self.switch_down is None:
                self.switch_down = reason
                if self.jobs:
                    self.log(f"{len(self.jobs)} job(s) degraded: {reason}; their workers use the host fallback")

    def switch_restored(self) -> None:
        with self.lock:
            self.switch_down = None

    def rearm(self) -> builtins.list[str]:
        """Bring back to the switch every job whose ranks are all on the host fallback while the
        switch serves: its entry gets a new wire token and its slot registers are reset (no rank
        sends to them now, and no stale partial sum or late datagram may meet a fresh call), then
        its generation is bumped; each worker returns at
        the same call boundary (the fallback's vote). Returns the names re-armed."""
        done: builtins.list[str] = []
        with self.lock:
            if self.switch_down is not None:
                return done
            self._admit_waiting()
            now = self.clock()
            for job in self.jobs.values():
                if job.state != "running" or len(job.members) < job.workers or not job.on_switch:
                    continue
                if not all(m.path == "fallback" and m.left_generation >= job.generation for m in job.members.values()):
                    continue
                if now - max(m.path_since for m in job.members.values()) < REARM_QUIET_S:
                    continue      # a packet sent before the last rank left may still be on its way
                # a new wire token: a datagram sent before the ranks left, still queued somewhere,
                # can never count in a slot the return uses (its version starts afresh)
                old_token, job.wire_token = job.wire_token, new_wire_token()
                try:
                    if self.programmer is not None:
                        self.programmer.rearm_job(job)
                except ControllerError as e:
                    job.wire_token = old_token
                    self.log(f"job {job.name}: cannot re-arm it on the switch yet: {e.message}")
                    continue
                job.generation += 1
                self._changed()
                done.append(job.name)
                self.log(f"job {job.name}: every rank on the host fallback and the switch serving: its slots "
                         f"reset, the workers return to the switch (generation {job.generation})")
        return done

    def leave(self, name: str, rank: int, caller: Caller = TRUSTED) -> dict[str, Any]:
        with self.lock:
            job = self.get(name)
            self._authorize(job, caller, "leaving")
            member = self._member(job, rank)
            del job.members[member.rank]
            self._apply(job, lambda p: p.remove_member(job, member),
                        undo=lambda: job.members.__setitem__(member.rank, member))
            job.last_activity = self.clock()
            job.update_state()
            self._changed()
            self.log(f"job {name}: rank {member.rank} left")
            if not job.members:
                snapshot = job.to_json(self.clock(), self.switch_info, self.layout)
                self.end(name, "all workers left")
                snapshot["state"] = "ended"
                return {"left": member.rank, "job": snapshot}
            return {"left": member.rank, "job": job.to_json(self.clock(), self.switch_info, self.layout)}

    def end(self, name: str, reason: str = "ended by request", caller: Caller = TRUSTED) -> dict[str, str]:
        """Free the job's entries, multicast group and slots (slot registers reset)."""
        with self.lock:
            job = self.get(name)
            self._authorize(job, caller, "ending")
            if self.programmer is not None and job.on_switch:
                self.programmer.remove_job(job)  # best effort inside: never leaves half a job
            self.pool.release(name)
            del self.jobs[name]
            job.state = "ended"
            self.ended[name] = (reason, self.clock())
            self._changed()
            self.log(f"job {name}: ended ({reason}); slots [{job.slots.base}, {job.slots.end}) freed")
            return {"ended": name}

    def sample_progress(self) -> None:
        """Read the data-plane state of every running job with a late heartbeat (more than a
        third of its lease); a change since the last reading is progress (Job.progress_at). The
        switch is read outside the lock."""
        probe = self.progress
        if probe is None:
            return
        with self.lock:
            now = self.clock()
            late = []
            for job in self.jobs.values():
                if job.state == "running" and job.on_switch and \
                        any(now - m.last_seen > job.lease_s / 3 for m in job.members.values()):
                    late.append(job)
                else:
                    job.progress_mark = None     # a later reading compares with a fresh one only
        for job in late:
            try:
                mark = probe(job)
            except Exception as e:  # the switch unreachable: heartbeats alone decide
                self.log(f"job {job.name}: cannot read its progress on the switch: {getattr(e, 'message', e)}")
                continue
            with self.lock:
                if self.jobs.get(job.name) is not job or mark is None:
                    continue
                if job.progress_mark is not None and mark != job.progress_mark:
                    now = self.clock()
                    job.progress_at = now
                    if now - job.progress_logged >= job.lease_s:
                        job.progress_logged = now
                        late_ranks = sorted(m.rank for m in job.members.values()
                                            if now - m.last_seen > job.lease_s / 3)
                        self.log(f"job {job.name}: no heartbeat from rank {', '.join(map(str, late_ranks))} "
                                 f"for a while, but the switch shows the job progressing: its lease is kept")
                job.progress_mark = mark

    def _note_pass(self, now: float) -> None:
        """A reaper pass decides at `now`: if it comes more than two reaper periods after the last
        one, the controller was not looking (not scheduled, or its switch reading was slow) from
        two periods after that pass until now: a blind stretch."""
        on_time = 2 * self.reap_period_s
        if self._passed_at is not None and now - self._passed_at > on_time:
            self._blind.append((self._passed_at + on_time, now))
        self._passed_at = now
        oldest = min((j.alive_at(m) for j in self.jobs.values() for m in j.members.values()), default=now)
        self._blind = [(a, b) for a, b in self._blind if b > oldest]

    def watched(self, since: float, now: float) -> float:
        """How long of [since, now] the controller was looking: the span less its blind stretches.
        A rank is reclaimed only after a whole lease of this without a heartbeat or the job's
        progress on the switch: a stall of the controller itself (a starved machine stops the job
        too, so the reading after it can equal the one before) is nobody's silence."""
        blind = sum(max(0.0, min(b, now) - max(a, since)) for a, b in self._blind)
        return now - since - blind

    def reap(self) -> builtins.list[str]:
        """End every job with a rank silent for lease_s of the controller's watch (JobManager.watched:
        no heartbeat, and no progress of the job on the switch), or memberless for join_timeout_s."""
        self.sample_progress()
        self.rearm()
        reclaimed = []
        with self.lock:
            now = self.clock()
            self._note_pass(now)
            for name, job in list(self.jobs.items()):
                dead = [m.rank for m in job.members.values()
                        if self.watched(job.alive_at(m), now) > job.lease_s]
                idle = not job.members and now - job.last_activity > self.join_timeout_s
                if dead or idle:
                    reason = (f"lease expired: rank {', '.join(map(str, dead))} silent for over {job.lease_s:g} s"
                              if dead else f"no worker joined for {self.join_timeout_s:g} s")
                    try:
                        self.end(name, reason)
                        reclaimed.append(name)
                    except ControllerError as e:
                        self.log(f"job {name}: could not reclaim: {e.message}")
            for name, (_, when) in list(self.ended.items()):
                if now - when > defaults.ENDED_MEMORY_S:
                    del self.ended[name]
        return reclaimed
