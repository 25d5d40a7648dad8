"""Entry point of ``p4sim-compile`` (= ``python -m p4reduce.p4sim.compile``); see p4sim.compiler.cli."""
import sys

from p4reduce.p4sim.compiler.cli import main as _main


def main(argv: list[str] | None = None) -> int:
    return _main(argv)


if __name__ == "__main__":
    sys.exit(main())
