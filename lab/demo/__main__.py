"""`python -m lab.demo` (`make demo`): the main job, non-interactive: allreduce + training on 4 workers."""
from __future__ import annotations

import argparse
import sys

from lab.demo import session
from p4reduce.mininet_topos import cli_args


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.demo", description=__doc__)
    cli_args.add_network_arguments(p)
    session.add_arguments(p)
    return cli_args.run_network_command("demo", p.parse_args(argv), session.main)


if __name__ == "__main__":
    sys.exit(main())
