"""The client of the controller's job API (docs/job-api.md), standard library only: for worker
agents, the topology tools, the controller's own CLI and shell, and scripts.

    client = JobApiClient("10.0.0.100:8090")
    job = client.create("resnet-1", 4)      # the Job, with its job credential: job["credential"]
    info = client.join("resnet-1")          # {"rank": 0, "job": {...}}
    client.wait_running("resnet-1")
    client.heartbeat("resnet-1", info["rank"])

Changing a job needs its job credential (or the controller's admin credential), sent as
`Authorization: Bearer CREDENTIAL` (docs/job-api.md, "Security model"). A client presents the credential it
was given (`credential=`, e.g. the admin credential or a job credential handed to a worker), and remembers the
credential of every job it creates, so the creator needs nothing more; `credentials` maps names to them.

Errors from the controller raise JobApiError with the API's `code`, `message`, `field` and HTTP
`status`; an unreachable controller raises JobApiError with code "unreachable".
"""
from __future__ import annotations

import http.client
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from p4reduce.protocol.credentials import credential_problem

DEFAULT_PORT = 8090
MAX_ANSWER = 32 << 20        # the largest answer read from a controller
# a job name, whole (JOB_NAME.fullmatch): no "." or "..", nothing a path or a log line could misread
JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
JOB_NAME_RULE = "1 to 64 characters [A-Za-z0-9_.-], the first a letter or a digit"


class JobApiError(RuntimeError):
    """A request the controller refused (`status`, `code`, `message`, `field` from its JSON error)
    or could not answer (code "unreachable", status None)."""

    def __init__(self, status: int | None, code: str, message: str, field: str | None = None):
        code, message = _printable(code, 64), _printable(message, 1000)
        field = None if field is None else _printable(field, 64)
        super().__init__(f"{code}: {message}" + (f" (HTTP {status})" if status is not None else ""))
        self.status, self.code, self.message, self.field = status, code, message, field


def _printable(text: object, limit: int) -> str:
    """What a controller said, safe to print: control characters (terminal escapes) replaced, and
    cut to `limit` characters."""
    text = str(text)
    cut = "".join(c if c.isprintable() else "?" for c in text[:limit])
    return cut + ("..." if len(text) > limit else "")


def _quoted(name: str) -> str:
    """A job name as one URL path segment: any character is allowed, the server validates it."""
    return urllib.parse.quote(str(name), safe="")


class JobApiClient:
    def __init__(self, address: str, timeout: float = 10.0, credential: str | None = None):
        """`address`: HOST:PORT, HOST (port 8090) or an http:// URL; `credential`: presented for every
        job this client has no credential of its own for (a job credential, or the admin credential)."""
        url = urllib.parse.urlsplit(address if "://" in address else f"http://{address}")
        if url.scheme != "http" or not url.hostname:
            raise ValueError(f"controller address {address!r}: expected HOST:PORT or http://HOST:PORT")
        host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname
        try:
            port = url.port or DEFAULT_PORT
        except ValueError:
            raise ValueError(f"controller address {address!r}: the port must be a number in 1..65535") from None
        self.base = f"http://{host}:{port}/v1"
        self.timeout = timeout
        if credential is not None and (problem := credential_problem(credential)) is not None:
            raise ValueError(problem)
        self.credential = credential
        self.credentials: dict[str, str] = {}   # job name -> the job credential this client was given

    def credential_for(self, name: str) -> str | None:
        return self.credentials.get(name, self.credential)

    def _remember(self, name: str, answer: Any) -> Any:
        if isinstance(answer, dict) and isinstance(answer.get("credential"), str):
            self.credentials[name] = answer["credential"]
        return answer

    def request(self, method: str, path: str, body: dict[str, Any] | None = None,
                credential: str | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if credential is not None:
            problem = credential_problem(credential)
            if problem is not None:
                raise JobApiError(None, "bad_credential", problem)
            headers["Authorization"] = f"Bearer {credential}"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                status, raw = resp.status, resp.read(MAX_ANSWER + 1)
        except urllib.error.HTTPError as e:
            try:
                err = json.loads(e.read(MAX_ANSWER)).get("error", {})
                if not isinstance(err, dict):
                    err = {}
            except (ValueError, AttributeError, OSError):
                err = {}
            raise JobApiError(e.code, err.get("code", "http_error"), err.get("message", str(e)),
                              err.get("field")) from None
        except (urllib.error.URLError, OSError) as e:
            raise JobApiError(None, "unreachable", f"controller at {self.base}: {e}") from None
        except http.client.HTTPException as e:   # something answered, but not HTTP
            raise JobApiError(None, "bad_answer", f"{method} {self.base}{path}: the answer is not HTTP "
                              f"({type(e).__name__}: {str(e)[:100]})") from None
        if len(raw) > MAX_ANSWER:
            raise JobApiError(status, "bad_answer", f"{method} {self.base}{path}: the answer is over "
                              f"{MAX_ANSWER} bytes")
        try:
            answer = json.loads(raw or b"{}")
        except (ValueError, RecursionError):
            raise JobApiError(status, "bad_answer", f"{method} {self.base}{path}: the answer is not JSON") from None
        if not isinstance(answer, dict):
            raise JobApiError(status, "bad_answer", f"{method} {self.base}{path}: the answer is not a JSON "
                              f"object but {type(answer).__name__}")
        return answer

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/health")

    def jobs(self) -> list[dict[str, Any]]:
        return self.request("GET", "/jobs")["jobs"]

    def create(self, name: str, workers: int, mode: str | None = None, slots: int | None = None,
               lease_s: float | None = None, aggregation: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "workers": workers}
        body.update({k: v for k, v in (("mode", mode), ("slots", slots), ("lease_s", lease_s),
                                       ("aggregation", aggregation)) if v is not None})
        return self._remember(name, self.request("POST", "/jobs", body, self.credential_for(name)))

    def job(self, name: str) -> dict[str, Any]:
        """The job's description; with its wire token when this client holds the job's credential."""
        return self.request("GET", f"/jobs/{_quoted(name)}", credential=self.credential_for(name))

    def join(self, name: str, **fields: Any) -> dict[str, Any]:
        body = {k: v for k, v in fields.items() if v is not None}
        return self._remember(name, self.request("POST", f"/jobs/{_quoted(name)}/join", body,
                                                 self.credential_for(name)))

    def heartbeat(self, name: str, rank: int, path: str | None = None, reason: str | None = None,
                  generation: int | None = None) -> dict[str, Any]:
        """Renew `rank`'s lease; `path` ("switch"/"fallback", with `reason` and the job generation it
        left the switch at) tells the controller where the rank's calls run."""
        body: dict[str, Any] = {"rank": rank}
        if path is not None:
            body.update({"path": path, "generation": generation})
            if reason:
                body["reason"] = reason[:500]
        return self.request("POST", f"/jobs/{_quoted(name)}/heartbeat", body, self.credential_for(name))

    def leave(self, name: str, rank: int) -> dict[str, Any]:
        return self.request("POST", f"/jobs/{_quoted(name)}/leave", {"rank": rank}, self.credential_for(name))

    def end(self, name: str) -> dict[str, Any]:
        return self.request("DELETE", f"/jobs/{_quoted(name)}", credential=self.credential_for(name))

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


def tree_text(job: dict[str, Any]) -> str:
    """A job description's aggregation tree (its `tree`: the controller's controller/aggregation_tree.py), one
    switch a line, the root last."""
    tree = job["tree"]
    lines = [f"{job.get('name', '?')}: aggregated as a tree rooted at {tree.get('root')}"]
    for name, node in (tree.get("switches") or {}).items():
        slots = node.get("slots") or {}
        span = f"[{slots.get('base')}, {slots.get('base', 0) + slots.get('count', 0)})" if slots else "?"
        up = f" -> {node['parent']} as rank {node.get('rank_at_parent')}" if node.get("parent") else " (root)"
        lines.append(f"  {name:<10} sums {', '.join(node.get('children', []))}; slots {span}{up}")
    return "\n".join(lines)
