"""The client of the controller's job API (docs/job-api.md), standard library only: for worker
agents, the topology tools, the controller's own CLI and shell, and scripts.

    client = JobApiClient("10.0.0.100:8090")
    info = client.join("resnet-1")          # {"rank": 0, "job": {...}}
    client.wait_running("resnet-1")
    client.heartbeat("resnet-1", info["rank"])

Errors from the controller raise JobApiError with the API's `code`, `message`, `field` and HTTP
`status`; an unreachable controller raises JobApiError with code "unreachable".
"""
from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

DEFAULT_PORT = 8090
JOB_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")   # a job name, whole (JOB_NAME.fullmatch)


class JobApiError(RuntimeError):
    """A request the controller refused (`status`, `code`, `message`, `field` from its JSON error)
    or could not answer (code "unreachable", status None)."""

    def __init__(self, status: int | None, code: str, message: str, field: str | None = None):
        super().__init__(f"{code}: {message}" + (f" (HTTP {status})" if status is not None else ""))
        self.status, self.code, self.message, self.field = status, code, message, field


def _quoted(name: str) -> str:
    """A job name as one URL path segment: any character is allowed, the server validates it."""
    return urllib.parse.quote(str(name), safe="")


class JobApiClient:
    def __init__(self, address: str, timeout: float = 10.0):
        """`address`: HOST:PORT, HOST (port 8090) or an http:// URL."""
        url = urllib.parse.urlsplit(address if "://" in address else f"http://{address}")
        if url.scheme != "http" or not url.hostname:
            raise ValueError(f"controller address {address!r}: expected HOST:PORT or http://HOST:PORT")
        host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname
        self.base = f"http://{host}:{url.port or DEFAULT_PORT}/v1"
        self.timeout = timeout

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            try:
                err = json.loads(e.read()).get("error", {})
            except (ValueError, AttributeError):
                err = {}
            raise JobApiError(e.code, err.get("code", "http_error"), err.get("message", str(e)),
                              err.get("field")) from None
        except (urllib.error.URLError, OSError) as e:
            raise JobApiError(None, "unreachable", f"controller at {self.base}: {e}") from None
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            raise JobApiError(status, "bad_answer", f"{method} {self.base}{path}: the answer is not JSON") from None

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/health")

    def jobs(self) -> list[dict[str, Any]]:
        return self.request("GET", "/jobs")["jobs"]

    def create(self, name: str, workers: int, mode: str | None = None, slots: int | None = None,
               lease_s: float | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "workers": workers}
        body.update({k: v for k, v in (("mode", mode), ("slots", slots), ("lease_s", lease_s)) if v is not None})
        return self.request("POST", "/jobs", body)

    def job(self, name: str) -> dict[str, Any]:
        return self.request("GET", f"/jobs/{_quoted(name)}")

    def join(self, name: str, **fields: Any) -> dict[str, Any]:
        return self.request("POST", f"/jobs/{_quoted(name)}/join", {k: v for k, v in fields.items() if v is not None})

    def heartbeat(self, name: str, rank: int) -> dict[str, Any]:
        return self.request("POST", f"/jobs/{_quoted(name)}/heartbeat", {"rank": rank})

    def leave(self, name: str, rank: int) -> dict[str, Any]:
        return self.request("POST", f"/jobs/{_quoted(name)}/leave", {"rank": rank})

    def end(self, name: str) -> dict[str, Any]:
        return self.request("DELETE", f"/jobs/{_quoted(name)}")

    def wait_running(self, name: str, timeout: float = 60.0, poll: float = 0.2) -> dict[str, Any]:
        """The job's status once every rank has joined (JobApiError code 'timeout' otherwise)."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(name)
            if job["state"] == "running":
                return job
            if time.monotonic() >= deadline:
                raise JobApiError(None, "timeout", f"job {name!r}: {job['joined']}/{job['workers']} workers "
                                  f"joined after {timeout:g} s")
            time.sleep(poll)
