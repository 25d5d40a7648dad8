"""`python -m p4reduce.mininet_topos run` (`make run`): the topology, the controller, a default job, the CLI."""
import argparse
import signal
import sys

from mininet.cli import CLI

from p4reduce.mininet_topos.links import from_args
from p4reduce.mininet_topos.session import Session

BANNER = """\
p4reduce is up: {topo} topology, {workers} workers, switch(es) {switches}
  topology description   {description}
  controller job API     http://{api}/v1   (also at this address inside every host)
  default job            {job!r}: {workers} workers, {mode} (the relay gives its token to every host)
  job API admin token    {admin} (mode 0600; opens every job)
Run the workers from this CLI, e.g.:
  h1 .venv/bin/python -m p4reduce.worker allreduce --controller {api} --job {job} --check &
  ... the same on h2 .. h{workers}; each prints a JSON report when the job's workers are all in.
Inspect the switch from another terminal:  make shell
Leave with `exit` (or Ctrl-D); `make stop` cleans up if this session is killed.
"""

BARE_BANNER = """\
p4reduce topology is up (no controller): {topo}, {workers} workers, switch(es) {switches}
  topology description   {description}
The switches run with no P4 program: push one over P4Runtime (e.g. p4runtime-shell).
Leave with `exit` (or Ctrl-D); `make stop` cleans up if this session is killed.
"""


def main(args: argparse.Namespace) -> int:
    session = Session(topo=args.topo, workers=args.workers, link=from_args(args),
                      program=None if args.no_controller else args.program, target=args.target,
                      api_port=args.api_port, grpc_base=args.grpc_port, thrift_base=args.thrift_port,
                      controller=not args.no_controller, run_dir=args.run_dir, log_dir=args.log_dir,
                      pcap_dir=args.pcap_dir, prefix=args.prefix, switch_log_level=args.switch_log_level)
    with session:
        if args.no_controller:
            print(BARE_BANNER.format(topo=args.topo, workers=args.workers, description=session.description_path,
                                     switches=", ".join(f"{s.name}@{s.grpc_addr}" for s in session.network.switches)))
        else:
            session.create_job(args.job, args.workers, args.mode)
            print(BANNER.format(topo=args.topo, workers=args.workers,
                            switches=", ".join(f"{s.name}@{s.grpc_addr}" for s in session.network.switches),
                            description=session.description_path, api=session.api_addr, job=args.job,
                            mode=args.mode, admin=session.admin_token_path))
        sys.stdout.flush()
        if sys.stdin.isatty() or args.cli:
            CLI(session.network.net)
        else:
            print("stdin is not a terminal: waiting for SIGTERM (`make stop`)", flush=True)
            signal.pause()
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", default="default", help="name of the job created at start (default %(default)s)")
    parser.add_argument("--mode", default="dense", choices=["dense", "sparse"],
                        help="aggregation mode of the default job (default %(default)s)")
    parser.add_argument("--no-controller", action="store_true",
                        help="only the topology: switches without a program, no controller, no job")
    parser.add_argument("--cli", action="store_true", help="start the Mininet CLI even without a terminal")
