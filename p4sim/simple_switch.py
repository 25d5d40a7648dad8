"""p4sim-switch: a stand-in for simple_switch_grpc with the same command line.

    p4sim-switch [-i PORT@IFACE]... [--device-id N] [--log-console] [--log-file F] [-L LEVEL]
                 [--pcap [DIR]] [--thrift-port N] [--backend native|python] (--no-p4 | PROGRAM.json)
                 [--thrift-ip ADDR]
                 [-- --grpc-server-addr HOST:PORT --cpu-port N --drop-port N
                     [--grpc-server-ssl --grpc-server-cert F --grpc-server-key F
                      [--grpc-server-cacert F [--grpc-server-with-client-auth]]]
                     [--arbitration-timeout SECONDS]]

Where it listens: unlike simple_switch_grpc, whose gRPC server binds 0.0.0.0:9559 and whose
Thrift server binds every interface, p4sim-switch listens on loopback unless told otherwise:
gRPC on 127.0.0.1:9559 (--grpc-server-addr 0.0.0.0:9559 for every interface), Thrift on
127.0.0.1 (--thrift-ip 0.0.0.0). Anyone who reaches either port can read and write the switch,
so open them wider only behind TLS (P4Runtime) or a firewall (Thrift has no authentication).

TLS takes simple_switch_grpc's options (p4sim/runtime/tls.py): with --grpc-server-ssl and a
certificate and key the P4Runtime server speaks TLS only; with --grpc-server-cacert and
--grpc-server-with-client-auth a client must present a certificate signed by that CA, or it can
neither open a stream nor read nor write. Certificate files without --grpc-server-ssl are
ignored with a warning, as simple_switch_grpc does.

Streams: a StreamChannel that sends no accepted MasterArbitrationUpdate within
--arbitration-timeout seconds (default 5) is closed with DEADLINE_EXCEEDED, and streams that have
not arbitrated give their place to new ones when the per-host (8) or total (16) limit is reached,
so idle streams cannot lock out a client that arbitrates.

--backend: native (the default when a C compiler is installed) compiles each program to C and
moves packets in a C thread (p4sim/ports/native_packet_loop.py); python runs the Python engine and the
Python packet loop.  Tracing works on both (the native trace is generated C too).

Every pipeline load (the JSON at startup, after "Server listening", or a
SetForwardingPipelineConfig) prints one line on stdout, "Pipeline loaded: packets run on the
native backend (generated C)" or "... on the Python engine" with the reason when the native
backend gave the program up.

Startup order: load the JSON (if any), open the ports (errors name the -i binding), listen on
gRPC (then print "Server listening on ADDR") and on Thrift, then move packets. SIGINT/SIGTERM
stop the packet loop (sockets closed, pcaps flushed), Thrift and the gRPC server; exit status 0.

Logging as BMv2: --log-console (stdout) and/or --log-file F, level -L (default trace when
logging, which traces every packet: parser states, tables, actions, drops, egress ports).
--pcap DIR writes IFACE_in.pcap / IFACE_out.pcap. Thrift serves the register/counter subset of
BMv2's runtime API for simple_switch_CLI (p4sim/runtime/thrift_service.py).
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .switch_logging import LEVELS, TraceSink, setup_logging, trace_streams

if TYPE_CHECKING:
    from .runtime.server import P4RuntimeServer

MAX_PORT = 511


class UsageError(Exception):
    """A bad command line; the message names the argument."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _port_binding(text):
    number, sep, interface = text.partition("@")
    if not sep or not interface:
        raise argparse.ArgumentTypeError(f"'{text}' is not PORT@IFACE (e.g. 1@veth1)")
    try:
        port = int(number, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': port '{number}' is not a number") from None
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"'{text}': port {port} is outside 0..{MAX_PORT}")
    return port, interface


def _port_number(text):
    try:
        port = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a port number") from None
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"port {port} is outside 0..{MAX_PORT}")
    return port


def _non_negative(text):
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def _seconds(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"{text} is outside 0..3600 seconds")
    return value


def _address(text):
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"'{text}' is not HOST:PORT")
    return text


def build_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    main = _Parser(prog="p4sim-switch", description="BMv2-compatible v1model switch with a "
                   "P4Runtime server (simple_switch_grpc stand-in).",
                   epilog="Target options go after '--': --grpc-server-addr HOST:PORT (default "
                          "127.0.0.1:9559: loopback only, where simple_switch_grpc binds 0.0.0.0:9559), "
                          "--cpu-port N, --drop-port N, --grpc-server-ssl, --grpc-server-cert FILE, "
                          "--grpc-server-key FILE, --grpc-server-cacert FILE, "
                          "--grpc-server-with-client-auth (simple_switch_grpc's TLS options), "
                          "--arbitration-timeout SECONDS (default 5: a stream that has not "
                          "arbitrated by then is closed), --role NAME=OBJECTS.")
    main.add_argument("-i", "--interface", action="append", type=_port_binding, default=[],
                      metavar="PORT@IFACE", help="attach a Linux interface as a switch port")
    main.add_argument("--device-id", type=_non_negative, default=0)
    main.add_argument("--log-console", action="store_true", help="per-packet trace on stdout")
    main.add_argument("--log-file", metavar="FILE", help="log (and per-packet trace) to FILE")
    main.add_argument("--log-flush", action="store_true", help="accepted (logs are flushed at least every 0.2 s)")
    main.add_argument("-L", "--log-level", choices=sorted(LEVELS), default=None)
    main.add_argument("--pcap", nargs="?", const=".", metavar="DIR",
                      help="write IFACE_in.pcap / IFACE_out.pcap per port into DIR (default .)")
    main.add_argument("--thrift-port", type=_non_negative, default=None,
                      help="BMv2 Thrift runtime API port for simple_switch_CLI (registers and "
                           "counters only; default 9090, skipped with a warning if taken)")
    main.add_argument("--thrift-ip", default="127.0.0.1", metavar="ADDR",
                      help="address the Thrift server binds (default 127.0.0.1, loopback only; "
                           "BMv2 binds every interface: 0.0.0.0 does the same)")
    main.add_argument("--backend", choices=("native", "python"), default=None,
                      help="packet path: native (generated C; the default when gcc is installed) or "
                           "python (the Python engine)")
    main.add_argument("--no-p4", action="store_true", help="start without a program; push one "
                      "with SetForwardingPipelineConfig")
    main.add_argument("--restore-state", help=argparse.SUPPRESS)
    main.add_argument("--notifications-addr", help=argparse.SUPPRESS)
    main.add_argument("--dump-packet-data", type=_non_negative, help=argparse.SUPPRESS)
    main.add_argument("program", nargs="?", metavar="PROGRAM.json")

    target = _Parser(prog="p4sim-switch ... --", add_help=False)
    target.add_argument("--grpc-server-addr", type=_address, default="127.0.0.1:9559")
    target.add_argument("--cpu-port", type=_port_number, default=None)
    target.add_argument("--drop-port", type=_port_number, default=511)
    target.add_argument("--role", action="append", default=[], metavar="NAME=OBJECT[,OBJECT...]",
                        help="a P4Runtime role besides the default one, confined to these P4Info "
                             "objects (and 'multicast', 'clone'); other roles are refused")
    target.add_argument("--grpc-server-ssl", action="store_true")
    target.add_argument("--grpc-server-cacert", metavar="FILE")
    target.add_argument("--grpc-server-cert", metavar="FILE")
    target.add_argument("--grpc-server-key", metavar="FILE")
    target.add_argument("--grpc-server-with-client-auth", action="store_true")
    target.add_argument("--arbitration-timeout", type=_seconds, default=None, metavar="SECONDS")
    target.add_argument("--dp-grpc-server-addr", help=argparse.SUPPRESS)
    target.add_argument("--load-modules", help=argparse.SUPPRESS)
    return main, target


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, argparse.Namespace]:
    """(main options, target options); UsageError naming the argument on bad input."""
    argv = list(argv)
    if "--" in argv:
        split = argv.index("--")
        main_argv, target_argv = argv[:split], argv[split + 1:]
    else:
        main_argv, target_argv = argv, []
    main, target = build_parsers()
    options = main.parse_args(main_argv)
    target_options = target.parse_args(target_argv)
    if (options.pcap and options.program is None and options.pcap.endswith(".json")
            and os.path.isfile(options.pcap)):
        options.program, options.pcap = options.pcap, "."  # "--pcap prog.json": bare --pcap
    if options.no_p4 and options.program:
        raise UsageError(f"give either --no-p4 or a JSON program, not both ('{options.program}')")
    if not options.no_p4 and not options.program:
        raise UsageError("a JSON program (positional) or --no-p4 is required")
    if options.program and not os.path.isfile(options.program):
        raise UsageError(f"JSON program '{options.program}' does not exist")
    ports: dict[int, str] = {}          # port -> interface
    interfaces: dict[str, int] = {}     # interface -> port
    for port, interface in options.interface:
        if port in ports:
            raise UsageError(f"-i {port}@{interface}: port {port} is already bound to "
                             f"'{ports[port]}'")
        if interface in interfaces:
            raise UsageError(f"-i {port}@{interface}: interface '{interface}' is already port "
                             f"{interfaces[interface]}")
        if port == target_options.drop_port:
            raise UsageError(f"-i {port}@{interface}: port {port} is the drop port")
        if target_options.cpu_port is not None and port == target_options.cpu_port:
            raise UsageError(f"-i {port}@{interface}: port {port} is the CPU port")
        ports[port], interfaces[interface] = interface, port
    options.ports = ports
    from p4sim.runtime.roles import RoleConfigError, Roles, parse_role
    try:
        target_options.roles = Roles(parse_role(text) for text in target_options.role)
    except RoleConfigError as exc:
        raise UsageError(str(exc)) from None
    from p4sim.runtime.tls import TlsConfigError, tls_options
    try:
        target_options.tls, target_options.tls_warnings = tls_options(
            target_options.grpc_server_ssl, target_options.grpc_server_cert, target_options.grpc_server_key,
            target_options.grpc_server_cacert, target_options.grpc_server_with_client_auth)
    except TlsConfigError as exc:
        raise UsageError(str(exc)) from None
    return options, target_options


def _start_thrift(device, port, log, host="127.0.0.1"):
    """The Thrift runtime API: fatal if the port was asked for and is taken, else a warning."""
    from p4sim.runtime import ServerError
    from p4sim.runtime.thrift_service import ThriftServer
    explicit = port is not None
    thrift = ThriftServer(device, port if explicit else 9090, host=host)
    try:
        thrift.start()
    except OSError as exc:
        thrift.stop()
        where = f"{host}:{port if explicit else 9090}"
        if explicit:
            raise ServerError(f"--thrift-port {port}: cannot listen on {where} ({exc})") from None
        log.warning("cannot listen on %s (taken, or --thrift-ip is wrong); no Thrift runtime API (%s)",
                    where, exc)
        return None
    return thrift


def _packet_loop(backend, options, target, log):
    """The port loop for the backend: in C for native (if its runtime builds), else in Python."""
    from p4sim.ports import PacketLoop
    if backend == "native":
        from p4sim.engine.native import NativeBuildError
        from p4sim.ports.native_packet_loop import NativePacketLoop
        try:
            return NativePacketLoop(options.ports, options.pcap, target.cpu_port)
        except NativeBuildError as exc:
            log.warning("native port loop unavailable (%s): using the Python packet loop", exc)
    return PacketLoop(options.ports, options.pcap)


def run(options: argparse.Namespace, target: argparse.Namespace,
        ready: Callable[[P4RuntimeServer], object] | None = None,
        stop_event: threading.Event | None = None) -> int:
    """Run the switch until `stop_event` is set (SIGINT/SIGTERM set it in main())."""
    from p4sim.engine.native import default_backend, engine_label
    from p4sim.runtime import P4RuntimeServer

    tracing = setup_logging(options)
    log = logging.getLogger("p4sim.simple_switch")
    stop_event = stop_event or threading.Event()
    backend = options.backend or default_backend()
    log.info("packets run on the %s", "native backend (generated C)" if backend == "native" else "Python engine")
    for warning in getattr(target, "tls_warnings", ()):
        log.warning("%s", warning)
        print(f"p4sim-switch: warning: {warning}", file=sys.stderr, flush=True)
    timeout = getattr(target, "arbitration_timeout", None)
    server = P4RuntimeServer(target.grpc_server_addr, options.device_id, target.cpu_port,
                             target.drop_port, roles=getattr(target, "roles", None), backend=backend,
                             tls=getattr(target, "tls", None),
                             **({"arbitration_timeout": timeout} if timeout is not None else {}))

    announced: list[str] = []  # the startup program's line waits for "Server listening" (stdout's first line)

    def announce(engine):
        if engine is not None:
            label = engine_label(engine)
            log.info("pipeline loaded: packets run on the %s", label)
            if announced:
                print(f"Pipeline loaded: packets run on the {label}", flush=True)
            else:
                announced.append(label)
    server.device.engine_listeners.append(announce)
    trace = TraceSink(trace_streams()) if tracing else None
    if trace is not None:
        def attach_trace(engine):
            if engine is not None:
                engine.trace = trace
        server.device.engine_listeners.append(attach_trace)
    if options.program:
        try:
            server.device.load_json(options.program)
        except Exception as exc:
            raise UsageError(f"JSON program '{options.program}' cannot be loaded: {exc}") from None
    loop = _packet_loop(backend, options, target, log)  # opens the sockets: fails early if bad
    thrift = None
    try:
        server.start()
        thrift = _start_thrift(server.device, options.thrift_port, log, getattr(options, "thrift_ip", "127.0.0.1"))
        print(f"Server listening on {target.grpc_server_addr}", flush=True)
        for number, interface in sorted(options.ports.items()):
            print(f"Adding interface {interface} as port {number}", flush=True)
        if announced:  # the program given on the command line
            print(f"Pipeline loaded: packets run on the {announced[0]}", flush=True)
        announced.append("started")
        loop.inject = server.packet_path.inject
        server.packet_path.port_sink = loop.send
        attach = getattr(loop, "attach", None)
        if attach is not None:  # the native loop: CPU frames and trace come back through it
            loop.packet_in = server.packet_path.to_controller
            loop.trace = trace
            server.device.engine_listeners.append(attach)
            attach(server.device.engine)
        loop.start()
        if ready is not None:
            ready(server)
        stop_event.wait()
        log.info("shutting down")
    finally:
        loop.stop()
        if thrift is not None:
            thrift.stop()
        server.stop()
        if trace is not None:
            trace.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        options, target = parse_args(argv)
    except UsageError as exc:
        print(f"p4sim-switch: error: {exc}", file=sys.stderr)
        print("usage: p4sim-switch [-i PORT@IFACE]... [--device-id N] [--log-console] "
              "[--log-file F] [-L LEVEL] [--pcap [DIR]] [--thrift-port N] [--backend native|python] "
              "[--thrift-ip ADDR] (--no-p4 | PROGRAM.json) [-- --grpc-server-addr HOST:PORT --cpu-port N "
              "--drop-port N --grpc-server-ssl --grpc-server-cert F --grpc-server-key F "
              "--grpc-server-cacert F --grpc-server-with-client-auth --arbitration-timeout S]", file=sys.stderr)
        return 2
    stop_event = threading.Event()

    def on_signal(signum, _frame):
        stop_event.set()
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        return run(options, target, stop_event=stop_event)
    except UsageError as exc:
        print(f"p4sim-switch: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # ports and server errors carry their own clear messages
        from p4sim.ports import PortError
        from p4sim.runtime import ServerError
        if isinstance(exc, (PortError, ServerError)):
            print(f"p4sim-switch: error: {exc}", file=sys.stderr)
            return 1
        if isinstance(exc, OSError):  # e.g. --log-file or --pcap directory not writable
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            print(f"p4sim-switch: error: {exc.strerror or exc}{where}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
