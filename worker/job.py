"""Joining a job through the controller's job API (docs/job-api.md) and keeping the lease.

A worker needs only the controller's address and the job name; :class:`JobSession` joins (creating
the job if the controller allows it), waits until every rank has joined, turns the job description
into :class:`~worker.streaming.JobParams`, heartbeats every ``lease_s / 3`` seconds in the
background, and leaves on :meth:`close`.
"""
from __future__ import annotations

import threading

from p4reduce.protocol.job_api import JOB_NAME, JobApiClient, JobApiError

from .streaming import JobParams


class JobJoinError(RuntimeError):
    """The worker could not join (or stay in) the job; the message says why and where."""


def job_params(job: dict, rank: int, switch_addr: tuple[str, int] | None = None) -> JobParams:
    """JobParams from a job-API Job object (``switch_addr`` overrides where packets go)."""
    try:
        ip, port = switch_addr or (job["switch"]["ip"], int(job["switch"]["udp_port"]))
        return JobParams(job_id=int(job["job_id"]), rank=int(rank), n_workers=int(job["workers"]),
                         slot_count=int(job["slots"]["count"]), switch_ip=ip, switch_port=int(port),
                         sparse=job.get("mode", "dense") == "sparse", lanes=int(job.get("lanes", 32)),
                         name=str(job["name"]))
    except (KeyError, TypeError, ValueError) as e:
        raise JobJoinError(f"the controller's job description lacks or garbles {e}: {job!r}") from None


class JobSession:
    """One rank's membership of a job."""

    def __init__(self, controller: str, name: str, udp_port: int | None = None, ip: str | None = None,
                 rank: int | None = None, workers: int | None = None, mode: str | None = None,
                 slots: int | None = None, wait_timeout: float = 60.0, timeout: float = 10.0):
        if not isinstance(name, str) or not JOB_NAME.fullmatch(name):
            raise JobJoinError(f"job name {name!r} is invalid: it must match [A-Za-z0-9_.-]{{1,64}}")
        self.controller = controller
        self.name = name
        self.client = JobApiClient(controller, timeout=timeout)
        try:
            info = self.client.join(name, rank=rank, ip=ip, udp_port=udp_port, workers=workers,
                                    mode=mode, slots=slots)
            self.rank = int(info["rank"])
            job = info["job"]
            if job.get("state") != "running":
                job = self.client.wait_running(name, timeout=wait_timeout)
        except JobApiError as e:
            where = f" (field {e.field!r})" if e.field else ""
            raise JobJoinError(f"cannot join job {name!r} at controller {controller}: {e.code}{where}: "
                               f"{e.message}") from None
        self.job = job
        self.lease_s = float(job.get("lease_s", 10.0))
        self.ended: str | None = None
        self._stop = threading.Event()
        self._hb = threading.Thread(target=self._heartbeat, name=f"heartbeat-{name}-{self.rank}", daemon=True)
        self._hb.start()

    def params(self, switch_addr: tuple[str, int] | None = None) -> JobParams:
        return job_params(self.job, self.rank, switch_addr)

    def _heartbeat(self) -> None:
        period = max(self.lease_s / 3, 0.05)
        while not self._stop.wait(period):
            try:
                self.client.heartbeat(self.name, self.rank)
            except JobApiError as e:
                if e.code in ("job_ended", "no_such_job", "no_such_rank"):
                    self.ended = f"{e.code}: {e.message}"
                    return
                # unreachable controller: keep trying; the lease decides

    def close(self, leave: bool = True) -> None:
        self._stop.set()
        if leave and self.ended is None:
            try:
                self.client.leave(self.name, self.rank)
            except JobApiError:
                pass
