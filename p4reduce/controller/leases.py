"""The lease reaper: ends jobs whose workers went silent (JobManager.reap), twice a second (a job
whose heartbeats are late is read on the switch at every pass: JobManager.sample_progress); the
time between passes beyond two periods is the controller's own stall, not counted against leases
(JobManager.watched)."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from p4reduce.controller.jobs import JobManager


class LeaseReaper:
    """Background thread calling JobManager.reap() every `period` seconds."""

    def __init__(self, manager: JobManager, period: float = 0.5):
        self.manager, self.period = manager, period
        manager.reap_period_s = period      # passes later than two periods are the controller's blind time
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-reaper", daemon=True)

    def start(self) -> LeaseReaper:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.manager.reap()
            except Exception as e:  # keep reaping; report the problem
                self.manager.log(f"lease reaper: {e}")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
