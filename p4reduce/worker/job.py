"""Joining a job through the controller's job API (docs/job-api.md) and keeping the lease.

A worker needs the controller's address, the job name and the job's credential (``credential=``,
else the environment's ``P4REDUCE_JOB_CREDENTIAL``; inside a Mininet topology the job-API relay adds
it for the hosts the job was granted to). :class:`JobSession` joins (creating the job if the
controller allows it), waits until every rank has joined -- renewing its lease while it waits, so
peers may start late -- turns the job description into :class:`JobParams` (the job as the UDP loop,
worker/streaming.py, speaks to the switch), heartbeats every ``lease_s / 3`` seconds in the
background, and leaves on :meth:`close`.
"""
from __future__ import annotations

import ipaddress
import os
import socket
import threading
import time
from dataclasses import dataclass, field

from p4reduce.protocol import constants as C
from p4reduce.protocol.job_api import JOB_NAME, JOB_NAME_RULE, JobApiClient, JobApiError
from p4reduce.protocol.wire import Layout, WireError

CREDENTIAL_ENV = "P4REDUCE_JOB_CREDENTIAL"   # where a worker finds its job credential when not given one


@dataclass
class JobParams:
    """Everything a worker needs to talk to the switch for one job (from the job API).

    `lanes` and `subblock` (keyword only) are required: they are the layout of the program the
    switch runs (the job API's `lanes`/`subblock`), and a worker that guessed them would build
    packets the switch drops."""

    job_id: int
    rank: int
    n_workers: int
    slot_count: int
    switch_ip: str
    switch_port: int = C.AGG_UDP_PORT   # a protocol constant (docs/protocol.md section 2), not a build setting
    sparse: bool = False
    lanes: int = field(kw_only=True)
    subblock: int = field(kw_only=True)
    name: str = ""
    wire_token: int = 0        # the job's secret in every packet header (docs/protocol.md section 10)

    def describe(self) -> str:
        return f"job {self.name or '?'} (id {self.job_id}) rank {self.rank}"


class JobJoinError(RuntimeError):
    """The worker could not join (or stay in) the job; the message says why and where."""


def _answer_int(answer: dict, field: str) -> int:
    value = answer.get(field)
    if isinstance(value, bool) or not isinstance(value, int):
        raise JobJoinError(f"the controller's answer has no integer {field!r}: {answer!r}")
    return value


def _lease(job: dict) -> float:
    try:
        lease = float(job.get("lease_s", 10.0))
    except (TypeError, ValueError):
        lease = float("nan")
    if not 0.05 <= lease <= 86400:
        raise JobJoinError(f"the controller's job description has an unusable lease_s: {job.get('lease_s')!r}")
    return lease


def check_switch_addr(switch_addr: tuple[str, int]) -> tuple[str, int]:
    """`switch_addr` (the worker's --switch HOST:PORT) as (IPv4, port): a host name is resolved;
    an address that cannot be resolved or reached is a JobJoinError saying so."""
    host, port = switch_addr
    where = f"--switch {host}:{port}"
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise JobJoinError(f"{where}: the port must be in 1..65535")
    try:
        infos = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_DGRAM)
    except (socket.gaierror, UnicodeError) as e:
        raise JobJoinError(f"{where}: cannot resolve {host!r} to an IPv4 address "
                           f"({getattr(e, 'strerror', None) or e})") from None
    ip = str(infos[0][4][0])
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((ip, port))          # UDP: no packet sent; fails only without a route
    except OSError as e:
        raise JobJoinError(f"{where}: the switch is unreachable from this host ({e.strerror or e})") from None
    finally:
        probe.close()
    return ip, port


def job_params(job: dict, rank: int, switch_addr: tuple[str, int] | None = None) -> JobParams:
    """JobParams from a job-API Job object (``switch_addr`` overrides where packets go); a
    description a worker cannot run (no slots, no workers, a rank outside the job, a bad address)
    is a JobJoinError naming the field."""
    if not isinstance(job, dict):
        raise JobJoinError(f"the controller's job description is not a JSON object: {job!r}")
    if switch_addr is not None:
        switch_addr = check_switch_addr(switch_addr)
    try:
        ip, port = switch_addr or (job["switch"]["ip"], int(job["switch"]["udp_port"]))
        # the packet layout the controller read from the program the switch runs
        params = JobParams(job_id=int(job["job_id"]), rank=int(rank), n_workers=int(job["workers"]),
                           slot_count=int(job["slots"]["count"]), switch_ip=ip, switch_port=int(port),
                           sparse=job.get("mode", "dense") == "sparse", lanes=int(job["lanes"]),
                           subblock=int(job["subblock"]), name=str(job["name"]),
                           wire_token=_wire_token(job))
    except (KeyError, TypeError, ValueError) as e:
        raise JobJoinError(f"the controller's job description lacks or garbles {e}: {job!r}") from None
    _check_params(params)
    return params


def _wire_token(job: dict) -> int:
    """The job's wire token: the controller gives it only to callers holding the job's credential."""
    wire_token = job.get("wire_token")
    if wire_token is None:
        raise JobJoinError("the controller's job description has no wire_token: it is given only to "
                           "requests that present the job's credential (or the admin credential)")
    if isinstance(wire_token, bool) or not isinstance(wire_token, int) or not 0 <= wire_token <= 0xFFFFFFFF:
        raise JobJoinError(f"the controller's job description is unusable: wire_token is {wire_token!r}, "
                           "expected 0..4294967295")
    return wire_token


def _check_params(p: JobParams) -> None:
    def bad(field, value, want):
        raise JobJoinError(f"the controller's job description is unusable: {field} is {value!r}, "
                           f"expected {want}")
    if not 0 <= p.job_id <= 0xFFFF:
        bad("job_id", p.job_id, "0..65535")
    if not 1 <= p.n_workers <= 255:
        bad("workers", p.n_workers, "1..255")
    if not 0 <= p.rank < p.n_workers:
        bad("rank", p.rank, f"0..{p.n_workers - 1}")
    if not 0 <= p.slot_count <= 0x7FFF:
        bad("slots.count", p.slot_count, "0..32767 (0: admitted without slots, on the host fallback)")
    if not 1 <= p.switch_port <= 65535:
        bad("switch.udp_port", p.switch_port, "1..65535")
    try:
        Layout(p.lanes, p.subblock)
    except WireError as e:
        bad("lanes/subblock", (p.lanes, p.subblock), f"a packet layout the protocol allows ({e})")
    try:
        ipaddress.IPv4Address(p.switch_ip)
    except (ipaddress.AddressValueError, ValueError):
        bad("switch.ip", p.switch_ip, "an IPv4 address")


class JobSession:
    """One rank's membership of a job."""

    def __init__(self, controller: str, name: str, udp_port: int | None = None, ip: str | None = None,
                 rank: int | None = None, workers: int | None = None, mode: str | None = None,
                 slots: int | None = None, wait_timeout: float = 60.0, timeout: float = 10.0,
                 credential: str | None = None):
        if not isinstance(name, str) or not JOB_NAME.fullmatch(name):
            raise JobJoinError(f"job name {name!r} is invalid: it must be {JOB_NAME_RULE}")
        self.controller = controller
        self.name = name
        try:
            self.client = JobApiClient(controller, timeout=timeout,
                                       credential=credential or os.environ.get(CREDENTIAL_ENV) or None)
        except ValueError as e:
            raise JobJoinError(str(e)) from None
        try:
            info = self.client.join(name, rank=rank, ip=ip, udp_port=udp_port, workers=workers,
                                    mode=mode, slots=slots)
            self.rank = _answer_int(info, "rank")
            job = info.get("job")
            if not isinstance(job, dict):
                raise JobJoinError(f"the controller's join answer has no job description: {info!r}")
            self.lease_s = _lease(job)
            if job.get("state") != "running":
                job = self._wait_running(wait_timeout)
        except JobApiError as e:
            self._give_up()
            where = f" (field {e.field!r})" if e.field else ""
            raise JobJoinError(f"cannot join job {name!r} at controller {controller}: {e.code}{where}: "
                               f"{e.message}") from None
        except BaseException:      # a garbled answer, Ctrl-C while waiting: the rank is given back too
            self._give_up()
            raise
        self.job = job
        self.lease_s = _lease(job)
        self.ended: str | None = None
        # where this rank's calls run, told in every heartbeat (Agent: the host fallback), and the
        # controller's latest answer: its job generation and whether the switch serves the job
        self.path, self.path_reason, self.left_generation = "switch", "", 0
        self.generation = int(job.get("generation", 0)) if isinstance(job.get("generation", 0), int) else 0
        self.switch_serving = True
        self._path_told = True
        self._beat_now = threading.Event()
        self._stop = threading.Event()
        self._hb = threading.Thread(target=self._heartbeat, name=f"heartbeat-{name}-{self.rank}", daemon=True)
        self._hb.start()

    def _give_up(self) -> None:
        """Leave the job when this worker stops before it ran (gave up waiting for its peers, or
        failed): its rank is free at once instead of lingering until its lease expires."""
        rank = getattr(self, "rank", None)
        if rank is None:
            return
        try:
            self.client.leave(self.name, rank)
        except JobApiError:
            pass

    def _wait_running(self, timeout: float, poll: float = 0.2) -> dict:
        """The job's description once every rank has joined. Waiting renews this rank's lease
        (the heartbeat is the poll), so a peer that starts later than the lease finds the job. A
        controller that does not answer for a while (restarted by `make run`'s supervisor, which
        resumes its jobs) is waited for, up to the lease; the rank is the controller's still."""
        deadline = time.monotonic() + timeout
        period = min(poll, self.lease_s / 3)
        beat: dict = {}
        unreachable_since: float | None = None
        while True:
            try:
                beat = self.client.heartbeat(self.name, self.rank)
                if beat.get("state") == "running":
                    return self.client.job(self.name)
                unreachable_since = None
            except JobApiError as e:
                if e.code != "unreachable":
                    raise
                now = time.monotonic()
                unreachable_since = now if unreachable_since is None else unreachable_since
                if now - unreachable_since > self.lease_s or now >= deadline:
                    raise
            if time.monotonic() >= deadline:
                raise JobApiError(None, "timeout", f"job {self.name!r}: {beat.get('joined', '?')}/"
                                  f"{beat.get('workers', '?')} workers joined after {timeout:g} s")
            time.sleep(period)

    def params(self, switch_addr: tuple[str, int] | None = None) -> JobParams:
        return job_params(self.job, self.rank, switch_addr)

    def report_path(self, path: str, reason: str = "") -> None:
        """Tell the controller (in the next heartbeat, sent now) where this rank's calls run. Off the
        switch, heartbeats go four times a second, so the rank learns soon that it may return."""
        if path == "fallback":
            self.left_generation = self.generation
        self.path, self.path_reason = path, reason
        self._path_told = False
        self._beat_now.set()

    def switch_ready(self) -> bool:
        """On the fallback: the controller has re-armed the job on the switch since this rank left it."""
        return self.switch_serving and self.generation > self.left_generation

    def _heartbeat(self) -> None:
        slow = max(self.lease_s / 3, 0.05)
        while not self._stop.is_set():
            self._beat_now.wait(slow if self.path == "switch" else min(slow, 0.25))
            self._beat_now.clear()
            if self._stop.is_set():
                return
            try:
                path = self.path
                if path == "switch" and self._path_told:
                    answer = self.client.heartbeat(self.name, self.rank)
                else:      # on the fallback, every beat says so; the return is told once
                    answer = self.client.heartbeat(self.name, self.rank, path, self.path_reason,
                                                   self.left_generation)
                    if self.path == path:
                        self._path_told = True
                generation = answer.get("generation")
                if isinstance(generation, int) and not isinstance(generation, bool) and generation != self.generation:
                    if self.path == "fallback":    # re-armed: the job's new wire token (and slots) first
                        self.job = self.client.job(self.name)
                    self.generation = generation
                self.switch_serving = answer.get("switch_serving", True) is not False
            except JobApiError as e:
                if e.code in ("job_ended", "no_such_job", "no_such_rank"):
                    self.ended = f"{e.code}: {e.message}"
                    return
                # unreachable controller: keep trying; the lease decides

    def _peer_view(self) -> tuple[float, dict[int, float], int] | str | None:
        """The controller's view of the job's members: (lease, {rank: seconds since its last
        heartbeat}, workers); the controller's reason (a str) when it has ended the job; None when
        it cannot be asked or its answer is unusable."""
        if self.ended:
            return f"the controller says: {self.ended}"
        try:
            job = self.client.job(self.name)
        except JobApiError as e:
            if e.code in ("job_ended", "no_such_job"):
                return f"the controller says: {e.code}: {e.message}"
            return None
        try:
            lease = float(job.get("lease_s", self.lease_s))
            members = {int(m["rank"]): float(m.get("last_seen_s", 0.0)) for m in job.get("members", [])}
            workers = int(job.get("workers", 0))
        except (TypeError, ValueError, KeyError, AttributeError):
            return None
        return lease, members, workers

    def who_stopped(self) -> str | None:
        """After a failed aggregation: which peer stopped, as the controller knows it. The
        controller's reason when it has ended the job (it names the ranks whose lease expired),
        else the ranks that left the job or whose heartbeats stopped (silent for over a third of
        the lease: a live worker beats three times per lease); None when every peer is alive or
        the controller cannot be asked."""
        view = self._peer_view()
        if not isinstance(view, tuple):
            return view
        lease, members, workers = view
        missing = [r for r in range(workers) if r not in members and r != self.rank]
        silent = sorted((r, age) for r, age in members.items() if r != self.rank and age > max(lease / 3, 0.2))
        parts = []
        if missing:
            parts.append(f"rank{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} left the job")
        if silent:
            parts.append("; ".join(f"rank {r} stopped: no heartbeat for {age:.1f} s (the controller ends the "
                                   f"job after {lease:g} s)" for r, age in silent))
        return "; ".join(parts) or None

    def peers_alive(self, ranks: list[int]) -> bool:
        """True only when the controller confirms that every rank of `ranks` is still a member
        that heartbeats (its last beat under two thirds of the lease ago: a live worker beats three
        times per lease): a peer that is late (a long evaluation or checkpoint between calls), not
        one that stopped. False when it cannot be asked."""
        view = self._peer_view()
        if not isinstance(view, tuple):
            return False
        lease, members, _ = view
        return all(r in members and members[r] < max(2 * lease / 3, 0.5) for r in ranks)

    def close(self, leave: bool = True) -> None:
        self._stop.set()
        self._beat_now.set()
        if leave and self.ended is None:
            try:
                self.client.leave(self.name, self.rank)
            except JobApiError:
                pass
