"""``python -m p4reduce.worker`` (``p4reduce-worker``): run a worker agent from the command line.

    python -m p4reduce.worker allreduce --controller 127.0.0.1:8090 --job default --count 10 --size 100000 --check
    python -m p4reduce.worker allreduce ... --density 0.05            # sparse data: 5% of the blocks non-zero
    python -m p4reduce.worker compressors                                        # list the compressors

Without a command (``python -m p4reduce.worker --controller C --job J ...``) it runs ``allreduce``.

``allreduce`` generates each rank's tensors from (seed, rank, index), so ``--check`` can verify the
switch's result bit-exactly for int32 (within the documented bound for float32) on every worker.
The report is one JSON line on stdout; progress goes to stderr (a bar on a terminal, a status line
every few seconds otherwise). Bad arguments and failures are one line on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

from p4reduce.protocol.job_api import JOB_NAME, JOB_NAME_RULE, JobApiClient

from .agent import Agent
from .checks import AllreduceCheck
from .compressors import COMPRESSORS, make_compressor
from .job import CREDENTIAL_ENV, JobJoinError
from .quantize import QuantizationError
from .reducer import AggregationError
from .streaming import RetryPolicy

PROGRESS_AFTER_S = 3.0      # runs shorter than this show no progress at all
STATUS_EVERY_S = 5.0        # the one-line status period when stderr is not a terminal


# -- argument types: each names what it expected, argparse names the argument -------------------
def _controller(text: str) -> str:
    try:
        JobApiClient(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r} (the port in 1..65535)")
    return host, int(port)


def _ipv4(text: str) -> str:
    try:
        return str(ipaddress.IPv4Address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an IPv4 address, got {text!r}") from None


def _job_name(text: str) -> str:
    if not JOB_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"a job name is {JOB_NAME_RULE}, got {text!r}")
    return text


def _number(kind: type, low: float | None = None, high: float | None = None,
            low_open: bool = False) -> Callable[[str], Any]:
    """An int or float in [low, high] (or (low, high] with low_open)."""
    def parse(text: str) -> Any:
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, "
                                             f"got {text!r}") from None
        if v != v or (low is not None and (v <= low if low_open else v < low)) or (high is not None and v > high):
            bounds = (f"{'>' if low_open else '>='} {low:g}" if high is None
                      else f"in {'(' if low_open else '['}{low:g}, {high:g}]")
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {text}")
        return v
    return parse


def tensor_for(seed: int, rank: int, index: int, size: int, dtype: str, density: float = 1.0,
               block: int | None = None) -> np.ndarray:
    """The deterministic test tensor of ``rank`` for call ``index`` (every rank can rebuild all).
    With ``density`` < 1, only that fraction of its ``block``-element blocks is non-zero (sparse
    gradients: what a sparse job leaves off the wire); ``block`` is then required: the job's lanes
    per packet, which no default can know."""
    rng = np.random.default_rng([seed, rank, index])
    if dtype == "int32":
        x = rng.integers(-2**20, 2**20, size, dtype=np.int32)
    else:
        x = rng.standard_normal(size).astype(np.float32)
    if density < 1.0:
        if block is None:
            raise ValueError("tensor_for: density < 1 needs block (the job's lanes per packet)")
        keep = np.repeat(rng.random(-(-size // block)) < density, block)[:size]
        x[~keep] = 0
    return x


class Progress:
    """Progress on stderr for runs longer than PROGRESS_AFTER_S: a tqdm bar on a terminal, else a
    status line every STATUS_EVERY_S. `advance_to(done)` is called from the work; a ticker thread
    also asks `estimate()` for progress within a long step."""

    def __init__(self, total: int, unit: str, label: str, estimate: Callable[[], int] | None = None,
                 quiet: bool = False, stream: TextIO | None = None):
        self.total, self.unit, self.label = total, unit, label
        self.estimate = estimate
        self.stream = stream or sys.stderr
        self.done = 0
        self.t0 = time.monotonic()
        self.bar: Any = None
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self._next_status = self.t0 + max(PROGRESS_AFTER_S, STATUS_EVERY_S)
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True, name="worker-progress")
        if not quiet:
            self._ticker.start()

    def advance_to(self, done: int) -> None:
        self.done = max(self.done, min(done, self.total))
        self._show()

    def _position(self) -> int:
        extra = self.estimate() if self.estimate is not None else 0
        return min(self.total, max(self.done, extra))

    def _show(self) -> None:
        if self.quiet:
            return
        now = time.monotonic()
        if now - self.t0 < PROGRESS_AFTER_S:
            return
        pos = self._position()
        if self.tty:
            if self.bar is None:
                from tqdm import tqdm
                self.bar = tqdm(total=self.total, unit=self.unit, unit_scale=True, desc=self.label,
                                file=self.stream, leave=False, dynamic_ncols=True)
            self.bar.n = pos
            self.bar.refresh()
        elif now >= self._next_status:
            self._next_status = now + STATUS_EVERY_S
            rate = pos / max(now - self.t0, 1e-9)
            print(f"{self.label}: {pos:,}/{self.total:,} {self.unit}s ({100 * pos / max(self.total, 1):.0f}%), "
                  f"{rate:,.0f} {self.unit}s/s, {now - self.t0:.0f} s", file=self.stream, flush=True)

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self._show()

    def close(self) -> None:
        self._stop.set()
        if self._ticker.is_alive():
            self._ticker.join()
        if self.bar is not None:
            self.bar.close()


def _join_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("job")
    g.add_argument("--controller", type=_controller, default="127.0.0.1:8090", metavar="HOST:PORT",
                   help="controller job API address HOST[:PORT]; inside a `make run` host it is the same "
                        "as outside (default %(default)s)")
    g.add_argument("--job", type=_job_name, default="default", metavar="NAME",
                   help="job name; created by the first join if it does not exist (default %(default)s)")
    g.add_argument("--workers", type=_number(int, 1, 255), metavar="N",
                   help="number of workers, when this join creates the job (default: the controller's)")
    g.add_argument("--mode", choices=["dense", "sparse"],
                   help="aggregation mode, when this join creates the job (default: the controller's)")
    g.add_argument("--rank", type=_number(int, 0, 254), metavar="R",
                   help="ask for this rank (default: the controller picks)")
    g.add_argument("--bind", type=_ipv4, default="0.0.0.0", metavar="IP",
                   help="local IPv4 address of the worker's UDP socket (default %(default)s: all)")
    g.add_argument("--port", type=_number(int, 0, 65535), default=0, metavar="PORT",
                   help="local UDP port of the worker (default %(default)s: any free port)")
    g.add_argument("--advertise-ip", type=_ipv4, metavar="IP",
                   help="IPv4 address the switch sends results to (default: as the controller sees us)")
    g.add_argument("--switch", type=_addr, metavar="HOST:PORT",
                   help="send packets to HOST:PORT instead of the job's switch address (default: the job's)")
    g.add_argument("--deadline", type=_number(float, 0, low_open=True), metavar="SECONDS",
                   help="seconds without progress before giving up (default: the job's lease)")
    g.add_argument("--wait", type=_number(float, 0, low_open=True), default=60.0, metavar="SECONDS",
                   help="seconds to wait for every rank to join (default %(default)s)")
    g.add_argument("--compressor", default="fixedpoint", choices=sorted(COMPRESSORS), metavar="NAME",
                   help="how float32 data becomes integers the switch can add: " + ", ".join(sorted(COMPRESSORS))
                        + " (default %(default)s; int32 data is always exact)")
    g.add_argument("--error-feedback", choices=["on", "off"], default=None,
                   help="error-feedback memory for float32 data (default: the compressor's recommendation, "
                        "see `p4reduce-worker compressors`)")
    o = p.add_argument_group("compressor options (docs/compressors.md; each only for the compressors that take it)")
    o.add_argument("--k", type=_number(float, 0, low_open=True), metavar="K",
                   help="topk, randomk: blocks to send, a count (>= 1) or a ratio (< 1) (default 0.1)")
    o.add_argument("--rescale", action="store_true",
                   help="randomk: multiply the kept blocks by blocks/k, unbiased without error feedback "
                        "(default off)")
    o.add_argument("--threshold", type=_number(float, 0, 1), metavar="T",
                   help="threshold: zero the blocks whose norm is below T times the largest (default 0.1)")
    o.add_argument("--alpha", type=_number(float, 0, 1, low_open=True), metavar="A",
                   help="diana: step of the shifts (default 0.05)")
    o.add_argument("--sparsity-multiplier", type=_number(float, 1, 2), metavar="M",
                   help="3lc: 1 <= M < 2, larger rounds more values to zero (default 1.0)")
    g.add_argument("--credential", default=None, metavar="CREDENTIAL",
                   help=f"the job's credential (default: ${CREDENTIAL_ENV}, which other users cannot see in ps; inside "
                        "`make run` hosts the relay adds it)")
    g.add_argument("--loop", choices=["native", "python"], default=None,
                   help="the send/receive loop: native (C, built with the system compiler on first use) or "
                        "python (the reference); default: $P4REDUCE_WORKER_LOOP, else native when it builds")
    g.add_argument("--quiet", action="store_true", help="no progress display on stderr")


#: the compressors this module knows the options of (one registered later gets every option given)
BUILTIN_COMPRESSORS = frozenset(COMPRESSORS)

#: compressor option -> (keyword of the compressor's factory, the compressors that take it)
COMPRESSOR_OPTIONS = {
    "k": ("k", ("topk", "randomk")),
    "rescale": ("rescale", ("randomk",)),
    "threshold": ("threshold", ("threshold",)),
    "alpha": ("alpha", ("diana",)),
    "sparsity_multiplier": ("sparsity_multiplier", ("3lc",)),
}


def compressor_options(args: argparse.Namespace) -> dict[str, Any]:
    """The compressor's keyword options from the command line; ValueError naming the option
    given to a compressor that does not take it."""
    options: dict[str, Any] = {}
    for dest, (keyword, takers) in COMPRESSOR_OPTIONS.items():
        value = getattr(args, dest, None)
        if value is None or value is False:
            continue
        if args.compressor in BUILTIN_COMPRESSORS and args.compressor not in takers:
            flag = "--" + dest.replace("_", "-")
            raise ValueError(f"argument {flag}: compressor {args.compressor!r} takes no such option "
                             f"(it is for {', '.join(takers)})")
        options[keyword] = value
    if options.get("sparsity_multiplier", 1.0) >= 2.0:
        raise ValueError(f"argument --sparsity-multiplier: must be < 2, got {options['sparsity_multiplier']}")
    return options


def _agent(args: argparse.Namespace) -> Agent:
    retry = RetryPolicy(deadline=args.deadline) if args.deadline else None
    ef = None if args.error_feedback is None else args.error_feedback == "on"
    return Agent(args.controller, args.job, compressor=args.compressor, bind_ip=args.bind, udp_port=args.port,
                 advertise_ip=args.advertise_ip, switch_addr=args.switch, retry=retry, rank=args.rank,
                 workers=args.workers, mode=args.mode, wait_timeout=args.wait, credential=args.credential,
                 loop=args.loop, error_feedback=ef, compressor_options=compressor_options(args))


#: compressors whose savings are blocks left at zero, which only a sparse job leaves off the wire
SPARSE_ONLY = ("threshold",)


def mode_warnings(args: argparse.Namespace, sparse: bool, job: str) -> list[str]:
    """What the options ask for that this job's mode cannot give (said, not silently ignored)."""
    out = []
    if not sparse and getattr(args, "density", 1.0) < 1.0:
        out.append(f"job {job!r} is dense: every block is sent, zero or not, so --density "
                   f"{args.density:g} saves no bytes; a sparse job skips the zero blocks (`job NAME N sparse` "
                   "in `make run`'s CLI, or --mode sparse when this join creates the job)")
    if getattr(args, "dtype", "float32") == "int32" and args.compressor != "fixedpoint":
        out.append(f"--compressor {args.compressor} does nothing here: int32 data is summed exactly, "
                   "compressors apply to float32 (--dtype float32)")
    elif args.compressor in SPARSE_ONLY and not sparse:
        out.append(f"--compressor {args.compressor} zeroes blocks, which saves bytes only in a sparse job; "
                   f"job {job!r} is dense")
    return out


def _warn_mode(args: argparse.Namespace, agent: Agent) -> None:
    for w in mode_warnings(args, agent.params.sparse, args.job):
        print(f"worker: warning: {w}", file=sys.stderr, flush=True)


def _joined(args: argparse.Namespace, agent: Agent) -> None:
    p = agent.params
    print(f"worker: joined job {args.job!r} as rank {agent.rank} of {agent.n_workers} (job id {p.job_id}, "
          f"{'sparse' if p.sparse else 'dense'}, {p.slot_count} slots, {p.lanes} lanes per packet; "
          f"{agent.reducer.loop} loop)",
          file=sys.stderr, flush=True)
    if agent.path == "fallback":
        print(f"worker: rank {agent.rank} starts on the host fallback: {agent.path_reason}", file=sys.stderr,
              flush=True)


def cmd_allreduce(args: argparse.Namespace) -> int:
    with _agent(args) as agent:
        _joined(args, agent)
        n, r, lanes = agent.n_workers, agent.rank, agent.params.lanes
        _warn_mode(args, agent)
        stats = agent.reducer.stats
        tensor_start = [0, stats.results]    # (tensor index, results count when it started)
        checker = AllreduceCheck(agent.communicator, args.dtype) if args.check else None

        def estimate() -> int:               # elements done inside the current tensor, roughly
            i, results0 = tensor_start
            return i * args.size + min(args.size, (stats.results - results0) * lanes)

        progress = Progress(args.count * args.size, "element", f"worker rank {r}", estimate, args.quiet)
        secs = check_secs = 0.0
        bad: list[str] = []
        try:
            for i in range(args.count):
                tensor_start[:] = [i, stats.results]
                x = tensor_for(args.seed, r, i, args.size, args.dtype, args.density, lanes)
                t0 = time.perf_counter()
                got = agent.allreduce(x)        # a failure names the peer that stopped (Agent)
                secs += time.perf_counter() - t0
                if checker is not None:      # outside the clock: the report gives both times
                    t1 = time.perf_counter()
                    xs = [tensor_for(args.seed, k, i, args.size, args.dtype, args.density, lanes)
                          for k in range(n)]
                    bad += [f"tensor {i}: {p}" for p in checker.check(xs, got)]
                    check_secs += time.perf_counter() - t1
                progress.advance_to((i + 1) * args.size)
        finally:
            progress.close()
        report = {"rank": r, "workers": n, "tensors": args.count, "size": args.size, "dtype": args.dtype,
                  "density": args.density, "compressor": args.compressor if args.dtype == "float32" else None,
                  "seconds": round(secs, 3),
                  "elements_per_s": round(args.count * args.size / max(secs, 1e-9)),
                  "bytes_sent": agent.reducer.bytes_sent, "packets_sent": stats.packets_sent,
                  "retransmissions": stats.retransmissions, "ignored": stats.ignored,
                  "rto_ms": round(agent.reducer.rto_estimator.rto * 1e3, 2),
                  "srtt_ms": None if agent.reducer.rto_estimator.srtt is None
                  else round(agent.reducer.rto_estimator.srtt * 1e3, 2),
                  # where the calls ran: the switch, or the host fallback (and why)
                  "path": agent.path, "calls_by_path": dict(agent.calls_by_path),
                  "path_reason": agent.path_reason or None, "fallback_episodes": agent.episodes}
        failed = False
        if checker is not None:
            t1 = time.perf_counter()
            overall, summary = checker.verdict()
            check_secs += time.perf_counter() - t1
            failed = bool(bad or overall)
            wrong = len({p.split(":", 1)[0] for p in bad})
            if summary["contract"] == "none known":
                report["check"] = f"unchecked: no documented contract for compressor {args.compressor!r}"
            elif not failed:
                report["check"] = "ok"
            else:
                report["check"] = "; ".join(([f"{wrong} of {args.count} tensors wrong"] if wrong else []) + overall)
                report["check_problems"] = (bad + overall)[:5]
            report["check_contract"] = summary["contract"]
            if "unbiased" in summary:
                report["check_unbiased"] = summary["unbiased"]
            report["check_seconds"] = round(check_secs, 3)
            for p in (bad + overall)[:5]:
                print(f"worker: check: {p}", file=sys.stderr, flush=True)
        print(json.dumps(report), flush=True)
        return 1 if failed else 0


def cmd_compressors(args: argparse.Namespace) -> int:
    for name in COMPRESSORS:
        comp, ef = make_compressor(name)
        print(f"{name:14s} unbiased={comp.unbiased!s:5s} error_feedback={'recommended' if ef else 'no'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="p4reduce-worker",
                                description="p4reduce worker agent: join a job through the controller and "
                                            "aggregate through the switch (docs/worker.md)")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    a = sub.add_parser("allreduce", help="join a job and allreduce generated tensors (the default command)",
                       description="Join a job and allreduce COUNT generated tensors of SIZE elements; print "
                                   "one JSON report line.")
    _join_args(a)
    d = a.add_argument_group("data")
    d.add_argument("--count", type=_number(int, 1), default=10, metavar="N",
                   help="tensors to allreduce (default %(default)s)")
    d.add_argument("--size", type=_number(int, 1, 2**31), default=100_000, metavar="N",
                   help="elements per tensor (default %(default)s)")
    d.add_argument("--dtype", choices=["int32", "float32"], default="int32",
                   help="int32 sums are exact; float32 goes through the compressor (default %(default)s)")
    d.add_argument("--density", type=_number(float, 0, 1, low_open=True), default=1.0, metavar="D",
                   help="fraction of packet-sized blocks that are non-zero; a sparse job never sends the "
                        "blocks that are zero on every worker (default %(default)s: dense data)")
    d.add_argument("--seed", type=_number(int, 0), default=0, metavar="S",
                   help="seed of the generated tensors; every worker must use the same (default %(default)s)")
    d.add_argument("--check", action=argparse.BooleanOptionalAction, default=False,
                   help="verify every result against what the compressor's docs promise, from every rank's "
                        "tensors (int32 exact; float32 per compressor, docs/compressors.md), outside the timed "
                        "calls: the report gives both times (default off)")
    a.set_defaults(fn=cmd_allreduce)
    c = sub.add_parser("compressors", help="list the compressors")
    c.set_defaults(fn=cmd_compressors)
    return p


def _hint(error: Exception) -> str:
    """What to do next, for the errors a user meets on the README's path."""
    if isinstance(error, JobJoinError) and "job_ended" in str(error):
        return ("; a job ends when its workers leave: create it again (in `make run`'s CLI: "
                "`job NAME`, or `workers NAME` which also starts the workers; or POST /v1/jobs)")
    return ""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("--") and argv[0] not in ("--help",):
        argv.insert(0, "allreduce")  # `p4reduce-worker --controller C --job J` = allreduce (the default)
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (JobJoinError, AggregationError, QuantizationError, OSError, ValueError) as e:
        print(f"worker: error: {e}{_hint(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("worker: interrupted", file=sys.stderr)
        return 130
