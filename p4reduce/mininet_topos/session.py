"""A full p4reduce session: network, controller, job-API relay -- started and stopped together.

Shared by `run` (interactive) and `demo` (scripted). Records what it started in run/state.json so
that `make stop` can end it if the session is killed. With `supervise=True` (`make run`), a
switch target or the controller that dies is started again (supervisor.py), its new PID recorded
in run/state.json and run/topology.json.
"""
from __future__ import annotations

import functools
import os
import signal
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from p4reduce.mininet_topos import runstate
from p4reduce.mininet_topos.apirelay import ApiRelay
from p4reduce.mininet_topos.certs import CertificateError, RunCertificates, make_run_certificates
from p4reduce.mininet_topos.controller_proc import ControllerProcess
from p4reduce.mininet_topos.description import write_description
from p4reduce.mininet_topos.links import LinkOptions
from p4reduce.mininet_topos.network import P4Network
from p4reduce.mininet_topos.supervisor import Supervisor
from p4reduce.protocol.credentials import read_credential_file
from p4reduce.protocol.job_api import DEFAULT_PORT, JobApiClient, JobApiError
from p4reduce.protocol.program_files import p4info_for, packet_layout

RUN_DIR = Path("run")
DESCRIPTION = RUN_DIR / "topology.json"


class SessionError(RuntimeError):
    pass


def _terminate_on_sigterm() -> None:
    """`make stop` sends SIGTERM: unwind through the finally blocks that stop everything."""
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, handler)


def _check_fits(program: str, link: LinkOptions) -> None:
    """The program's dense packet must cross the links whole (a worker's UDP datagram larger than
    the MTU is refused or fragmented, and the switch parses no fragment)."""
    try:
        layout = packet_layout(program)
    except ValueError as e:
        raise SessionError(f"--program {e}") from None
    if layout.dense_ipv4_bytes > link.link_mtu:
        raise SessionError(
            f"--program {program}: its dense packet ({layout.lanes} lanes, {layout.dense_ipv4_bytes} bytes "
            f"of IPv4) does not fit the links' MTU of {link.link_mtu} bytes: run with --mtu "
            f"{layout.dense_ipv4_bytes} or more (make run MTU=...), or build fewer lanes (make build LANES=...)")


def _say(text: str) -> None:
    print(text, flush=True)


class Session:
    #: seconds the controller keeps a job no worker has joined (its --join-timeout; run.py sets it)
    join_timeout_s: float = 120.0
    def __init__(self, topo: str = "star", workers: int | None = None, link: LinkOptions = LinkOptions(),
                 program: str | None = "build/p4reduce.json", target: str = "auto", api_port: int = DEFAULT_PORT,
                 grpc_base: int = 9559, thrift_base: int = 9090, prefix: str = "", log_dir: str = "logs",
                 pcap_dir: str | None = "pcaps", run_dir: str | Path = RUN_DIR, controller: bool = True,
                 controller_args: list[str] | None = None, switch_log_level: str = "info", tls: bool = True,
                 supervise: bool = False, say: Callable[[str], None] | None = None,
                 uplink: LinkOptions = LinkOptions(), topo_options: dict[str, Any] | None = None):
        if program and not Path(program).is_file():
            raise SessionError(f"--program {program}: not found (run `make build` first)")
        if program and not Path(p4info_for(program)).is_file():
            raise SessionError(f"--program {program}: its P4Info {p4info_for(program)} is missing")
        if program:
            _check_fits(program, link)
        self.run_dir = Path(run_dir)
        self.state_file = self.run_dir / "state.json"
        self.admin_credential_path = self.run_dir / "admin-credential"   # the controller's (0600)
        self.description_path = self.run_dir / "topology.json"
        self.program = program
        self.api_addr = f"127.0.0.1:{api_port}"
        self.network = P4Network(topo=topo, workers=workers, link=link, json_path=None, target=target,
                                 grpc_base=grpc_base, thrift_base=thrift_base, log_dir=log_dir,
                                 pcap_dir=pcap_dir, description_path=str(self.description_path),
                                 prefix=prefix, switch_log_level=switch_log_level, uplink=uplink,
                                 topo_options=topo_options)
        self.tls = tls      # P4Runtime over TLS with client certificates made for this run (certs.py)
        self.certificates: RunCertificates | None = None
        self.want_controller = controller
        self.controller: ControllerProcess | None = None
        if controller:
            self.controller = ControllerProcess(
                self.description_path, p4info_for(program) if program else None, program,
                api_addr=self.api_addr, log_dir=log_dir, extra=controller_args,
                admin_credential_file=self.admin_credential_path)
        self.relay: ApiRelay | None = None
        self.supervise = supervise       # restart a switch target or the controller that dies
        self.say: Callable[[str], None] = say or _say
        self.supervisor: Supervisor | None = None
        self.default_job = "default"     # the job `run` created, what the CLI's `workers` runs

    def start(self) -> Session:
        if runstate.anything_alive(self.state_file):
            raise SessionError(f"a previous session is still running ({self.state_file}): "
                               "`make stop` ends it")
        if self.state_file.exists():   # a killed session's leftovers: interfaces, loss tables
            runstate.stop_recorded(self.state_file, log=lambda *_: None)
        _terminate_on_sigterm()
        if self.tls:
            try:
                self.certificates = make_run_certificates(self.run_dir)
            except CertificateError as e:
                raise SessionError(str(e)) from None
            self.network.use_tls(self.certificates)
            if self.controller is not None:
                self.controller.argv += self.certificates.controller_args()
        try:
            self.network.start()
            self._record()
            if self.controller:
                self.controller.start()
                self._record()
                host, port = self.api_addr.split(":")
                self.relay = ApiRelay((host, int(port)))
                for h in self.network.hosts:
                    self.relay.add_host(f"/proc/{h.pid}/ns/net", h.params["index"])
            if self.supervise:
                self.supervisor = self._supervisor().start()
        except BaseException:
            self.stop()
            raise
        return self

    def admin_credential(self) -> str:
        """The running controller's admin credential (from its 0600 file in the run directory)."""
        return read_credential_file(self.admin_credential_path)

    def create_job(self, name: str, workers: int, mode: str | None = None, slots: int | None = None,
                   hosts: Iterable[Any] | None = None, lease_s: float | None = None,
                   aggregation: str | None = None) -> dict[str, Any]:
        """Create a job and grant it to `hosts` (Mininet hosts; default: every host): workers
        started there join with only the job's name, the relay adds the job credential (apirelay.py).
        Returns the Job, with its `credential`."""
        try:
            job = JobApiClient(self.api_addr).create(name, workers, mode, slots=slots, lease_s=lease_s,
                                                     aggregation=aggregation)
        except JobApiError as e:
            raise SessionError(f"cannot create job {name!r}: {e}") from None
        if self.relay is not None:
            chosen = self.network.hosts if hosts is None else hosts
            self.relay.grant(name, job["credential"], [h.params["index"] for h in chosen])
        return job

    def _supervisor(self) -> Supervisor:
        """A supervisor of every switch target and the controller this session started."""
        sup = Supervisor(self.say, on_restart=self._record_restart)
        for s in self.network.switches:
            sup.watch(s.name, functools.partial(getattr, s, "process"), s.restart)
        if self.controller is not None:
            controller = self.controller
            sup.watch("controller", lambda: controller.process, controller.restart)
        return sup

    def _record_restart(self) -> None:
        """New PIDs: in run/state.json (what `make stop` ends) and run/topology.json."""
        self._record()
        write_description(self.network.description(), self.description_path)

    def _record(self) -> None:
        procs = [runstate.process_record(os.getpid(), "session")]
        for s in self.network.switches:
            if s.target_pid:
                procs.append(runstate.process_record(s.target_pid, f"switch {s.name}"))
        if self.controller and self.controller.pid:
            procs.append(runstate.process_record(self.controller.pid, "controller"))
        for h in self.network.hosts:
            procs.append(runstate.process_record(h.pid, f"host {h.name}"))
        intfs = [intf.name for s in self.network.switches for _, intf in s.data_ports()]
        tables = self.network.loss_tables()
        runstate.write_state(procs, intfs, tables, self.state_file)

    def stop(self) -> None:
        if self.supervisor is not None:    # first: a deliberate stop is never "restarted"
            self.supervisor.stop()
            self.supervisor = None
        if self.relay:
            self.relay.close()
            self.relay = None
        if self.controller:
            self.controller.stop()
        self.network.stop()
        if self.state_file.exists():
            self.state_file.unlink()

    def __enter__(self) -> Session:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
