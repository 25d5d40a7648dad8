"""`python -m p4reduce.mininet_topos run|stop`: the entry points behind `make run` and `make stop`
(`make demo` is the lab's, `python -m lab.demo`)."""
import argparse
import sys
from pathlib import Path

from p4reduce.mininet_topos import cli_args, run
from p4reduce.mininet_topos.runstate import STATE_FILE, stop_recorded


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m p4reduce.mininet_topos",
                                     description="p4reduce Mininet topologies with a P4 switch")
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="topology + controller + default job, then the Mininet CLI")
    cli_args.add_network_arguments(run_p)
    run.add_arguments(run_p)
    stop_p = sub.add_parser("stop", help="stop what a previous `run` left running (by recorded PIDs)")
    stop_p.add_argument("--run-dir", default="run", help="the run's directory (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "stop":
        stop_recorded(Path(args.run_dir) / STATE_FILE.name)
        return 0
    return cli_args.run_network_command(args.command, args, run.main)

if __name__ == "__main__":
    sys.exit(main())
