"""`python -m lab.demo` (`make demo`): the main job, non-interactive.

Starts the topology (simple_switch_grpc when it is on PATH, else the embedded p4sim-switch; the
output names the one it runs on) with the controller, then runs three phases on every
worker host, each a job of its own: a dense allreduce of gradient-sized tensors (compared with
gloo's ring on the same hosts, both measured the same way: one warm-up call, then back-to-back
timed calls, the median of the slowest worker's times), a sparse one (OmniReduce block skipping)
and a short data-parallel training run through the switch; then the dense comparison again on a
fresh network with 100 Mbit/s links, where the network is the bottleneck. It shows progress while
they run, prints what was aggregated, the bytes saved, the time and the accuracy, checks every
sum against numpy (after the timed calls), and stops everything.
"""
import argparse
import dataclasses
import functools
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from p4reduce.mininet_topos import cli_args
from p4reduce.mininet_topos.hostproc import HostRun, follow, start_on_hosts
from p4reduce.mininet_topos.session import Session
from p4reduce.mininet_topos.target import describe_target, find_target


@dataclass
class Phase:
    name: str          # job name
    kind: str          # dense | sparse | train
    mode: str          # the job's aggregation mode
    args: list[str]    # extra arguments for the demo worker
    units: int         # progress events each worker reports (joined, then one per step)


def phases(args: argparse.Namespace) -> list[Phase]:
    elems = str(args.elements)
    return [
        Phase("demo-dense", "dense", "dense", ["--elements", elems, "--tensors", str(args.tensors)],
              2 + args.tensors),
        Phase("demo-sparse", "sparse", "sparse",
              ["--elements", elems, "--tensors", str(args.tensors), "--density", str(args.density)],
              2 + args.tensors),
        Phase("demo-train", "train", "dense", ["--epochs", str(args.epochs)], 1 + args.epochs),
    ]


def worker_command(session: Session, phase: Phase, host: Any, timeout: float) -> list[str]:
    return [sys.executable, "-m", "lab.demo.worker", phase.kind, "--controller", session.api_addr,
            "--job", phase.name, "--workers", str(len(session.network.hosts)), "--advertise-ip", host.IP(),
            "--timeout", str(timeout)] + phase.args


class Progress:
    """One tqdm bar per phase, advanced by the workers' progress events."""

    def __init__(self, phase: Phase, workers: int, quiet: bool):
        from tqdm import tqdm
        if not quiet and not sys.stderr.isatty():     # a log file: one line per phase, no bar redraws
            print(f"demo: {phase.kind}: running {phase.name} on {workers} workers ...", file=sys.stderr, flush=True)
            quiet = True
        self.bar = tqdm(total=phase.units * workers, desc=f"{phase.kind:>6}", unit="step",
                        file=sys.stderr, disable=quiet, leave=True,
                        bar_format="{desc}: {percentage:3.0f}%|{bar:30}| {n_fmt}/{total_fmt} [{elapsed}]{postfix}")

    def __call__(self, run: HostRun, event: dict[str, Any]) -> None:
        if event.get("event") == "progress":
            self.bar.update(1)
            if "message" in event:
                self.bar.set_postfix_str(f"{run.host}: {event['message']}", refresh=True)

    def close(self) -> None:
        self.bar.close()


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000.0
    return f"{n:.1f} GB"


def summarize(phase: Phase, runs: list[HostRun], seconds: float,
              ring: list[dict[str, Any]] | str | None = None) -> list[str]:
    """The phase's report; every run has a result (phase_ok)."""
    results = [r.result or {} for r in runs]
    lines = [f"== {phase.kind} ({phase.name}, {len(runs)} workers, {seconds:.1f} s)"]
    r0 = results[0]
    if phase.kind in ("dense", "sparse"):
        n = len(runs)
        payload = 4 * r0["elements"] * r0["tensors"]
        sent = sum(r["bytes_sent"] for r in results) / n
        dense = sum(r["bytes_dense"] for r in results) / n
        ring_payload = 2 * (n - 1) / n * payload  # a ring allreduce's payload bytes, headers not counted
        lines.append(f"   aggregated {r0['tensors']} tensors x {r0['elements']:,} int32 elements per worker "
                     f"({human_bytes(payload)} each worker)")
        lines.append(f"   exact: {'yes' if all(r['exact'] for r in results) else 'NO'} "
                     f"(every sum equals numpy's integer sum, bit for bit)")
        lines.append(f"   sent {human_bytes(sent)} per worker in "
                     f"{sum(r['packets_sent'] for r in results) // n:,} packets "
                     f"({sum(r.get('retransmissions', 0) for r in results)} retransmissions in all)")
        if phase.kind == "sparse":
            lines.append(f"   saved vs dense streaming ({human_bytes(dense)}): {100 * (1 - sent / dense):.1f}%")
            lines.append(f"   saved vs a ring allreduce's payload alone ({human_bytes(ring_payload)}): "
                         f"{100 * (1 - sent / ring_payload):.1f}%")
        lines.append(f"   goodput {human_bytes(payload / max(seconds, 1e-9))}/s per worker")
        if ring is not None:
            lines += ring_comparison(results, ring)
    else:
        lines.append(f"   model {r0['model']}, {r0['epochs']} epochs on {r0['samples']:,} samples per worker "
                     f"({r0['parameters']:,} parameters, gradients allreduced through the switch)")
        lines.append(f"   test accuracy {100 * r0['accuracy']:.1f}% (single-machine reference "
                     f"{100 * r0['reference_accuracy']:.1f}%); replicas identical: "
                     f"{'yes' if len({r['weights_digest'] for r in results}) == 1 else 'NO'}")
        lines.append(f"   gradient bytes sent {human_bytes(sum(r['bytes_sent'] for r in results))}")
    return lines


def ring_command(session: Session, rank: int, master: str, host: Any, args: argparse.Namespace) -> list[str]:
    """gloo's ring allreduce of tensors of the same size on the same hosts (bench's baseline)."""
    return [sys.executable, "-m", "lab.bench.baselines.gloo_allreduce", "--rank", str(rank),
            "--world", str(len(session.network.hosts)), "--master", master, "--iface", host.defaultIntf().name,
            "--size", str(args.elements), "--reps", str(args.tensors), "--warmup", "1",
            "--timeout", str(args.timeout)]


def run_ring(session: Session, args: argparse.Namespace) -> list[dict[str, Any]] | str:
    """Each host's gloo record (time per allreduce, interface counters), or why there is none."""
    hosts = sorted(session.network.hosts, key=lambda h: h.params["index"])
    rank = {h.name: r for r, h in enumerate(hosts)}
    master = f"{hosts[0].IP()}:29400"
    runs = follow(start_on_hosts(hosts, lambda h: ring_command(session, rank[h.name], master, h, args)),
                  timeout=args.timeout)
    records = [next((e for e in r.events if e.get("system") == "gloo"), None) for r in runs]
    found = [rec for rec in records if rec is not None]
    if len(found) < len(runs):
        tail = next((line.strip() for r in runs for line in reversed(r.text) if line.strip()), "no output")
        return f"not measured: {tail}"
    return found


def ring_comparison(results: list[dict[str, Any]], ring: list[dict[str, Any]] | str) -> list[str]:
    """p4reduce's dense job against the ring on the same hosts: bytes and time, per worker."""
    n, tensors = len(results), results[0]["tensors"]
    mine_bytes = sum(r["bytes_sent"] for r in results) / n / tensors
    mine_time = statistics.median(max(ts) for ts in zip(*(r["allreduce_s"] for r in results)))
    lines = [f"   measured the same way on both: 1 warm-up call, then {tensors} back-to-back calls of "
             f"{results[0]['elements']:,} 32-bit elements per worker; time per call = the slowest worker's, "
             "median over the calls",
             f"   p4reduce, per worker and tensor: sent {human_bytes(mine_bytes)} (frames, headers and "
             f"retransmissions included), {1e3 * mine_time:.1f} ms per allreduce"]
    if isinstance(ring, str):
        return lines + [f"   ring allreduce (gloo) on the same hosts: {ring}"]
    ring_bytes = sum(r["counters"]["tx_bytes"] / r["reps"] for r in ring) / n
    ring_time = statistics.median(max(ts) for ts in zip(*(r["times_s"] for r in ring)))
    saved = 1 - mine_bytes / ring_bytes
    lines.append(f"   ring allreduce (gloo) on the same hosts and switch, per worker and tensor: sent "
                 f"{human_bytes(ring_bytes)} (interface counters: TCP headers and ACKs included), "
                 f"{1e3 * ring_time:.1f} ms per allreduce")
    lines.append(f"   p4reduce against the ring, per worker: {100 * abs(saved):.1f}% "
                 f"{'fewer' if saved >= 0 else 'more'} bytes sent, {mine_time / ring_time:.2f}x the ring's time "
                 f"({'faster' if mine_time < ring_time else 'slower'})")
    return lines


def phase_ok(phase: Phase, runs: list[HostRun]) -> bool:
    if any(r.error or not r.result for r in runs):
        return False
    if phase.kind == "train":
        return len({(r.result or {}).get("weights_digest") for r in runs}) == 1
    return all((r.result or {}).get("exact") for r in runs)


def _problem(phase: Phase, run: HostRun) -> str:
    """What went wrong on one host, or '' if nothing did."""
    if run.error:
        return run.error
    if not run.result:
        return "no result (the worker printed no result line)"
    if phase.kind != "train" and not run.result.get("exact"):
        return "a sum differs from numpy's integer sum"
    return ""


def run_phase(session: Session, phase: Phase, args: argparse.Namespace, quiet: bool) -> tuple[list[HostRun], float]:
    session.create_job(phase.name, args.workers, phase.mode, slots=args.slots)
    progress = Progress(phase, args.workers, quiet)
    t0 = time.monotonic()
    hosts = sorted(session.network.hosts, key=lambda h: h.params["index"])
    runs = start_on_hosts(hosts, functools.partial(worker_command, session, phase, timeout=args.timeout))
    follow(runs, timeout=args.timeout, on_event=progress)
    progress.close()
    return runs, time.monotonic() - t0


def compare_on_shaped_links(args: argparse.Namespace, quiet: bool, failures: list[str]) -> list[str]:
    """The dense job and the ring again, on a fresh network whose links run at --compare-bw: there
    the network, not the CPU, is the bottleneck, which is where in-network aggregation pays."""
    link = dataclasses.replace(args.link, bw_mbps=args.compare_bw)
    print(f"demo: the dense comparison again on {args.compare_bw:g} Mbit/s links ...", file=sys.stderr)
    phase = phases(args)[0]
    with Session(topo=args.topo, workers=args.workers, link=link, uplink=args.uplink,
                 topo_options=args.topo_options, program=args.program,
                 target=args.target, api_port=args.api_port, grpc_base=args.grpc_port,
                 thrift_base=args.thrift_port, run_dir=args.run_dir, log_dir=args.log_dir,
                 pcap_dir=None, prefix=args.prefix, switch_log_level=args.switch_log_level,
                 tls=not args.no_tls) as session:
        runs, seconds = run_phase(session, phase, args, quiet)
        if not phase_ok(phase, runs):
            failures.append(f"dense at {args.compare_bw:g} Mbit/s")
            return [f"== dense at {args.compare_bw:g} Mbit/s: FAILED"] + \
                [f"   {r.host}: {_problem(phase, r)}" for r in runs if _problem(phase, r)]
        lines = summarize(phase, runs, seconds, run_ring(session, args))
    lines[0] = lines[0].replace("== dense (", f"== dense on {args.compare_bw:g} Mbit/s links (", 1)
    return lines


def main(args: argparse.Namespace) -> int:
    quiet = args.quiet
    started = time.monotonic()
    on = describe_target(find_target(args.target))
    print(f"demo: starting a {cli_args.describe_topology(args)} with {args.workers} workers on {on} ...",
          file=sys.stderr)
    failures = []
    report = []
    with Session(topo=args.topo, workers=args.workers, link=args.link, uplink=args.uplink,
                 topo_options=args.topo_options, program=args.program,
                 target=args.target, api_port=args.api_port, grpc_base=args.grpc_port,
                 thrift_base=args.thrift_port, run_dir=args.run_dir, log_dir=args.log_dir,
                 pcap_dir=cli_args.pcap_dir(args), prefix=args.prefix,
                 switch_log_level=args.switch_log_level, tls=not args.no_tls) as session:
        switches = ", ".join(s.label() for s in session.network.switches)
        print(f"demo: switch {switches}; controller on {session.api_addr}", file=sys.stderr)
        for phase in phases(args):
            runs, seconds = run_phase(session, phase, args, quiet)
            if phase_ok(phase, runs):
                ring = run_ring(session, args) if phase.kind == "dense" else None
                report += summarize(phase, runs, seconds, ring)
            else:
                failures.append(phase.kind)
                report.append(f"== {phase.kind}: FAILED")
                report += [f"   {r.host}: {_problem(phase, r)}" for r in runs if _problem(phase, r)]
    if args.compare_bw and not failures:
        report += compare_on_shaped_links(args, quiet, failures)
    print("\n".join(report))
    total = time.monotonic() - started
    if failures:
        print(f"demo: FAILED ({', '.join(failures)}) after {total:.0f} s on {on}; logs in logs/", file=sys.stderr)
        return 1
    print(f"demo: done in {total:.0f} s on {on}; everything it started is stopped")
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--elements", type=int, default=1048576,
                        help="int32 elements per tensor (default %(default)s, 4 MiB)")
    parser.add_argument("--tensors", type=int, default=5,
                        help="timed calls per worker and phase, after one warm-up call (default %(default)s)")
    parser.add_argument("--compare-bw", type=float, default=100.0, metavar="MBPS",
                        help="then compare the dense job with the ring again on links of this rate, where the "
                             "network is the bottleneck (default %(default)s Mbit/s; 0: skip)")
    parser.add_argument("--density", type=float, default=0.05,
                        help="fraction of non-zero packet-sized blocks per worker in the sparse phase "
                             "(default %(default)s)")
    parser.add_argument("--slots", type=int, default=64,
                        help="switch slots per job, i.e. packets each worker keeps in flight (default %(default)s)")
    parser.add_argument("--epochs", type=int, default=3, help="training epochs (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="bound on each phase, seconds (default %(default)s)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
