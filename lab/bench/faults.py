"""The faults section of `make bench` (issue #26): what a job sees when its switch fails.

On the benchmark star (bench/p4net.py), supervised as `make run` is (a dead switch process is
started again, the controller restores it), as root:

1. *switch killed*: a 4-worker job of `calls` int32 allreduces of `elements` each (the demo
   worker, every sum checked), `pause` seconds apart (the demo worker's --pause: a training step's
   compute between its allreduces, not counted in the calls' times); the switch's process is
   killed (SIGKILL) after a fifth of the calls, and again once the job has been back on the switch
   (the job API's path "switch" at a newer generation) for 2 calls; if it is not back in time for
   that with 2 calls left, the section says so in its errors. Per kill: the detection time (from
   the kill, or from the start of the call the switch died in if the kill came in a pause, to a
   worker's move to the host fallback, first and last worker), the restore time (kill to
   /v1/health ok again), the redone call (the call the switch died in, counted as detection is,
   to its end), gloo's own time for that size (the median fallback call), and how soon the job is
   back on the switch after the restore (seconds, and calls started after it). Over the run:
   calls lost or wrong (must be 0).
2. *slots exhausted*: another job holds every slot; the job is created off the switch and runs
   on the host fallback (no pause); its median call time next to the switch path's (run 1, before
   a kill).

The pause: the job must still be running when it gets back to the switch, a wall time after each
kill (the restore, ~1.3-2.5 s here, then ~1-2 s until every rank has voted to return), while a
job of back-to-back calls lasts a number of calls. With no pause, --quick's calls (262,144
elements, ~35 ms on gloo here) could all finish on the fallback before the job was back (a CI
failure: no second kill), and the full run's (1,000,000 elements, ~0.13 s) needed 13 of the 40
calls left after its first kill to get back: a machine 3x faster would run out. So both modes
pause between calls, enough that the calls after the first kill last >= 10 s even if each took
no time: --quick 40 calls 0.4 s apart (first kill after call 8: 31 pauses, 12.4 s), the full run
50 calls 0.3 s apart (after call 10: 39 pauses, 11.7 s). The pause is in the JSON (`pause_s`).

Targets (the issue's): detection <= 1.5 s; the redone call <= detection + 2x gloo's time; 0 lost
or wrong calls; back on the switch within 2 calls of the restore. The figures are stated as they
are, met or not.

    python -m lab.bench.faults --json [--quick] [--calls N] [--elements N] [--pause S]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time
from typing import Any

from lab.demo.worker import pause_seconds
from p4reduce.mininet_topos.hostproc import HostRun, follow, read_available, start_on_hosts
from p4reduce.mininet_topos.links import LinkOptions
from p4reduce.protocol.job_api import JobApiClient, JobApiError

WORKERS = 4
TARGETS = {"detection_s": 1.5, "lost_calls": 0, "back_within_calls": 2}
# (calls, int32 elements per call, pause in seconds between calls): the module's docstring says why
QUICK = (40, 262144, 0.4)
FULL = (50, 1_000_000, 0.3)


def _done(run: HostRun) -> int:
    """Timed calls a demo worker has finished, from its progress events."""
    msgs = [str(e.get("message", "")) for e in run.events if str(e.get("message", "")).startswith("tensor ")]
    return int(msgs[-1].split()[1].split("/")[0]) if msgs else 0


def _start(session: Any, hosts: list, job: str, calls: int, elements: int, slots: int | None,
           pause: float = 0.0) -> list[HostRun]:
    session.create_job(job, len(hosts), "dense", slots=slots, hosts=hosts)

    def command(host: Any) -> list[str]:
        return [sys.executable, "-m", "lab.demo.worker", "dense", "--controller",
                session.api_addr, "--job", job, "--workers", str(len(hosts)), "--advertise-ip", host.IP(),
                "--elements", str(elements), "--tensors", str(calls), "--pause", str(pause), "--timeout", "300"]
    return start_on_hosts(hosts, command)


def _wait_calls(runs: list[HostRun], n: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(_done(r) >= n for r in runs):
            return True
        if all(r.eof for r in runs):
            return False
        read_available(runs, 0.1)
    return False


BACK_CALLS = 2      # the second kill: once the job has been back on the switch for this many calls


def first_kill_mark(calls: int) -> int:
    """The calls every worker has finished when the switch is first killed: a fifth of the run."""
    return max(1, calls // 5)


def paused_s_after_first_kill(calls: int, pause: float) -> float:
    """The run's wall time after the first kill even if every call took no time: its pauses."""
    return max(0, calls - first_kill_mark(calls) - 1) * pause


def second_kill_step(calls: int, done: int, back_at: int | None, after: int = BACK_CALLS) -> str:
    """The second kill's decision, from `done` (the calls every worker has finished, of `calls`) and
    `back_at` (`done` when the job API first showed the job back on the switch after the first
    kill; None until then): "kill" once the job has been back for `after` finished calls, "give up"
    when that can no longer happen with 2 calls left (the one the switch dies in, and one more),
    else "wait"."""
    last = calls - 2                        # the most calls done at which a kill still has 2 left
    if done > last or (back_at if back_at is not None else done) + after > last:
        return "give up"
    return "kill" if back_at is not None and done >= back_at + after else "wait"


def _job_state(client: JobApiClient, job: str) -> dict[str, Any]:
    """The job's entry in the job API's list ({} when it is not there or the API does not answer)."""
    try:
        return {j["name"]: j for j in client.jobs()}.get(job, {})
    except (JobApiError, OSError):
        return {}


def _generation(client: JobApiClient, job: str) -> int | None:
    """The job's generation (bumped each time the controller re-arms it on the switch), or None."""
    desc = _job_state(client, job)
    return int(desc["generation"]) if "generation" in desc else None


def _back_on_switch(client: JobApiClient, job: str, generation: int) -> bool:
    """The job API says `job` is on the switch at a newer generation than `generation` (re-armed
    after the kill, every rank back: right after a kill the API can still say "switch")."""
    desc = _job_state(client, job)
    return desc.get("path") == "switch" and int(desc.get("generation", -1)) > generation


def _wait_back_on_switch(runs: list[HostRun], api: str, job: str, calls: int, generation: int) -> str | None:
    """Wait until the job has been back on the switch for BACK_CALLS calls (None: kill now), or
    why there is no second kill."""
    client = JobApiClient(api, timeout=2.0)
    back_at: int | None = None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if back_at is None and _back_on_switch(client, job, generation):
            read_available(runs, 0.05)          # the progress lines up to the return
            back_at = min(_done(r) for r in runs)
        done = min(_done(r) for r in runs)
        step = second_kill_step(calls, done, back_at)
        if step == "kill":
            return None
        if step == "give up":
            if back_at is None:
                return f"the job was not back on the switch before its last calls ({calls} calls, {done} done): " \
                       "no second kill"
            return f"the job was back on the switch only after call {back_at}, too late for a second kill with " \
                   f"calls left ({calls} calls, {done} done)"
        if all(r.eof for r in runs):
            return f"the workers stopped after {done} of {calls} calls: no second kill"
        read_available(runs, 0.1)
    return "the job was not back on the switch within 300 s of the first kill: no second kill"


class HealthWatch:
    """Polls /v1/health every 0.05 s; `ok_since(t)`: the first time after `t` it answered ok."""

    def __init__(self, api: str):
        self.api = api
        self.samples: list[tuple[float, bool]] = []        # (wall time, ok)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        client = JobApiClient(self.api, timeout=1.0)
        while not self._stop.wait(0.05):
            try:
                ok = bool(client.health().get("ok"))
            except (JobApiError, OSError):
                ok = False
            self.samples.append((time.time(), ok))

    def ok_since(self, t: float) -> float | None:
        down = False
        for when, ok in self.samples:
            if when < t:
                continue
            if not ok:
                down = True
            elif down:
                return when
        return None

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)


def _kill_figures(results: list[dict], kill_at: float, restored_at: float | None) -> dict[str, Any]:
    """One kill's figures over every worker's report (demo worker: call i+1 is timed tensor i).
    Detection and the redone call count from the kill, or from the start of the call the switch
    died in when the kill came in a worker's pause between calls (--pause: nothing to detect there)."""
    stays = []
    for r in results:
        mine = [e for e in r.get("fallback_episodes", []) if e.get("left_at", 0) >= kill_at]
        if mine:
            stays.append((r, mine[0]))
    if not stays:
        return {"error": "no worker moved to the host fallback after this kill"}

    def since(r: dict, e: dict) -> float:       # the kill, or the start of the call it was noticed in
        i, starts = e["from_call"] - 1, r["call_starts"]
        return max(kill_at, starts[i]) if 0 <= i < len(starts) else kill_at
    detect = [e["left_at"] - since(r, e) for r, e in stays]
    out: dict[str, Any] = {"detect_first_s": round(min(detect), 3), "detect_last_s": round(max(detect), 3),
                           "restore_s": None if restored_at is None else round(restored_at - kill_at, 3)}
    redo, gloo, back_s, back_calls = [], [], [], []
    for r, e in stays:
        starts, times = r["call_starts"], r["allreduce_s"]
        i = e["from_call"] - 1                         # the timed tensor the switch died in
        if 0 <= i < len(times):
            redo.append(starts[i] + times[i] - since(r, e))
        back = e.get("back_at_call")
        fb = range(e["from_call"], back if back is not None else len(times) + 1)
        gloo += [times[c - 1] for c in fb if c - 1 != i and 0 <= c - 1 < len(times)]
        if back is not None and restored_at is not None:
            back_s.append(e.get("back_at", restored_at) - restored_at)
            back_calls.append(sum(1 for c in fb if 0 <= c - 1 < len(starts) and starts[c - 1] >= restored_at))
    out["redo_call_s"] = round(max(redo), 3) if redo else None
    out["gloo_call_s"] = round(statistics.median(gloo), 4) if gloo else None
    out["back_after_restore_s"] = round(max(back_s), 3) if back_s else None
    out["back_after_restore_calls"] = max(back_calls) if back_calls else None
    out["back_on_switch"] = all(e.get("back_at_call") is not None for _, e in stays)
    backs = [e["back_at_call"] for _, e in stays if e.get("back_at_call") is not None]
    out["back_from_call"] = max(backs) if backs else None      # the first call on the switch again
    return out


def run(calls: int, elements: int, pause: float = 0.0, kills: int = 2, program: str | None = None) -> dict[str, Any]:
    import pathlib

    from lab.bench.aggregation_program import DEFAULT
    from lab.bench.p4net import P4Net
    net = P4Net(WORKERS, LinkOptions(), program=pathlib.Path(program) if program else DEFAULT, supervise=True)
    net.start()
    doc: dict[str, Any] = {"workers": WORKERS, "calls": calls, "elements": elements, "pause_s": pause,
                           "dtype": "int32", "target": net.describe(), "targets": TARGETS}
    try:
        session = net.started()
        hosts = net.hosts[:WORKERS]
        watch = HealthWatch(session.api_addr)
        runs = _start(session, hosts, "faults-kill", calls, elements, slots=None, pause=pause)
        kill_times: list[float] = []
        kill_after: list[int] = []
        doc["kill_after_calls"] = kill_after
        problems: list[str] = []
        generation = 0
        for k in range(kills):
            if k == 0:
                if not _wait_calls(runs, first_kill_mark(calls), 300):
                    break
            else:
                why = _wait_back_on_switch(runs, session.api_addr, "faults-kill", calls, generation)
                if why:
                    problems.append(why)
                    break
            proc = session.network.switches[0].process
            if proc is None or proc.poll() is not None:
                problems.append("the switch process is not running: nothing to kill")
                break
            now = _generation(JobApiClient(session.api_addr, timeout=2.0), "faults-kill")
            generation = now if now is not None else generation
            os.kill(proc.pid, signal.SIGKILL)
            kill_times.append(time.time())
            kill_after.append(min(_done(r) for r in runs))
            read_available(runs, 0.5)
        follow(runs, timeout=300)
        watch.stop()
        results = [r.result for r in runs if r.result]
        errors = [f"{r.host}: {r.error}" for r in runs if r.error or not r.result]
        doc["errors"] = problems + errors
        exact = [bool(r.get("exact")) for r in results]
        doc["lost_or_wrong_calls"] = (calls * (WORKERS - len(results))) + sum(calls for e in exact if not e)
        doc["kills"] = [_kill_figures(results, t, watch.ok_since(t)) for t in kill_times]
        switch_times = [t for r in results for s, t in zip(r["call_starts"], r["allreduce_s"], strict=True)
                        if kill_times and s + t <= kill_times[0]]
        doc["switch_call_s"] = round(statistics.median(switch_times), 4) if switch_times else None
        # slots exhausted: another job holds every slot. The job above may have finished on the host
        # fallback while the switch was still being restarted: wait until it serves again
        hog = JobApiClient(session.api_addr)
        deadline = time.monotonic() + 60
        while True:
            try:
                health = hog.health()
                if health.get("ok"):
                    hog.create("faults-hog", 1, slots=health["slots"]["free"])
                    break
            except JobApiError:
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise RuntimeError("the switch did not serve again within 60 s of the last kill")
            time.sleep(0.2)
        runs = _start(session, hosts, "faults-noslots", max(5, calls // 5), elements, slots=None)
        follow(runs, timeout=300)
        res = [r.result for r in runs if r.result]
        fb_times = [t for r in res for t in r["allreduce_s"]]
        doc["slots_exhausted"] = {
            "calls": max(5, calls // 5), "exact": bool(res) and len(res) == WORKERS and all(r["exact"] for r in res),
            "on_fallback": bool(res) and all(r["calls_by_path"]["switch"] == 0 for r in res),
            "fallback_call_s": round(statistics.median(fb_times), 4) if fb_times else None,
            "errors": [f"{r.host}: {r.error}" for r in runs if r.error or not r.result]}
        try:
            hog.end("faults-hog")
        except JobApiError:
            pass
    finally:
        net.stop()
    _verdict(doc)
    return doc


def _verdict(doc: dict[str, Any]) -> None:
    """Each target next to its figure: met or not."""
    kills = [k for k in doc.get("kills", []) if "error" not in k]
    met = {"no lost or wrong call": doc.get("lost_or_wrong_calls") == 0 and not doc.get("errors")}
    if kills:
        met["detection <= 1.5 s"] = all(k["detect_last_s"] <= TARGETS["detection_s"] for k in kills)
        met["redone call <= detection + 2x gloo"] = all(
            k["redo_call_s"] is not None and k["gloo_call_s"] is not None
            and k["redo_call_s"] <= k["detect_last_s"] + 2 * k["gloo_call_s"] for k in kills)
        met["back on the switch within 2 calls of the restore"] = all(
            k["back_on_switch"] and k["back_after_restore_calls"] is not None
            and k["back_after_restore_calls"] <= TARGETS["back_within_calls"] for k in kills)
    doc["met"] = met


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.bench.faults", description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print one JSON document (the bench's section)")
    p.add_argument("--quick", action="store_true",
                   help=f"{QUICK[0]} calls of {QUICK[1]} elements, {QUICK[2]} s apart")
    p.add_argument("--calls", type=int, default=FULL[0], help=f"allreduce calls in the killed run (default {FULL[0]})")
    p.add_argument("--elements", type=int, default=FULL[1], help=f"int32 elements per call (default {FULL[1]})")
    p.add_argument("--pause", type=pause_seconds, default=None, metavar="SECONDS",
                   help="seconds between the killed run's calls, a training step's compute (0..60; default "
                        f"{FULL[2]}, {QUICK[2]} with --quick)")
    p.add_argument("--program", default=None, help="the aggregation program's BMv2 JSON (default: the bench's)")
    args = p.parse_args(argv)
    if args.calls < 8:
        p.error(f"--calls {args.calls}: at least 8 (a fifth before the first kill)")
    if not 1 <= args.elements <= 64_000_000:
        p.error(f"--elements {args.elements}: 1..64000000")
    if os.geteuid() != 0:
        p.error("the faults section runs Mininet: run it as root")
    calls, elements, pause = QUICK if args.quick else (args.calls, args.elements, FULL[2])
    if args.pause is not None:
        pause = args.pause
    if args.program is not None and not os.path.isfile(args.program):
        p.error(f"--program {args.program}: not found")
    doc = run(calls, elements, pause, program=args.program)
    print(json.dumps(doc) if args.json else json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
