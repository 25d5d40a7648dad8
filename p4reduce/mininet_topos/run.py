"""`python -m p4reduce.mininet_topos run` (`make run`): the topology, the controller, a default job, the CLI."""
import argparse
import os
import signal
import sys

from mininet.cli import CLI
from mininet.log import setLogLevel

from p4reduce.mininet_topos import cli_args
from p4reduce.mininet_topos.runcli import RunCLI
from p4reduce.mininet_topos.session import Session

BANNER = """\
p4reduce is up: {topo}, {workers} workers, switch(es) {switches}
  topology description       {description}
  controller job API         http://{api}/v1   (also at this address inside every host)
  default job                {job!r}: {workers} workers, {mode} (the relay gives its credential to every host)
  job API admin credential   {admin} (mode 0600; opens every job)
In this CLI:
  workers                 run the worker agent on h1 .. h{workers} at once (job {job!r}: --count 4 --size
                          100000 --check); each host's progress and JSON report, then a summary
  workers {job} --count 10 --size 1000000     the same with other options (added to those)
  job NAME [N] [MODE] [--slots S] [--lease S]   a new job (or {job!r} again: a job ends when its
                          workers leave; `workers NAME` re-creates it as it was)   jobs   the jobs
  example ddp_torch       an example of examples/ on every host: PyTorch DDP through the switch
  h1 ping -c1 h2          any host command, as in Mininet; one worker by hand:
  h1 p4reduce-worker allreduce --controller {api} --job {job} --check
Inspect a switch from another terminal:  make shell [SWITCH=name]
Leave with `exit` (or Ctrl-D); `make stop` cleans up if this session is killed.
"""

BARE_BANNER = """\
p4reduce topology is up (no controller): {topo}, {workers} workers, switch(es) {switches}
  topology description   {description}
The switches run with no P4 program: push one over P4Runtime (e.g. p4runtime-shell).
Leave with `exit` (or Ctrl-D); `make stop` cleans up if this session is killed.
"""


def _venv_on_path() -> None:
    """Hosts' shells inherit this process's environment: put this Python's scripts directory
    (p4reduce-worker, p4reduce-controller, ...) first on their PATH."""
    scripts = os.path.dirname(sys.executable)
    path = os.environ.get("PATH", "")
    if scripts not in path.split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + path


def main(args: argparse.Namespace) -> int:
    _venv_on_path()
    session = Session(topo=args.topo, workers=args.workers, link=args.link, uplink=args.uplink,
                      topo_options=args.topo_options,
                      program=None if args.no_controller else args.program, target=args.target,
                      api_port=args.api_port, grpc_base=args.grpc_port, thrift_base=args.thrift_port,
                      controller=not args.no_controller, run_dir=args.run_dir, log_dir=args.log_dir,
                      pcap_dir=cli_args.pcap_dir(args), prefix=args.prefix, switch_log_level=args.switch_log_level,
                      controller_args=["--join-timeout", f"{args.join_timeout:g}"], tls=not args.no_tls,
                      supervise=not args.no_supervise, say=_say)
    session.join_timeout_s = args.join_timeout
    with session:
        if args.no_controller:
            print(BARE_BANNER.format(topo=cli_args.describe_topology(args), workers=args.workers,
                                     description=session.description_path,
                                     switches=", ".join(f"{s.name}@{s.grpc_addr}" for s in session.network.switches)))
        else:
            session.create_job(args.job, args.workers, args.mode)
            session.default_job = args.job
            print(BANNER.format(topo=cli_args.describe_topology(args), workers=args.workers,
                            switches=", ".join(f"{s.label()} @{s.grpc_addr}" for s in session.network.switches),
                            description=session.description_path, api=session.api_addr, job=args.job,
                            mode=args.mode, admin=session.admin_credential_path))
        sys.stdout.flush()
        if sys.stdin.isatty() or args.cli:
            # Mininet's CLI prints host output at its `output` level (setup ran at `warning`)
            setLogLevel(os.environ.get("P4REDUCE_MININET_LOG", "output"))
            if args.no_controller:
                CLI(session.network.net)
            else:
                RunCLI(session, args.mode)
        else:
            print("stdin is not a terminal: waiting for SIGTERM (`make stop`)", flush=True)
            signal.pause()
    return 0


def _say(text: str) -> None:
    """A supervisor's event (supervisor.py), on its own line even while the CLI's prompt waits."""
    sys.stdout.write(f"\n{text}\n")
    sys.stdout.flush()


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 1 <= v <= 86400:
        raise argparse.ArgumentTypeError(f"must be in [1, 86400] seconds, got {text}")
    return v


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", default="default", help="name of the job created at start (default %(default)s)")
    parser.add_argument("--mode", default="dense", choices=["dense", "sparse"],
                        help="aggregation mode of the default job (default %(default)s)")
    parser.add_argument("--no-controller", action="store_true",
                        help="only the topology: switches without a program, no controller, no job")
    parser.add_argument("--join-timeout", type=_seconds, default=120.0, metavar="SECONDS",
                        help="a job no worker has joined is reclaimed after this long (default %(default)g)")
    parser.add_argument("--no-supervise", action="store_true",
                        help="do not restart a switch or the controller that dies (by default each is "
                             "restarted, at most 5 times within 60 s, and the CLI says so)")
    parser.add_argument("--cli", action="store_true", help="start the Mininet CLI even without a terminal")
