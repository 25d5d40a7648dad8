"""The lease reaper: ends jobs whose workers went silent (JobManager.reap), once a second."""
import threading


class LeaseReaper:
    """Background thread calling JobManager.reap() every `period` seconds."""

    def __init__(self, manager, period=1.0):
        self.manager, self.period = manager, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-reaper", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(self.period):
            try:
                self.manager.reap()
            except Exception as e:  # keep reaping; report the problem
                self.manager.log(f"lease reaper: {e}")

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)
