"""Command-line options shared by `python -m p4reduce.mininet_topos run` and `demo`."""
import argparse

from p4reduce.mininet_topos import links
from p4reduce.protocol.job_api import DEFAULT_PORT


def add_network_arguments(parser: argparse.ArgumentParser, default_topo: str = "star") -> None:
    parser.add_argument("--topo", default=default_topo, choices=["star", "two-tier"],
                        help="star: one switch; two-tier: two leaves under a spine (default %(default)s)")
    parser.add_argument("--workers", type=int, default=4, help="worker hosts (default %(default)s)")
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
