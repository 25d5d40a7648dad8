"""The running controller: switches, pipeline, forwarding, jobs, leases and the job API together.

`Controller.start()` does, in order: connect to every switch of the topology (bounded wait,
arbitration), make sure each runs the program (pushing it only if it runs something else, so a
restart keeps the switch's state), install forwarding, then read the aggregation switch's jobs back
and resume them, and finally start the lease reaper, a watchdog per switch (reconnects and replays
the state after a switch restart, controller/recovery.py) and the job API.
"""
from __future__ import annotations

import json
import logging
import pathlib
import threading
from collections.abc import Callable
from typing import Any

from p4reduce.controller.api_server import JobApi, JobApiServer
from p4reduce.controller.connection import SwitchConnection, TlsClient
from p4reduce.controller.errors import SwitchError
from p4reduce.controller.forwarding import install_forwarding
from p4reduce.controller.job_programmer import JobProgrammer, program_layout, slot_pool_size
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.leases import LeaseReaper
from p4reduce.controller.network import JobNetwork, SwitchNode
from p4reduce.controller.recovery import SwitchWatchdog, resume_jobs
from p4reduce.controller.registers import RegisterAccess, open_register_access, thrift_address
from p4reduce.controller.slots import SlotPool
from p4reduce.controller.topology import Topology
from p4reduce.protocol import p4names
from p4reduce.protocol.job_api import DEFAULT_PORT
from p4reduce.protocol.wire import Layout

log = logging.getLogger("p4reduce.controller")


class StateFile:
    """Job descriptors by job id, a fallback for targets that drop table-entry metadata."""

    def __init__(self, path: str | pathlib.Path | None):
        self.path = pathlib.Path(path) if path else None

    def load(self) -> dict[int, dict[str, Any]]:
        if self.path is None or not self.path.is_file():
            return {}
        try:
            return {int(k): v for k, v in json.loads(self.path.read_text()).items()}
        except (ValueError, AttributeError):
            log.warning("state file %s is unreadable; job names will come from the switch only", self.path)
            return {}

    def save(self, manager: JobManager) -> None:
        if self.path is None:
            return
        data = {str(j.job_id): j.descriptor() for j in manager.jobs.values()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(self.path)


class Controller:
    def __init__(self, topology: Topology, p4info: str | pathlib.Path | None = None,
                 device_config: str | pathlib.Path | None = None, election_id: int | str | tuple[int, int] = 1,
                 connect_timeout: float = 30.0, api_address: tuple[str, int] = ("127.0.0.1", DEFAULT_PORT),
                 state_file: str | pathlib.Path | None = None, default_workers: int | None = None,
                 default_mode: str = "dense", default_slots: int | None = None, lease_s: float = 10.0,
                 join_timeout_s: float = 120.0, reset_registers: bool = True, require_primary: bool = True,
                 watch_switches: bool = True, report: Callable[[str], None] | None = None,
                 admin_credential: str | None = None, tls: TlsClient | None = None):
        self.topology = topology
        self.tls = tls     # P4Runtime over TLS with these CA, certificate and key (None: in clear)
        self.p4info, self.device_config = p4info, device_config
        self.election_id = election_id
        self.connect_timeout = connect_timeout
        self.api_address = api_address
        self.admin_credential = admin_credential   # None: the job API has job credentials only
        self.state = StateFile(state_file)
        self.manager_args: dict[str, Any] = dict(default_workers=default_workers, default_mode=default_mode,
                                                 default_slots=default_slots, default_lease_s=lease_s,
                                                 join_timeout_s=join_timeout_s)
        self.reset_registers = reset_registers
        self.require_primary = require_primary
        self.report: Callable[[str], None] = report or log.info
        self.connections: dict[str, SwitchConnection] = {}
        self.manager: JobManager | None = None
        self.network: JobNetwork | None = None
        self.reaper: LeaseReaper | None = None
        self.api_server: JobApiServer | None = None
        self.resumed: list[str] = []
        self.watch_switches = watch_switches
        self.watchdogs: list[SwitchWatchdog] = []

    def start(self, serve_api: bool = True, standby: bool = False,
              stop_event: threading.Event | None = None) -> Controller:
        """Bring everything up. With standby=True, wait (as a backup) until this controller
        becomes primary on every switch — the primary stopped or died — then take over."""
        for sw in self.topology.switches.values():
            conn = SwitchConnection(sw.grpc_addr, sw.device_id, self.election_id, name=sw.name, tls=self.tls)
            conn.connect(self.connect_timeout, self.require_primary and not standby, report=self.report)
            self.connections[sw.name] = conn
        if standby:
            for name, conn in self.connections.items():
                if not conn.primary:
                    self.report(f"switch {name}: standing by (another controller is primary)")
                while not conn.became_primary.wait(0.2):
                    if stop_event is not None and stop_event.is_set():
                        return self
                    if conn.lost.is_set():
                        raise SwitchError(f"switch {name}: connection lost while standing by")
                self.report(f"switch {name}: this controller is now primary; taking over")
        for sw in self.topology.switches.values():
            conn = self.connections[sw.name]
            if self.p4info and self.device_config:
                conn.ensure_pipeline(self.p4info, self.device_config, report=self.report)
            else:
                index, _ = conn.fetch_pipeline()
                if index is None:
                    raise SwitchError(f"switch {sw.name} runs no program and none was given "
                                      f"(--p4info/--bmv2-json, or build/ after `make build`)")
            install_forwarding(conn, self.topology, sw.name, report=self.report)
        agg = self.topology.aggregation_switch
        conn = self.connections[agg.name]
        try:
            layout = program_layout(conn.pipeline)
        except ValueError as e:     # a plain switch: it forwards; jobs run on the host fallback
            reason = f"switch {agg.name} does not run a p4reduce program ({e})"
            self.report(f"{reason}: every job runs on the host fallback")
            self.manager = JobManager(SlotPool(0), None, self.topology, log=self.report, **self.manager_args)
            self.manager.no_aggregation = reason
        else:
            self._start_jobs(conn, layout)
        manager = self.manager
        assert manager is not None
        self.reaper = LeaseReaper(manager).start()
        if self.watch_switches:
            self.watchdogs = [SwitchWatchdog(self, name).start() for name in self.connections]
        if serve_api:
            api = JobApi(manager, self.connections.values(), admin_credential=self.admin_credential)
            self.api_server = JobApiServer(api, self.api_address).start()
            self.report(f"job API listening on http://{self.api_server.address}/v1")
        return self

    def _start_jobs(self, conn: SwitchConnection, layout: Layout) -> None:
        """The job manager over the switches that aggregate, with the jobs they already hold."""
        agg = self.topology.aggregation_switch
        programmer = JobProgrammer(conn, self._open_registers())
        self.report(f"switch {agg.name}: {layout.lanes} lanes per packet "
                    f"({layout.num_subblocks} sub-blocks of {layout.subblock})")
        center = SwitchNode(agg.name, programmer, SlotPool(slot_pool_size(conn.pipeline)), layout)
        self.network = network = JobNetwork(center, self._tree_nodes(), self.topology, log=self.report)
        self.manager = manager = JobManager(center.pool, network, self.topology,
                                            log=self.report, layout=layout, **self.manager_args)
        manager.progress = network.progress_mark     # liveness from the data plane (jobs.py)
        self.resumed = resume_jobs(manager, programmer, self.state)
        with manager.lock:
            for job in manager.jobs.values():
                network.resume(job)
        manager.on_change = lambda: self.state.save(manager)

    def _tree_nodes(self) -> dict[str, SwitchNode]:
        """The other switches that run a p4reduce program: they can sum jobs below the center."""
        nodes = {}
        for sw in self.topology.switches.values():
            if sw.name == self.topology.aggregation_switch.name:
                continue
            conn = self.connections[sw.name]
            try:
                layout = program_layout(conn.pipeline)
            except ValueError:
                continue            # a plain switch: it forwards, it does not aggregate
            if not conn.pipeline.has("table", p4names.TREE):
                continue            # a program from before trees (issue #23)
            nodes[sw.name] = SwitchNode(sw.name, JobProgrammer(conn, self._open_registers(sw.name)),
                                        SlotPool(slot_pool_size(conn.pipeline)), layout)
        return nodes

    def _open_registers(self, name: str | None = None) -> RegisterAccess | None:
        """Register access on a switch (the aggregating one by default) for slot resets (None
        where impossible)."""
        if not self.reset_registers:
            return None
        agg = self.topology.switches[name] if name else self.topology.aggregation_switch
        conn = self.connections[agg.name]
        probe = p4names.SEEN if conn.pipeline.has("register", p4names.SEEN) else None
        try:
            return open_register_access(conn, thrift_address(agg.grpc_addr, agg.thrift_port), probe_register=probe)
        except SwitchError as e:
            self.report(f"switch {agg.name}: slot registers will not be reset: {e.message}")
            return None

    def reopen_registers(self, name: str | None = None) -> None:
        """After a switch came back (its Thrift connection is gone too); the aggregating one by default."""
        if self.network is None:
            return
        node = self.network.nodes.get(name or self.network.center.name)
        if node is not None:
            node.programmer.registers = self._open_registers(node.name)

    def stop(self) -> None:
        for dog in self.watchdogs:
            dog.stop()
        if self.api_server is not None:
            self.api_server.stop()
        if self.reaper is not None:
            self.reaper.stop()
        for conn in self.connections.values():
            conn.close()
