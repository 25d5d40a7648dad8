"""`python -m p4reduce.controller COMMAND` (`p4reduce-controller`): serve, shell, and non-interactive
inspection commands.

    serve      run the controller and the job API for a topology (or one switch)
    topology   write the topology file of a one-switch deployment on real hosts (docs/deploy.md)
    create-job create a job on a running controller; its credential to a 0600 file or stdout
    shell      p4runtime-shell's IPython shell plus p4reduce commands (see docs/controller.md)
    jobs       jobs on the switch (or, with --api-addr, as the running controller sees them)
    slots      slot map
    registers  the list of registers; NAME [--index I | --range A:B]; or --slot S [--job NAME] [--ver V]
    counters   [NAME]: drops by reason and aggregation events
    entries    [TABLE]
    groups     multicast groups

The shell and the inspection commands pick their switch with `--switch NAME` from the topology
description of a running `make run` (run/topology.json; default: its aggregating switch), or
`--grpc-addr HOST:PORT`. They only read, so they never disturb the running controller; `--json`
prints machine-readable output. Errors are one line on stderr and exit status 1.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import pathlib
import signal
import socket
import sys
import threading
import time
from typing import Any

from p4reduce.controller import defaults, report
from p4reduce.controller import topology as topo
from p4reduce.controller.api_server import JobApi, JobApiServer
from p4reduce.controller.connection import TlsClient
from p4reduce.controller.errors import ControllerError, SwitchError
from p4reduce.controller.inspection import SwitchInspector, open_inspector
from p4reduce.controller.jobs import JobManager
from p4reduce.controller.leases import LeaseReaper
from p4reduce.controller.service import Controller
from p4reduce.controller.shell import run_shell
from p4reduce.controller.slots import SlotPool
from p4reduce.controller.topology_writer import add_create_job_parser, cmd_create_job, cmd_topology
from p4reduce.controller.topology_writer import add_parser as add_topology_parser
from p4reduce.protocol.credentials import load_or_create_credential_file, new_credential
from p4reduce.protocol.job_api import DEFAULT_PORT, JobApiClient, JobApiError
from p4reduce.protocol.program_files import p4info_for

BUILD_JSON = pathlib.Path("build") / "p4reduce.json"   # what `make build` writes
RUN_DESCRIPTION = pathlib.Path("run") / "topology.json"   # what `make run` writes
DEFAULT_GRPC_ADDR = "127.0.0.1:9559"


def _addr(value: str) -> str:
    _host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return value


def _range(value: str) -> tuple[int, int]:
    try:
        start, stop = value.split(":", 1)
        a, b = int(start), int(stop)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:STOP (stop exclusive), got {value!r}") from None
    if not 0 <= a < b:
        raise argparse.ArgumentTypeError(f"range {value!r}: need 0 <= START < STOP")
    return a, b


def _switch_args(p: argparse.ArgumentParser, wait: float = 5.0) -> None:
    """The switch of `serve` without a topology file."""
    p.add_argument("--grpc-addr", type=_addr, default=DEFAULT_GRPC_ADDR,
                   help="P4Runtime address HOST:PORT (default %(default)s)")
    p.add_argument("--device-id", type=int, default=0, help="P4Runtime device id (default %(default)s)")
    p.add_argument("--thrift-port", type=int, default=None,
                   help="BMv2 Thrift port, to read registers on simple_switch_grpc (e.g. 9090)")
    p.add_argument("--wait", type=float, default=wait,
                   help=f"seconds to wait for the switch (default {wait:g}); progress is reported")
    _tls_args(p)


def _tls_args(p: argparse.ArgumentParser | Any) -> None:
    """P4Runtime over TLS (a switch started with --grpc-server-ssl, ...-with-client-auth)."""
    p.add_argument("--tls-ca", metavar="FILE", default=None,
                   help="P4Runtime over TLS: the CA certificate (PEM) the switch's certificate must be signed by")
    p.add_argument("--tls-cert", metavar="FILE", default=None,
                   help="with --tls-ca: this client's certificate (PEM), for a switch that requires client "
                        "certificates")
    p.add_argument("--tls-key", metavar="FILE", default=None, help="with --tls-cert: its private key (PEM)")


def tls_client(args: argparse.Namespace, description: dict[str, Any] | None = None) -> TlsClient | None:
    """The TlsClient of --tls-ca/--tls-cert/--tls-key, else of a topology description's
    `p4runtime_tls` (what `make run` writes), else None (P4Runtime in clear)."""
    if args.tls_ca is None and (args.tls_cert is not None or args.tls_key is not None):
        raise ControllerError("--tls-cert/--tls-key need --tls-ca (the CA that signed the switch's certificate)")
    if args.tls_ca is not None:
        return TlsClient(args.tls_ca, args.tls_cert, args.tls_key)
    tls = (description or {}).get("p4runtime_tls")
    if isinstance(tls, dict) and isinstance(tls.get("ca"), str):
        cert, key = tls.get("cert"), tls.get("key")
        return TlsClient(tls["ca"], cert if isinstance(cert, str) else None, key if isinstance(key, str) else None)
    return None


def _description(path: str | pathlib.Path | None) -> dict[str, Any] | None:
    """The raw topology description at `path` (JSON), or None."""
    if not path:
        return None
    try:
        data = json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _target_args(p: argparse.ArgumentParser, wait: float = 5.0) -> None:
    """The switch to look at: by name from a topology description, or by address."""
    g = p.add_argument_group("switch")
    g.add_argument("--switch", metavar="NAME",
                   help="a switch of the running topology, by name (default: its aggregating switch, "
                        "e.g. s1 on the star, spine on two-tier)")
    g.add_argument("--topology", metavar="FILE", default=str(RUN_DESCRIPTION),
                   help="the topology description that names the switches (default %(default)s, "
                        "written by `make run`)")
    g.add_argument("--grpc-addr", type=_addr, default=None, metavar="HOST:PORT",
                   help=f"P4Runtime address instead of a named switch (default: the switch's, else "
                        f"{DEFAULT_GRPC_ADDR})")
    g.add_argument("--device-id", type=int, default=None, help="P4Runtime device id (default: the switch's, else 0)")
    g.add_argument("--thrift-port", type=int, default=None,
                   help="BMv2 Thrift port, to read registers on simple_switch_grpc (default: the switch's)")
    g.add_argument("--wait", type=float, default=wait,
                   help=f"seconds to wait for the switch (default {wait:g})")
    _tls_args(g)


@dataclasses.dataclass
class SwitchTarget:
    """The switch an inspection command or the shell talks to."""
    grpc_addr: str
    device_id: int = 0
    thrift_port: int | None = None
    name: str | None = None
    source: str | None = None      # the description that named it
    tls: TlsClient | None = None

    @property
    def label(self) -> str:
        return f"{self.name} ({self.grpc_addr})" if self.name else self.grpc_addr


def resolve_target(args: argparse.Namespace) -> SwitchTarget:
    """--switch NAME from the topology description; else --grpc-addr; else the description's
    aggregating switch when a description exists; else the default address. Explicit
    --grpc-addr/--device-id/--thrift-port override what the description says."""
    path = pathlib.Path(args.topology)
    target = SwitchTarget(DEFAULT_GRPC_ADDR)
    described_addr = None
    if args.switch or (args.grpc_addr is None and path.is_file()):
        if not path.is_file():
            raise ControllerError(f"--switch {args.switch}: no topology description at {path} "
                                  "(start the network with `make run`, or give --topology FILE)")
        try:
            tp = topo.load(path)
        except (topo.TopologyError, OSError, ValueError) as e:
            raise ControllerError(f"--topology {path}: {e}") from None
        if args.switch:
            if args.switch not in tp.switches:
                raise ControllerError(f"--switch {args.switch}: no such switch in {path} "
                                      f"(switches: {', '.join(tp.switches)})")
            sw = tp.switches[args.switch]
        else:
            sw = tp.aggregation_switch
        target = SwitchTarget(sw.grpc_addr, sw.device_id or 0, sw.thrift_port, sw.name, str(path))
        described_addr = sw.grpc_addr
    if args.grpc_addr is not None:
        target.grpc_addr = args.grpc_addr
    if args.device_id is not None:
        target.device_id = args.device_id
    if args.thrift_port is not None:
        target.thrift_port = args.thrift_port
    # the description's TLS is for its own switches: a switch named by address alone (say, a test's
    # switch in clear while a `make run` description lies in run/) is reached as told (--tls-*)
    from_description = target.source is not None and target.grpc_addr == described_addr
    target.tls = tls_client(args, _description(path) if from_description else None)
    return target


def _port_open(addr: str) -> bool:
    host, _, port = addr.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=1.0):
            return True
    except (OSError, ValueError):
        return False


def open_target(args: argparse.Namespace, registers: bool = False) -> tuple[SwitchTarget, SwitchInspector]:
    """(target, SwitchInspector) for the inspection commands and the shell; when nothing listens
    at the switch's address, an error that says what to start."""
    target = resolve_target(args)
    try:
        return target, open_inspector(target.grpc_addr, target.device_id, args.wait, target.thrift_port,
                                      registers, tls=target.tls)
    except SwitchError:
        if _port_open(target.grpc_addr):
            raise
        named = f"switch {target.name} at {target.grpc_addr}" if target.name else target.grpc_addr
        origin = f" (from {target.source})" if target.source else ""
        raise ControllerError(
            f"nothing answers P4Runtime at {named}{origin} within {args.wait:g} s: is the network up? "
            "Start it with `make run` (in another terminal), or choose a running switch with "
            "--switch NAME or --grpc-addr HOST:PORT") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m p4reduce.controller", description="p4reduce controller")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("serve", help="run the controller and the job API")
    s.add_argument("--topology", help="topology file (JSON/YAML); without it, one switch at --grpc-addr")
    _switch_args(s, wait=30.0)
    s.add_argument("--p4info", default=None, help="P4Info text file (default build/p4reduce.p4info.txtpb)")
    s.add_argument("--bmv2-json", default=None, help="BMv2 JSON (default build/p4reduce.json)")
    s.add_argument("--election-id", default="10", help="arbitration election id: N or HIGH,LOW (default 10)")
    s.add_argument("--api-addr", type=_addr, default=f"127.0.0.1:{DEFAULT_PORT}",
                   help="job API listen address (default loopback only; 0.0.0.0:PORT for every interface)")
    s.add_argument("--admin-credential-file", default=None,
                   help="the job API's admin credential: read from this file (mode 0600, yours), or created "
                        "there; without it a fresh credential is printed at start")
    s.add_argument("--default-workers", type=int, default=None, help="workers of a job created by a join")
    s.add_argument("--default-mode", choices=["dense", "sparse"], default="dense")
    s.add_argument("--default-slots", type=int, default=None,
                   help="slots of a job when not asked (default: 64 KiB of lanes in flight per worker, "
                        "at most 64: 64 slots at 256 lanes, 16 at 1024)")
    s.add_argument("--lease", type=float, default=10.0, help="seconds of silence before a job is reclaimed")
    s.add_argument("--join-timeout", type=float, default=120.0, help="seconds a job may wait with no worker")
    s.add_argument("--state-file", default="run/controller-state.json",
                   help="job names by id, for targets that drop entry metadata ('' to disable)")
    s.add_argument("--standby", action="store_true",
                   help="start as a backup: take over (resuming the jobs) when the primary controller stops")
    s.add_argument("--no-switch", action="store_true",
                   help="job API bookkeeping only, no switch (for testing worker agents)")
    s.add_argument("--slots", type=int, default=None, help="slot pool size with --no-switch")

    add_topology_parser(sub)
    add_create_job_parser(sub)

    sh = sub.add_parser("shell", help="interactive P4Runtime shell with p4reduce commands")
    _target_args(sh)
    sh.add_argument("--election-id", default="0,1", help="shell's election id (HIGH,LOW; lower than the "
                                                          "controller's so it stays a backup)")
    sh.add_argument("--api-addr", type=_addr, default=f"127.0.0.1:{DEFAULT_PORT}",
                    help="controller job API, for the jobs and their slots as the controller allocated them "
                         "(default %(default)s, `make run`'s; the switch's tables alone when nothing answers)")

    j = sub.add_parser("jobs", help="list jobs")
    _target_args(j)
    j.add_argument("--api-addr", type=_addr, default=None, help="ask the running controller instead")
    j.add_argument("--json", action="store_true")

    sl = sub.add_parser("slots", help="slot map")
    _target_args(sl)
    sl.add_argument("--json", action="store_true")

    r = sub.add_parser("registers", help="list the registers, or read one")
    _target_args(r)
    r.add_argument("name", nargs="?", help="register name, full or a unique suffix (default: list them all)")
    r.add_argument("--index", type=int, default=None)
    r.add_argument("--range", type=_range, default=None, metavar="START:STOP")
    r.add_argument("--slot", type=int, default=None, help="decode a whole slot (all lane registers)")
    r.add_argument("--job", default=None, help="with --slot: slot number relative to this job")
    r.add_argument("--ver", type=int, choices=[0, 1], default=None, help="with --slot: one shadow copy")
    r.add_argument("--watch", type=float, default=None, metavar="SECONDS",
                   help="print again every SECONDS (Ctrl-C stops), to watch a slot change")
    r.add_argument("--count", type=int, default=None, help="with --watch: stop after COUNT prints")
    r.add_argument("--json", action="store_true")

    c = sub.add_parser("counters", help="read counters (drops by reason)")
    _target_args(c)
    c.add_argument("name", nargs="?")
    c.add_argument("--json", action="store_true")

    e = sub.add_parser("entries", help="table entries")
    _target_args(e)
    e.add_argument("table", nargs="?")
    e.add_argument("--json", action="store_true")

    g = sub.add_parser("groups", help="multicast groups")
    _target_args(g)
    g.add_argument("--json", action="store_true")
    return parser


def _inspector(args: argparse.Namespace, registers: bool = False) -> SwitchInspector:
    return open_target(args, registers)[1]


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):  # --watch --json: one object per line (JSON Lines)
        print(json.dumps(data) if getattr(args, "watch", None) else json.dumps(data, indent=1))
    else:
        print(text)


def cmd_jobs(args: argparse.Namespace) -> None:
    if args.api_addr:
        try:
            jobs = JobApiClient(args.api_addr).jobs()
        except JobApiError as e:
            if e.code == "unreachable":
                raise ControllerError(f"no controller answers at --api-addr {args.api_addr}: is the network "
                                      "up? Start it with `make run`") from None
            raise ControllerError(e.message) from None
    else:
        jobs = _inspector(args).jobs()
    _emit(args, jobs, report.jobs_text(jobs))


def cmd_slots(args: argparse.Namespace) -> None:
    data = _inspector(args).slot_map()
    _emit(args, data, report.slot_map_text(data))


def cmd_registers(args: argparse.Namespace) -> None:
    if args.watch is not None and args.watch <= 0:
        raise ValueError(f"--watch: must be a positive number of seconds, got {args.watch:g}")
    if args.slot is None and not args.name:
        listing = _inspector(args).register_list()
        _emit(args, listing, report.register_list_text(listing))
        return
    insp = _inspector(args, registers=True)
    start, stop = args.range if args.range else (None, None)
    printed = 0
    while True:
        if args.slot is not None:
            data = insp.slot(args.slot, args.ver, args.job)
            text = report.slot_text(data)
        else:
            data = insp.register(args.name, args.index, start, stop)
            text = report.register_text(data)
        if args.watch is not None and not args.json:
            text = f"--- {time.strftime('%H:%M:%S')} ---\n{text}"
        _emit(args, data, text)
        printed += 1
        if args.watch is None or (args.count is not None and printed >= args.count):
            return
        sys.stdout.flush()
        try:
            time.sleep(args.watch)
        except KeyboardInterrupt:
            return


def cmd_counters(args: argparse.Namespace) -> None:
    data = _inspector(args).counters(args.name)
    _emit(args, data, report.counters_text(data))


def cmd_entries(args: argparse.Namespace) -> None:
    data = _inspector(args).entries(args.table)
    printable = [dict(e, match={k: list(v) if isinstance(v, tuple) else v for k, v in e["match"].items()})
                 for e in data]
    _emit(args, printable, report.entries_text(data))


def cmd_groups(args: argparse.Namespace) -> None:
    data = _inspector(args).multicast_groups()
    _emit(args, data, report.groups_text(data))


def _admin_credential(args: argparse.Namespace, log: logging.Logger) -> str:
    """The admin credential: from --admin-credential-file (created there if missing), else a fresh one
    printed on stderr (never into a log file others may read)."""
    if args.admin_credential_file:
        credential, created = load_or_create_credential_file(args.admin_credential_file)
        log.info("job API admin credential %s %s (mode 0600)", "written to" if created else "read from",
                 args.admin_credential_file)
        return credential
    credential = new_credential()
    print(f"job API admin credential (this run only): {credential}", file=sys.stderr, flush=True)
    return credential


def cmd_serve(args: argparse.Namespace) -> None:
    log = logging.getLogger("p4reduce.controller")
    host, port = args.api_addr.rsplit(":", 1)
    admin_credential = _admin_credential(args, log)
    tp = topo.load(args.topology) if args.topology else topo.single_switch(args.grpc_addr, args.device_id,
                                                                          args.thrift_port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    if args.no_switch:
        mgr = JobManager(SlotPool(args.slots or defaults.num_slots()), None, tp,
                         default_workers=args.default_workers, default_mode=args.default_mode,
                         default_slots=args.default_slots, default_lease_s=args.lease,
                         join_timeout_s=args.join_timeout, log=log.info)
        reaper = LeaseReaper(mgr).start()
        server = JobApiServer(JobApi(mgr, admin_credential=admin_credential), (host, int(port))).start()
        log.info("job API (no switch) listening on http://%s/v1", server.address)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
        server.stop()
        reaper.stop()
        return
    p4info = args.p4info or p4info_for(BUILD_JSON)
    bmv2 = args.bmv2_json or BUILD_JSON
    if args.p4info is None and args.bmv2_json is None and not pathlib.Path(bmv2).is_file():
        p4info = bmv2 = None  # use whatever the switch runs
        log.info("no %s: using the program the switch already runs", BUILD_JSON)
    tls = tls_client(args, _description(args.topology))
    if tls is not None:
        log.info("P4Runtime over TLS (CA %s%s)", tls.ca, f", client certificate {tls.cert}" if tls.cert else "")
    ctl = Controller(tp, p4info, bmv2, election_id=args.election_id, connect_timeout=args.wait, tls=tls,
                     api_address=(host, int(port)), state_file=args.state_file or None,
                     default_workers=args.default_workers, default_mode=args.default_mode,
                     default_slots=args.default_slots, lease_s=args.lease, join_timeout_s=args.join_timeout,
                     report=log.info, admin_credential=admin_credential)
    try:
        ctl.start(standby=args.standby, stop_event=stop)
        if ctl.resumed:
            log.info("resumed %d job(s) from the switch: %s", len(ctl.resumed), ", ".join(ctl.resumed))
        stop.wait()
        log.info("stopping; jobs stay on the switch and a restarted controller resumes them")
    except KeyboardInterrupt:
        pass
    finally:
        ctl.stop()


def cmd_shell(args: argparse.Namespace) -> None:
    target, inspector = open_target(args)
    if args.api_addr:
        try:
            JobApiClient(args.api_addr, timeout=2.0).health()
        except JobApiError:
            print(f"note: no controller answers at {args.api_addr}: jobs() and slots() show the switch's tables only")
            args.api_addr = None
    run_shell(args, target, inspector)


COMMANDS = {"serve": cmd_serve, "shell": cmd_shell, "jobs": cmd_jobs, "slots": cmd_slots,
            "registers": cmd_registers, "counters": cmd_counters, "entries": cmd_entries, "groups": cmd_groups}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    if args.command == "topology":
        return cmd_topology(args)
    if args.command == "create-job":
        return cmd_create_job(args)
    try:
        COMMANDS[args.command](args)
    except (ControllerError, ValueError, OSError) as e:
        print(f"error: {getattr(e, 'message', None) or e}", file=sys.stderr)
        return 1
    return 0
