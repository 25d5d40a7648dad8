"""`python -m p4reduce.mininet_topos run|demo|stop`: the entry points behind `make run`, `make demo`, `make stop`."""
import argparse
import os
import sys
from pathlib import Path

from p4reduce.mininet_topos import cli_args, demo, run
from p4reduce.mininet_topos.runstate import STATE_FILE, stop_recorded


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m p4reduce.mininet_topos",
                                     description="p4reduce Mininet topologies with a P4 switch")
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="topology + controller + default job, then the Mininet CLI")
    cli_args.add_network_arguments(run_p)
    run.add_arguments(run_p)
    demo_p = sub.add_parser("demo", help="the main job, non-interactive: allreduce + training on 4 workers")
    cli_args.add_network_arguments(demo_p)
    demo.add_arguments(demo_p)
    stop_p = sub.add_parser("stop", help="stop what a previous `run` left running (by recorded PIDs)")
    stop_p.add_argument("--run-dir", default="run", help="the run's directory (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "stop":
        stop_recorded(Path(args.run_dir) / STATE_FILE.name)
        return 0
    try:
        cli_args.resolve(args)     # bad options: one line naming the option, before anything starts
    except ValueError as err:
        print(f"{args.command}: error: {err}", file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        print(f"{args.command}: Mininet needs root (run as root or with sudo)", file=sys.stderr)
        return 2
    try:
        if args.command == "run":
            return run.main(args)
        return demo.main(args)
    except KeyboardInterrupt:
        print(f"{args.command}: interrupted; everything it started was stopped", file=sys.stderr)
        return 130
    except (RuntimeError, ValueError, OSError) as err:   # our errors carry clear messages
        print(f"{args.command}: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
