"""The Mininet CLI of `make run`, with p4reduce commands: start a job, run its workers, list jobs.

Mininet's own commands (`h1 ping -c1 h2`, `pingall`, `xterm h1`, ...) work as usual; host output is
shown (Mininet prints it through its logger, so the log level must let `output` through). Added:

    jobs                          the controller's jobs (state, workers joined, mode, slots)
    job NAME [WORKERS] [MODE]     create job NAME (again, once it has ended) and grant it to the hosts
    workers [JOB] [OPTIONS...]    run `p4reduce-worker allreduce` on the job's hosts at once; each
                                  host's progress and JSON report are printed, then a summary
    example NAME [JOB] [OPTS...]  the same with examples/NAME.py (e.g. ddp_torch: PyTorch DDP)

A job ends when all its workers have left; `workers` creates it again by name, so a run can be
repeated as often as wanted (`job NAME` does the same without starting workers).
"""
from __future__ import annotations

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

from p4reduce.protocol.job_api import JobApiClient, JobApiError

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
        """job NAME [WORKERS] [dense|sparse]: create job NAME (default: every host, the run's mode)
        and grant it to its hosts; a job that has ended is created again."""
        words = line.split()
        if not words or len(words) > 3:
            self._say("usage: job NAME [WORKERS] [dense|sparse]")
            return
        try:
            workers = int(words[1]) if len(words) > 1 else len(self.session.network.hosts)
        except ValueError:
            self._say(f"job: WORKERS must be a number, got {words[1]!r}")
            return
        mode = words[2] if len(words) > 2 else self.mode
        if self._create(words[0], workers, mode):
            self._say(f"job {words[0]!r} created: {workers} workers, {mode}; start them with "
                      f"`workers {words[0]}`")

    def do_workers(self, line: str) -> None:
        """workers [JOB] [OPTIONS...]: run the worker agent (allreduce) on each of the job's hosts at
        once and print every host's progress and JSON report, then a summary. JOB defaults to the
        run's job; OPTIONS are `p4reduce-worker allreduce`'s (default: --count 4 --size 100000
        --check; see `p4reduce-worker allreduce --help`). A job that has ended is created again."""
        parsed = self._job_and_hosts("workers", line, self.mode)
        if parsed is None:
            return
        job, hosts, words = parsed
        options = words or DEFAULT_WORKER_OPTIONS
        argv = WORKER + ["--controller", self.session.api_addr, "--job", job] + options
        self._say(f"*** {len(hosts)} workers of job {job!r} on {', '.join(h.name for h in hosts)}: "
                  f"{shlex.join(['p4reduce-worker', 'allreduce'] + argv[len(WORKER):])}")
        reports = run_on_hosts(hosts, argv, self.stdout)
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
        when absent; None after saying why not."""
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
            workers = len(self.session.network.hosts)
            if not self._create(job, workers, mode):
                return None
            self._say(f"job {job!r} created (again, if it had run: a job ends when its workers leave), {mode}")
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

    def _create(self, job: str, workers: int, mode: str) -> bool:
        hosts = self.session.network.hosts
        if not 1 <= workers <= len(hosts):
            self._say(f"job: WORKERS must be in 1..{len(hosts)} (the hosts of this topology), got {workers}")
            return False
        try:
            self.session.create_job(job, workers, mode, hosts=hosts[:workers])
        except Exception as e:       # SessionError and the job API's refusals: one line
            self._say(f"job: {e}")
            return False
        return True


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
                 env: dict[str, dict[str, str]] | None = None) -> dict[str, dict[str, Any] | str]:
    """Run `argv` on every host at once (with `env[host]` added to the environment); print each
    output line as `HOST| line` as it comes. Returns host name -> its JSON report (the last JSON
    line of stdout) or an error text."""
    lock = threading.Lock()
    procs = {h.name: h.popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
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
        if name in last_json and p.returncode == 0:
            results[name] = last_json[name]
        else:
            results[name] = f"exit {p.returncode}: {last_err.get(name, 'no output')}"
    return results


def summary_table(reports: dict[str, dict[str, Any] | str]) -> str:
    """One line per host: rank, check, seconds, elements/s, retransmissions (or its error)."""
    lines = [f"{'host':<6} {'rank':>4} {'check':<8} {'seconds':>8} {'elements/s':>12} {'retx':>6}"]
    for name, r in reports.items():
        if isinstance(r, str):
            lines.append(f"{name:<6} {r}")
        else:
            lines.append(f"{name:<6} {r.get('rank', '?'):>4} {r.get('check', '-')!s:<8} "
                         f"{r.get('seconds', 0):>8.2f} {r.get('elements_per_s', 0):>12,} "
                         f"{r.get('retransmissions', 0):>6}")
    return "\n".join(lines)


def jobs_table(jobs: list[dict[str, Any]]) -> str:
    if not jobs:
        return "no jobs (create one with `job NAME`, or run `workers`)"
    lines = [f"{'job':<16} {'state':<10} {'joined':>8} {'mode':<7} slots"]
    for j in jobs:
        slots = j.get("slots")
        span = f"{slots.get('base')}..{slots.get('base', 0) + slots.get('count', 0) - 1}" \
            if isinstance(slots, dict) else str(slots)
        lines.append(f"{j.get('name', '?'):<16} {j.get('state', '?'):<10} "
                     f"{j.get('joined', 0)}/{j.get('workers', '?'):<6} {j.get('mode', '?'):<7} {span}")
    return "\n".join(lines)
