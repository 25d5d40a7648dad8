"""Command-line options shared by `python -m p4reduce.mininet_topos run` and `demo`, and their
check (`resolve`): a bad value is a ValueError naming the option, which the entry point prints as
one line (exit status 1)."""
import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from p4reduce.mininet_topos import links
from p4reduce.mininet_topos.topologies import SHAPE_OPTIONS, topology_class
from p4reduce.protocol.job_api import DEFAULT_PORT


def add_network_arguments(parser: argparse.ArgumentParser, default_topo: str = "star") -> None:
    parser.add_argument("--topo", default=default_topo, choices=["star", "two-tier", "tree"],
                        help="star: one switch; two-tier: leaves under a spine; tree: leaves under "
                             "aggregation switches under a root (default %(default)s)")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker hosts (default 4; tree: fanout**depth), split evenly over the leaves "
                             "in host order")
    # read as text and checked by resolve() (one line naming the option), as the uplink options
    parser.add_argument("--leaves", default=None, metavar="L",
                        help="two-tier: leaf switches under the spine, 2..16 (default 2)")
    parser.add_argument("--depth", default=None, metavar="D",
                        help="tree: levels of switches, 2..4 (default 3: root, aggregation, leaves)")
    parser.add_argument("--fanout", default=None, metavar="F",
                        help="tree: children of each switch above the leaves, 2..8 (default 2)")
    parser.add_argument("--program", default="build/p4reduce.json",
                        help="BMv2 JSON pushed by the controller; its P4Info sits beside it "
                             "(default %(default)s, written by `make build`)")
    parser.add_argument("--target", default="auto",
                        help="switch target: auto (simple_switch_grpc if on PATH, else p4sim-switch), "
                             "bmv2, p4sim, or a path (default %(default)s)")
    parser.add_argument("--api-port", type=int, default=DEFAULT_PORT,
                        help="controller job API port (default %(default)s)")
    parser.add_argument("--grpc-port", type=int, default=9559,
                        help="P4Runtime port of the first switch; the others follow (default %(default)s)")
    parser.add_argument("--thrift-port", type=int, default=9090,
                        help="Thrift port of the first switch; the others follow (default %(default)s)")
    parser.add_argument("--run-dir", default="run",
                        help="where the topology description and the PID record go (default %(default)s)")
    parser.add_argument("--log-dir", default="logs", help="switch and controller logs (default %(default)s)")
    parser.add_argument("--pcap", action="store_true",
                        help="capture every switch port into per-port pcaps (default off: a busy run writes "
                             "hundreds of MB a minute; `make run PCAP=1`)")
    parser.add_argument("--pcap-dir", default=None, metavar="DIR",
                        help="where the captures go; implies --pcap (default pcaps/ when --pcap, else none)")
    parser.add_argument("--switch-log-level", default="info",
                        choices=["trace", "debug", "info", "warn", "error", "off"],
                        help="switch log level; trace logs every packet (slow, large) (default %(default)s)")
    parser.add_argument("--no-tls", action="store_true",
                        help="P4Runtime in clear (default: TLS with client certificates made for this run in "
                             "RUN_DIR/tls, so that only the controller can reach the switches)")
    parser.add_argument("--prefix", default="", help=argparse.SUPPRESS)   # node-name prefix (tests)
    links.add_arguments(parser)


def pcap_dir(args: argparse.Namespace) -> str | None:
    """The capture directory the options ask for: none unless --pcap or --pcap-dir."""
    if args.pcap_dir:
        return str(args.pcap_dir)
    return "pcaps" if args.pcap else None


def resolve(args: argparse.Namespace) -> None:
    """Check the topology and link options together, before anything starts, and fill in what
    they imply: `args.topo_options` (the topology's shape: leaves, or depth and fanout),
    `args.link` and `args.uplink` (LinkOptions of the worker links and of the switch-to-switch
    links) and `args.workers` (the topology's host count when --workers was not given).
    Raises ValueError (LinkOptionError) naming the option at fault."""
    shape: dict[str, Any] = {}
    for name in ("leaves", "depth", "fanout"):
        value = getattr(args, name, None)
        if value is None:
            continue
        if name not in SHAPE_OPTIONS[args.topo]:
            takers = " and ".join(f"--topo {t}" for t, names in SHAPE_OPTIONS.items() if name in names)
            raise ValueError(f"--{name} {value}: only {takers} takes it, not --topo {args.topo}")
        shape[name] = value
    args.link = links.from_args(args)
    args.uplink = links.uplink_from_args(args)
    if args.topo == "star":
        given = [f"--uplink-{n}" for n in ("bw", "delay", "loss") if getattr(args, f"uplink_{n}", None) is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: the star topology has no switch-to-switch links "
                             "(use --topo two-tier or tree)")
    args.link.tclink_params()           # a delay without netem is refused here, naming the option
    args.uplink.tclink_params()
    topo = topology_class(args.topo)(workers=args.workers, link=args.link, uplink=args.uplink, **shape)
    args.topo_options = {k: int(v) for k, v in shape.items()}
    args.topo_shape = dict(getattr(topo, "shape", {}))     # with the defaults: what the banner says
    args.workers = len(topo.hosts())


def describe_topology(args: argparse.Namespace) -> str:
    """'tree topology (depth 3, fanout 2)' for banners."""
    shape = ", ".join(f"{k} {v}" for k, v in getattr(args, "topo_shape", {}).items())
    return f"{args.topo} topology" + (f" ({shape})" if shape else "")


def run_network_command(command: str, args: argparse.Namespace, body: Callable[[argparse.Namespace], int]) -> int:
    """Run a command that starts a network (`run`, the lab's `demo`): bad options are one line
    naming the option before anything starts; Mininet needs root; our errors are one line."""
    try:
        resolve(args)
    except ValueError as err:
        print(f"{command}: error: {err}", file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        print(f"{command}: Mininet needs root (run as root or with sudo)", file=sys.stderr)
        return 2
    try:
        return body(args)
    except KeyboardInterrupt:
        print(f"{command}: interrupted; everything it started was stopped", file=sys.stderr)
        return 130
    except (RuntimeError, ValueError, OSError) as err:   # our errors carry clear messages
        print(f"{command}: error: {err}", file=sys.stderr)
        return 1
