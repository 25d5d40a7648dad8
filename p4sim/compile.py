"""Entry point of ``p4sim-compile`` (= ``python -m p4sim.compile``); see p4sim.compiler.cli.

Ctrl-C (SIGINT) at any point, imports included, ends the compile with one line on stderr and exit
status 130 (128 + SIGINT, as a shell reports it), never a traceback: the handler is installed
before the compiler is imported, kills the preprocessor if it runs, and leaves at once (the
compile runs on a thread of its own that nothing else could stop). A SIGINT that the parent
ignores (a job started with `&` by a non-interactive shell, Mininet's hosts) stays ignored.
"""
import os
import signal
import sys
from types import FrameType

INTERRUPTED_EXIT = 130


def _interrupted(signum: int, frame: FrameType | None) -> None:
    try:
        preprocess = sys.modules.get("p4sim.compiler.preprocess")
        if preprocess is not None:
            preprocess.kill_running()
        os.write(2, b"p4sim-compile: interrupted\n")
    finally:
        os._exit(INTERRUPTED_EXIT)


def install_interrupt_handler() -> None:
    """Make SIGINT end the process with one line and status 130 (unless SIGINT is ignored)."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _interrupted)


def main(argv: list[str] | None = None) -> int:
    install_interrupt_handler()
    from p4sim.compiler.cli import main as _main
    return _main(argv)


if __name__ == "__main__":
    install_interrupt_handler()     # as early as `python -m` allows
    sys.exit(main())
