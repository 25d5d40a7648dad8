"""Surviving restarts: of the controller (resume the jobs the switch runs) and of a switch
(reconnect, re-push the pipeline, reinstall forwarding and replay the jobs).

A restarted controller reads the jobs back from the aggregating switch (JobProgrammer.read_back;
names from the entries' metadata, or the state file where a target drops it) and adopts them
without writing anything: workers keep aggregating through it (resume_jobs).

A SwitchWatchdog waits for the P4Runtime stream of its switch to break (the switch process died
or restarted). It then reconnects (retrying until stopped), makes sure the switch runs the program
again, reinstalls forwarding and, on the aggregating switch, replays every job the controller
manages (replay_jobs), so workers that keep retransmitting see aggregation resume. A switch that
kept its pipeline (only the connection broke) keeps its entries and nothing is replayed.
"""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from p4reduce.controller.errors import ControllerError, SwitchError
from p4reduce.controller.forwarding import install_forwarding
from p4reduce.controller.job_programmer import descriptor_number
from p4reduce.controller.jobs import Job, JobManager, Member
from p4reduce.protocol import p4names

if TYPE_CHECKING:
    from p4reduce.controller.connection import SwitchConnection
    from p4reduce.controller.job_programmer import JobProgrammer
    from p4reduce.controller.service import Controller, StateFile
    from p4reduce.controller.topology import Topology



def resume_jobs(manager: JobManager, programmer: JobProgrammer, state: StateFile) -> list[str]:
    """Adopt the jobs the switch already runs (names from entry metadata or the state file);
    returns their names."""
    if not programmer.index.has("table", p4names.JOBS):
        return []
    recovered = programmer.read_back()
    names = state.load()
    for rec in recovered:
        desc = names.get(rec["job_id"])
        if rec["name"].startswith("job-") and isinstance(desc, dict) and isinstance(desc.get("name"), str):
            rec["name"] = desc["name"]      # the state file (a configured path: checked field by field)
            if descriptor_number(desc.get("lease_s"), 0.1, 86400.0):
                rec.setdefault("lease_s", float(desc["lease_s"]))
            if isinstance(desc.get("credential_sha256"), str):
                rec.setdefault("credential_sha256", desc["credential_sha256"])
            if descriptor_number(desc.get("created_at"), 0.0, 1e11):
                rec.setdefault("created_at", float(desc["created_at"]))
    adopt_jobs(manager, recovered)
    state.save(manager)
    return [r["name"] for r in recovered]


def adopt_jobs(manager: JobManager, recovered: list[dict[str, Any]]) -> None:
    """Take over jobs read back from the switch (JobProgrammer.read_back): no switch writes."""
    with manager.lock:
        now = manager.clock()
        topology = manager.topology
        for rec in recovered:
            rng = manager.pool.reserve(rec["name"], rec["slots"]["base"], rec["slots"]["count"])
            job = Job(rec["name"], rec["job_id"], rec["workers"], rec["mode"], rng,
                      rec.get("lease_s", manager.default_lease_s), now, rec.get("created_at", time.time()))
            job.credential_digest = rec.get("credential_sha256")   # None: only the admin credential opens it
            job.wire_token = rec.get("wire_token", 0)     # from the jobs-table entry itself
            if rec.get("aggregation") in ("tree", "root"):
                job.aggregation = rec["aggregation"]
            for key, into in (("members", job.members), ("absent", job.tree_absent)):
                for m in rec.get(key, []):
                    member = _member(m, rec, topology, now)
                    if member is None or member.rank in job.members:
                        manager.log(f"job {rec['name']}: a member record read back is unusable, skipped: {m!r}")
                        continue
                    into[member.rank] = member
            job.update_state()
            manager.jobs[job.name] = job
            manager.log(f"job {job.name}: resumed from the switch (id {job.job_id}, "
                        f"{len(job.members)}/{job.workers} workers, slots [{rng.base}, {rng.end}))")


def _member(m: dict[str, Any], rec: dict[str, Any], topology: Topology | None, now: float) -> Member | None:
    """A member record read back from the switch (entries or descriptor: checked field by field)."""
    if not isinstance(m.get("rank"), int) or isinstance(m["rank"], bool) or not isinstance(m.get("ip"), str) or \
            not isinstance(m.get("udp_port"), int) or not 0 <= m["rank"] < rec["workers"]:
        return None
    mac, port = m.get("mac"), m.get("port")
    mac = mac if isinstance(mac, str) else None
    port = port if isinstance(port, int) and not isinstance(port, bool) else None
    host = topology.host_by_ip(m["ip"]) if topology is not None else None
    if topology is not None and host is not None:  # entries partly lost: the topology fills gaps
        mac = mac or host.mac
        if port is None:
            port = topology.arrival_port(topology.aggregation_switch.name, host)
    return Member(m["rank"], m["ip"], m["udp_port"], mac, port, now)


def replay_jobs(manager: JobManager) -> int:
    """Install every job again (the switch restarted and lost them); returns how many."""
    done = 0
    if manager.programmer is None:
        return done
    with manager.lock:
        for job in manager.jobs.values():
            if not job.on_switch:       # holds no slots: nothing of it on the switch
                continue
            try:
                manager.programmer.reinstall_job(job)
                done += 1
            except ControllerError as e:
                manager.log(f"job {job.name}: could not reinstall after a switch restart: {e.message}")
    return done


class SwitchWatchdog:
    def __init__(self, controller: Controller, switch_name: str, retry_s: float = 2.0):
        self.ctl = controller
        self.name = switch_name
        self.retry_s = retry_s
        self._stop = threading.Event()
        self.recoveries = 0
        self._last_contest = float("-inf")
        self._thread = threading.Thread(target=self._run, name=f"watchdog-{switch_name}", daemon=True)

    def start(self) -> SwitchWatchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        conn = self.ctl.connections[self.name]
        while not self._stop.is_set():
            if conn.displaced.is_set() and not conn.lost.is_set():
                self._contest(conn)
                continue
            if not conn.lost.wait(timeout=0.1):
                continue
            if self._stop.is_set():
                return
            self.ctl.report(f"switch {self.name}: connection lost; reconnecting every {self.retry_s:g} s")
            manager = self.ctl.manager
            aggregating = manager is not None and self.name == self.ctl.topology.aggregation_switch.name
            if aggregating:
                assert manager is not None
                manager.switch_lost(f"switch {self.name} unreachable (its P4Runtime connection broke)")
            if self._reconnect(conn):
                self.recoveries += 1
                if aggregating:
                    assert manager is not None
                    manager.switch_restored()

    def _contest(self, conn: SwitchConnection) -> None:
        """Another P4Runtime client made itself primary. With TLS and client certificates only a
        holder of a certificate of this deployment's CA can (a standby controller taking over):
        it keeps the switch. Without TLS anyone on the machine can, so the controller takes the
        switch back with a higher election id and restores what it installed (issue #24)."""
        conn.displaced.clear()
        who = conn.displaced_by
        if conn.tls is not None:
            self.ctl.report(f"switch {self.name}: a client with election id {who} (authenticated by this "
                            f"deployment's CA) is now primary; this controller stands back")
            return
        wait = self._last_contest + 0.5 - time.monotonic()    # never more than two a second
        if wait > 0 and self._stop.wait(wait):
            return
        self._last_contest = time.monotonic()
        try:
            high, low = conn.reclaim_primary()
        except SwitchError as e:
            self.ctl.report(f"switch {self.name}: displaced by a P4Runtime client with election id {who}, "
                            f"and could not take the switch back: {e.message}")
            conn.displaced.set()     # try again
            return
        self.ctl.report(f"switch {self.name}: another P4Runtime client (election id {who}) made itself "
                        f"primary; took the switch back with election id {(high << 64) | low} (the switch has "
                        f"no TLS: see docs/p4sim-security.md)")
        try:
            self._restore(conn)
        except SwitchError as e:
            self.ctl.report(f"switch {self.name}: restoring after the takeover failed: {e.message}")
            conn.displaced.set()     # try again

    def _restore(self, conn: SwitchConnection) -> None:
        """The switch's state as this controller made it: its program, forwarding and jobs."""
        pushed = False
        if self.ctl.p4info and self.ctl.device_config:
            pushed = conn.ensure_pipeline(self.ctl.p4info, self.ctl.device_config, report=self.ctl.report)
        install_forwarding(conn, self.ctl.topology, self.name, report=lambda msg: None)
        manager = self.ctl.manager
        if manager is None or manager.programmer is None:
            return
        if self.name != self.ctl.topology.aggregation_switch.name:   # a switch of some jobs' trees
            if pushed:
                self.ctl.reopen_registers(self.name)
            with manager.lock:
                n = manager.programmer.replay_switch(self.name, list(manager.jobs.values()))
            if n:
                self.ctl.report(f"switch {self.name}: its part of {n} job tree(s) restored after the takeover")
            return
        if pushed:
            self.ctl.reopen_registers()
            n = replay_jobs(manager)
        else:
            n = 0
            with manager.lock:
                for job in manager.jobs.values():
                    if job.on_switch:
                        manager.programmer.restore_job(job)
                        n += 1
        self.ctl.report(f"switch {self.name}: {n} job(s) restored after the takeover")

    def _reconnect(self, conn: SwitchConnection) -> bool:
        while not self._stop.is_set():
            try:
                conn.connect(self.retry_s, require_primary=True, report=lambda msg: None)
                break
            except SwitchError as e:
                if e.code == "not_primary":
                    self.ctl.report(f"switch {self.name}: {e.message}; giving it up")
                    return False
                if self._stop.wait(0.1):
                    return False
        if self._stop.is_set():
            return False
        try:
            if self.ctl.p4info and self.ctl.device_config:
                pushed = conn.ensure_pipeline(self.ctl.p4info, self.ctl.device_config, report=self.ctl.report)
            else:
                index, _ = conn.fetch_pipeline()
                if index is None:
                    self.ctl.report(f"switch {self.name}: back without a program, and this controller was "
                                    f"started without one to push (--p4info/--bmv2-json)")
                    return False
                pushed = False
            install_forwarding(conn, self.ctl.topology, self.name, report=self.ctl.report)
            manager = self.ctl.manager
            if pushed and manager is not None and self.name == self.ctl.topology.aggregation_switch.name:
                self.ctl.reopen_registers()
                n = replay_jobs(manager)
                self.ctl.report(f"switch {self.name}: {n} job(s) reinstalled")
            elif pushed and manager is not None and manager.programmer is not None:
                self.ctl.reopen_registers(self.name)
                with manager.lock:
                    n = manager.programmer.replay_switch(self.name, list(manager.jobs.values()))
                if n:
                    self.ctl.report(f"switch {self.name}: its part of {n} job tree(s) reinstalled")
            self.ctl.report(f"switch {self.name}: recovered")
            return True
        except SwitchError as e:
            self.ctl.report(f"switch {self.name}: recovery failed: {e.message}")
            conn.lost.set()  # try again
            return False
