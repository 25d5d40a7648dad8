"""The Mininet CLI of `make run`, with p4reduce commands: start a job, run its workers, list jobs.

Mininet's own commands (`h1 ping -c1 h2`, `pingall`, `xterm h1`, ...) work as usual; host output is
shown (Mininet prints it through its logger, so the log level must let `output` through). Added:

    jobs                          the controller's jobs (state, workers joined, mode, slots)
    job NAME [WORKERS] [MODE] [--slots S] [--lease SECONDS] [--aggregation tree|root]
                                  create job NAME (again, once it has ended) and grant it to the hosts
    workers [JOB] [OPTIONS...]    run `p4reduce-worker allreduce` on the job's hosts at once (rank i
                                  on the i-th host); each host's progress and JSON report are
                                  printed, then a summary. OPTIONS add to the defaults
    example NAME [JOB] [OPTS...]  the same with examples/NAME.py (e.g. ddp_torch: PyTorch DDP)

A job ends when all its workers have left (or when no worker joins it within the controller's
join timeout, `run --join-timeout`); `workers NAME` creates it again as it was (same size, mode,
slots and lease), so a run can be repeated as often as wanted (`job NAME` does the same without
starting workers).
"""
from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from mininet.cli import CLI

from p4reduce.protocol.job_api import JobApiClient, JobApiError, tree_text

WORKER = [sys.executable, "-m", "p4reduce.worker", "allreduce"]
EXAMPLES_DIR = Path("examples")                   # the repository's, relative to `make run`'s directory
TORCH_PORT = 29500     # rank 0's torch.distributed store in `example` runs (torchrun's default)
EXAMPLE_MODES = {"sparse_allreduce": "sparse"}    # the job mode an example needs when it creates one
DEFAULT_WORKER_OPTIONS = ["--count", "4", "--size", "100000", "--check"]


class RunCLI(CLI):
    """Mininet's CLI plus the commands above; `session` is the running mininet_topos Session."""

    prompt = "mininet> "

    def __init__(self, session: Any, mode: str = "dense", stdin: TextIO = sys.stdin, **kwargs: Any):
        self.session = session
        self.mode = mode
        self.made: dict[str, JobSpec] = {}      # jobs created here: `workers NAME` re-creates them as they were
        super().__init__(session.network.net, stdin=stdin, **kwargs)

    # -- commands ----------------------------------------------------------------------------
    def do_jobs(self, line: str) -> None:
        """jobs: the controller's jobs (name, state, workers joined, mode, slots)."""
        try:
            jobs = JobApiClient(self.session.api_addr).jobs()
        except JobApiError as e:
            self._say(f"jobs: {e}")
            return
        self._say(jobs_table(jobs))

    def do_job(self, line: str) -> None:
        """job NAME [WORKERS] [dense|sparse] [--slots S] [--lease SECONDS] [--aggregation tree|root]:
        create job NAME
        (default: every host, the run's mode, the controller's slots and lease) and grant it to its
        first WORKERS hosts; a job that has ended is created again. Prints its slots and when the
        controller reclaims it if no worker joins."""
        spec = parse_job_line(line, len(self.session.network.hosts), self.mode)
        if isinstance(spec, str):
            self._say(spec)
            return
        job = self._create(spec)
        if job is not None:
            self._say(f"job {spec.name!r} created: {describe_job(job)}; reclaimed if no worker joins within "
                      f"{self.session.join_timeout_s:g} s (`run --join-timeout`); start its workers with "
                      f"`workers {spec.name}`")

    def do_workers(self, line: str) -> None:
        """workers [JOB] [OPTIONS...]: run the worker agent (allreduce) on each of the job's hosts at
        once, rank i on the i-th host (unless OPTIONS give --rank), and print every host's progress
        and JSON report, then a summary. JOB defaults to the run's job; OPTIONS are `p4reduce-worker
        allreduce`'s and add to the defaults (--count 4 --size 100000 --check; one given replaces
        its default, --no-check drops the check). A job that has ended is created again as it was."""
        parsed = self._job_and_hosts("workers", line, self.mode)
        if parsed is None:
            return
        job, hosts, words = parsed
        options = merge_options(DEFAULT_WORKER_OPTIONS, words)
        argv = WORKER + ["--controller", self.session.api_addr, "--job", job] + options
        self._say(f"*** {len(hosts)} workers of job {job!r} on {', '.join(h.name for h in hosts)}: "
                  f"{shlex.join(['p4reduce-worker', 'allreduce'] + argv[len(WORKER):])}")
        ranks = None if "--rank" in words else {h.name: ["--rank", str(i)] for i, h in enumerate(hosts)}
        reports = run_on_hosts(hosts, argv, self.stdout, extra_args=ranks)
        self._say(summary_table(reports))

    def do_example(self, line: str) -> None:
        """example NAME [JOB] [OPTIONS...]: run examples/NAME.py on each of the job's hosts at once
        (allreduce_numpy, sparse_allreduce, ddp_torch, custom_compressor; OPTIONS are the
        example's, see its --help), printing every host's output and report, then whether each
        rank checked out. A job that has ended (or does not exist) is created, sparse for
        sparse_allreduce."""
        name, _, rest = line.strip().partition(" ")
        script = EXAMPLES_DIR / f"{name}.py"
        if not name or name.startswith("_") or not script.is_file():
            found = sorted(p.stem for p in EXAMPLES_DIR.glob("[!_]*.py"))
            self._say(f"usage: example NAME [JOB] [OPTIONS...]; NAME one of: {', '.join(found) or 'none found'} "
                      f"(in {EXAMPLES_DIR.resolve()})")
            return
        parsed = self._job_and_hosts("example", rest, EXAMPLE_MODES.get(name, self.mode))
        if parsed is None:
            return
        job, hosts, words = parsed
        argv = [sys.executable, str(script), "--controller", self.session.api_addr, "--job", job] + words
        self._say(f"*** examples/{name}.py on {', '.join(h.name for h in hosts)} (job {job!r})")
        reports = run_on_hosts(hosts, argv, self.stdout, env=torchrun_env(hosts))
        self._say("\n".join(f"{host:<6} " + (r if isinstance(r, str) else
                                              f"rank {r.get('rank', '?')}: {'ok' if r.get('ok') else 'FAILED'}")
                            for host, r in reports.items()))

    # -- helpers -----------------------------------------------------------------------------
    def _say(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def _job_and_hosts(self, command: str, line: str, mode: str) -> tuple[str, list[Any], list[str]] | None:
        """(job, its hosts, the remaining words) of `[JOB] [OPTIONS...]`, the job created (again)
        when absent, with the parameters it was created with here (else every host); None after
        saying why not."""
        try:
            words = shlex.split(line)
        except ValueError as e:
            self._say(f"{command}: {e}")
            return None
        job = self.session.default_job
        if words and not words[0].startswith("-"):
            job = words.pop(0)
        state = self._job_state(job)
        if state is None:
            return None
        if isinstance(state, int):
            workers = state
        else:                        # "absent": ended (or never created)
            spec = self.made.get(job) or JobSpec(job, len(self.session.network.hosts), mode)
            created = self._create(spec)
            if created is None:
                return None
            workers = spec.workers
            self._say(f"job {job!r} created (again, if it had run: a job ends when its workers leave): "
                      f"{describe_job(created)}")
        return job, self.session.network.hosts[:workers], words

    def _job_state(self, job: str) -> int | str | None:
        """The job's worker count when it exists; "absent" when it has ended or never existed;
        None (after saying why) when the controller cannot tell."""
        try:
            return int(JobApiClient(self.session.api_addr).job(job)["workers"])
        except JobApiError as e:
            if e.code in ("job_ended", "no_such_job"):
                return "absent"
            self._say(f"workers: job {job!r}: {e}")
            return None

    def _create(self, spec: JobSpec) -> dict[str, Any] | None:
        hosts = self.session.network.hosts
        if not 1 <= spec.workers <= len(hosts):
            self._say(f"job: WORKERS must be in 1..{len(hosts)} (the hosts of this topology), got {spec.workers}")
            return None
        try:
            job = self.session.create_job(spec.name, spec.workers, spec.mode, slots=spec.slots,
                                          hosts=hosts[:spec.workers], lease_s=spec.lease_s,
                                          aggregation=spec.aggregation)
        except Exception as e:       # SessionError and the job API's refusals: one line
            self._say(f"job: {e}")
            return None
        self.made[spec.name] = spec
        return job


@dataclasses.dataclass(frozen=True)
class JobSpec:
    """A job as `job` (or `workers`) created it: what `workers NAME` creates again."""

    name: str
    workers: int
    mode: str
    slots: int | None = None
    lease_s: float | None = None
    aggregation: str | None = None     # "tree" (the controller's default) or "root"


def parse_job_line(line: str, hosts: int, mode: str) -> JobSpec | str:
    """`NAME [WORKERS] [MODE] [--slots S] [--lease SECONDS] [--aggregation tree|root]` -> JobSpec,
    or the error text."""
    usage = "usage: job NAME [WORKERS] [dense|sparse] [--slots S] [--lease SECONDS] [--aggregation tree|root]"
    try:
        words = shlex.split(line)
    except ValueError as e:
        return f"job: {e}"
    options: dict[str, str] = {}
    positional = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("--slots", "--lease", "--aggregation"):
            if i + 1 >= len(words):
                return f"job: {w} needs a value; {usage}"
            options[w] = words[i + 1]
            i += 2
        elif w.startswith("-"):
            return f"job: unknown option {w!r}; {usage}"
        else:
            positional.append(w)
            i += 1
    if not positional or len(positional) > 3:
        return usage
    name, workers, job_mode = positional[0], hosts, mode
    if len(positional) > 1:
        try:
            workers = int(positional[1])
        except ValueError:
            return f"job: WORKERS must be a number, got {positional[1]!r}"
    if len(positional) > 2:
        job_mode = positional[2]
        if job_mode not in ("dense", "sparse"):
            return f"job: MODE must be dense or sparse, got {job_mode!r}"
    slots = lease = None
    if "--slots" in options:
        try:
            slots = int(options["--slots"])
        except ValueError:
            return f"job: --slots must be a number of slots, got {options['--slots']!r}"
    if "--lease" in options:
        try:
            lease = float(options["--lease"])
        except ValueError:
            return f"job: --lease must be a number of seconds, got {options['--lease']!r}"
        if not lease == lease or lease <= 0:
            return f"job: --lease must be a positive number of seconds, got {options['--lease']!r}"
    aggregation = options.get("--aggregation")
    if aggregation is not None and aggregation not in ("tree", "root"):
        return f"job: --aggregation must be tree or root, got {aggregation!r}"
    return JobSpec(name, workers, job_mode, slots, lease, aggregation)


def describe_job(job: dict[str, Any]) -> str:
    """`4 workers, dense, slots 0..63, lease 10 s` from the job API's description."""
    slots = job.get("slots")
    span = (f"slots {slots['base']}..{slots['base'] + slots['count'] - 1}" if isinstance(slots, dict)
            else f"slots {slots}")
    return (f"{job.get('workers', '?')} workers, {job.get('mode', '?')}, {span}, "
            f"lease {job.get('lease_s', '?'):g} s" if isinstance(job.get("lease_s"), (int, float))
            else f"{job.get('workers', '?')} workers, {job.get('mode', '?')}, {span}")


def _option_groups(words: Sequence[str]) -> list[list[str]]:
    """`--flag [value]` groups (a value is a word that does not start with --)."""
    groups: list[list[str]] = []
    for w in words:
        if w.startswith("--") or not groups:
            groups.append([w])
        else:
            groups[-1].append(w)
    return groups


def merge_options(defaults: Sequence[str], given: Sequence[str]) -> list[str]:
    """The default options, each replaced by the same option given (`--no-X` replaces `--X`), then
    the given ones: options add to the defaults instead of silently dropping them."""
    named = {g[0].split("=", 1)[0] for g in _option_groups(given)}
    named |= {"--" + n[len("--no-"):] for n in named if n.startswith("--no-")}
    kept = [g for g in _option_groups(defaults) if g[0].split("=", 1)[0] not in named]
    return [w for g in kept for w in g] + list(given)


def torchrun_env(hosts: Sequence[Any], port: int = TORCH_PORT,
                 gloo_interface: bool = True) -> dict[str, dict[str, str]]:
    """Host name -> the variables torchrun gives each process (RANK, WORLD_SIZE, MASTER_ADDR,
    MASTER_PORT, LOCAL_RANK): a torch.distributed program started on the hosts with
    init_method env:// needs nothing else. Ranks follow host order; rank 0's host is the store.
    With `gloo_interface`, GLOO_SOCKET_IFNAME too (the host's data interface), which a plain gloo
    group needs in a Mininet host (it would bind 127.0.0.1); the p4reduce backend finds it itself."""
    env = {h.name: {"RANK": str(i), "WORLD_SIZE": str(len(hosts)), "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
                    "MASTER_ADDR": hosts[0].IP(), "MASTER_PORT": str(port)} for i, h in enumerate(hosts)}
    if gloo_interface:
        for h in hosts:
            env[h.name]["GLOO_SOCKET_IFNAME"] = h.defaultIntf().name
    return env


def run_on_hosts(hosts: Sequence[Any], argv: list[str], out: TextIO,
                 env: dict[str, dict[str, str]] | None = None,
                 extra_args: dict[str, list[str]] | None = None) -> dict[str, dict[str, Any] | str]:
    """Run `argv` (+ `extra_args[host]`) on every host at once (with `env[host]` added to the
    environment); print each output line as `HOST| line` as it comes. Returns host name -> its
    JSON report (the last JSON line of stdout, also when it exits 1: a failed check) or an error
    text."""
    lock = threading.Lock()
    procs = {h.name: h.popen(argv + (extra_args or {}).get(h.name, []), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=os.getcwd(), env={**os.environ, **(env or {}).get(h.name, {})}) for h in hosts}
    last_json: dict[str, dict[str, Any]] = {}
    last_err: dict[str, str] = {}

    def pump(name: str, stream: TextIO, is_stdout: bool) -> None:
        for line in stream:
            line = line.rstrip("\n")
            if is_stdout and line.startswith("{"):
                try:
                    last_json[name] = json.loads(line)
                except ValueError:
                    pass
            elif not is_stdout and line.strip():
                last_err[name] = line.strip()
            with lock:
                out.write(f"{name}| {line}\n")
                out.flush()

    threads = [threading.Thread(target=pump, args=(n, s, s is p.stdout), daemon=True)
               for n, p in procs.items() for s in (p.stdout, p.stderr)]
    for t in threads:
        t.start()
    try:
        for p in procs.values():
            p.wait()
    except KeyboardInterrupt:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
        for p in procs.values():
            p.wait()
    for t in threads:
        t.join(timeout=5)
    results: dict[str, dict[str, Any] | str] = {}
    for name, p in procs.items():
        if name in last_json and p.returncode in (0, 1):
            results[name] = last_json[name]
        else:
            results[name] = f"exit {p.returncode}: {last_err.get(name, 'no output')}"
    return results


def summary_table(reports: dict[str, dict[str, Any] | str]) -> str:
    """One line per host: rank, check, seconds of allreduce (and of the check, apart),
    elements/s, retransmissions (or its error); the checks' problems after the table."""
    lines = [f"{'host':<6} {'rank':>4} {'check':<10} {'seconds':>8} {'check s':>8} {'elements/s':>12} {'retx':>6} path"]
    problems = []
    for name, r in reports.items():
        if isinstance(r, str):
            lines.append(f"{name:<6} {r}")
            continue
        check = r.get("check")
        verdict = "-" if check is None else "ok" if check == "ok" else \
            "unchecked" if str(check).startswith("unchecked") else "FAILED"
        if verdict in ("FAILED", "unchecked"):
            problems.append(f"{name}: {check}")
        cs = r.get("check_seconds")
        lines.append(f"{name:<6} {r.get('rank', '?'):>4} {verdict:<10} "
                     f"{r.get('seconds', 0):>8.2f} {'-' if cs is None else f'{cs:.2f}':>8} "
                     f"{r.get('elements_per_s', 0):>12,} {r.get('retransmissions', 0):>6} {_path(r)}")
        for ep in r.get("fallback_episodes") or []:
            if not isinstance(ep, dict):
                continue
            back = ep.get("back_at_call")
            span = f"calls {ep.get('from_call')}..{back - 1}" if isinstance(back, int) else \
                f"calls {ep.get('from_call')}.. (to the end)"
            problems.append(f"{name}: {span} on the host fallback: {str(ep.get('reason', ''))[:300]}")
    return "\n".join(lines + problems)


def _path(report: dict[str, Any]) -> str:
    """Where a worker's calls ran: `switch`, or `fallback (2 of 5 calls)`, or `switch (2 of 5 calls
    on the fallback)` when it came back."""
    by = report.get("calls_by_path") or {}
    done = sum(by.values()) if isinstance(by, dict) else 0
    if not by.get("fallback"):
        return str(report.get("path", "switch"))
    if report.get("path") == "switch":
        return f"switch ({by['fallback']} of {done} calls on the fallback)"
    return f"fallback ({by['fallback']} of {done} calls)"


def jobs_table(jobs: list[dict[str, Any]]) -> str:
    if not jobs:
        return "no jobs (create one with `job NAME`, or run `workers`)"
    lines = [f"{'job':<16} {'state':<10} {'joined':>8} {'mode':<7} slots"]
    for j in jobs:
        slots = j.get("slots")
        span = f"{slots.get('base')}..{slots.get('base', 0) + slots.get('count', 0) - 1}" \
            if isinstance(slots, dict) and slots.get("count") else "none" if isinstance(slots, dict) else str(slots)
        state = "degraded" if j.get("state") == "running" and j.get("path") == "fallback" else j.get("state", "?")
        if j.get("path") == "fallback":
            span += f"  (host fallback: {str(j.get('path_reason', ''))[:200]})"
        lines.append(f"{j.get('name', '?'):<16} {state:<10} "
                     f"{j.get('joined', 0)}/{j.get('workers', '?'):<6} {j.get('mode', '?'):<7} {span}")
        if isinstance(j.get("tree"), dict):
            lines.append(tree_text(j))
    return "\n".join(lines)
