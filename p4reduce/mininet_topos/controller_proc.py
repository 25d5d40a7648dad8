"""Start the p4reduce controller (`python -m p4reduce.controller serve`) for a running network.

The controller runs in the root namespace beside the switches; it reads the topology description,
pushes the P4 pipeline over P4Runtime and serves the job API. We wait (bounded) until the API
answers /v1/health, and stop it by the PID we started.
"""
import subprocess
import sys
import time
from pathlib import Path

from p4reduce.mininet_topos.p4switch import log_tail
from p4reduce.mininet_topos.processes import stop_process
from p4reduce.protocol.job_api import DEFAULT_PORT, JobApiClient, JobApiError


class ControllerError(RuntimeError):
    pass


def health(api_addr: str, timeout: float = 1.0) -> dict | None:
    """The job API's /health answer, or None when no controller answers at api_addr."""
    try:
        return JobApiClient(api_addr, timeout=timeout).health()
    except JobApiError:
        return None


class ControllerProcess:
    def __init__(self, topology: str | Path, p4info: str | Path | None, bmv2_json: str | Path | None,
                 api_addr: str = f"127.0.0.1:{DEFAULT_PORT}", log_dir: str = "logs",
                 extra: list[str] | None = None, start_timeout: float = 60.0,
                 admin_credential_file: str | Path | None = None):
        self.api_addr = api_addr
        self.log_path = Path(log_dir) / "controller.log"
        self.admin_credential_file = admin_credential_file
        self.argv = [sys.executable, "-m", "p4reduce.controller", "serve", "--topology", str(topology),
                     "--api-addr", api_addr]
        if admin_credential_file is not None:   # read there, or created there (0600) by the controller
            self.argv += ["--admin-credential-file", str(admin_credential_file)]
        if p4info:
            self.argv += ["--p4info", str(p4info)]
        if bmv2_json:
            self.argv += ["--bmv2-json", str(bmv2_json)]
        self.argv += list(extra or [])
        self.start_timeout = start_timeout
        self.process: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self) -> "ControllerProcess":
        if health(self.api_addr):
            raise ControllerError(f"a controller already answers on {self.api_addr} "
                                  "(`make stop` ends a previous `make run`)")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._spawn("wb")
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ControllerError(f"the controller exited with status {self.process.returncode} "
                                      f"while starting\n{log_tail([self.log_path])}")
            if health(self.api_addr):
                return self
            time.sleep(0.2)
        self.stop()
        raise ControllerError(f"the controller's job API did not answer on {self.api_addr} within "
                              f"{self.start_timeout:.0f} s\n{log_tail([self.log_path])}")

    def _spawn(self, mode: str) -> subprocess.Popen:
        with open(self.log_path, mode) as log:
            log.write((" ".join(self.argv) + "\n").encode())
            log.flush()
            self.process = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        return self.process

    def restart(self) -> subprocess.Popen:
        """Start the controller again after it died, with the same command line (API address,
        state file, admin credential file) and the same log (appended). It resumes the jobs the
        switches run (controller/recovery.py). Does not wait for /v1/health: the supervisor watches."""
        if self.process is not None and self.process.poll() is None:
            raise ControllerError(f"the controller (pid {self.process.pid}) still runs")
        return self._spawn("ab")

    def stop(self) -> None:
        proc, self.process = self.process, None
        stop_process(proc)
