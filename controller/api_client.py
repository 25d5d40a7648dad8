"""A job API client using only the standard library, for worker agents and scripts.

    client = JobApiClient("10.0.0.100:8090")
    info = client.join("resnet-1")          # {"rank": 0, "job": {...}}
    client.wait_running("resnet-1")
    client.heartbeat("resnet-1", info["rank"])

Errors from the controller raise JobApiError with the API's `code`, `message`, `field` and HTTP
`status`; an unreachable controller raises JobApiError with code "unreachable".
"""
import json
import time
import urllib.error
import urllib.parse
import urllib.request

DEFAULT_PORT = 8090


class JobApiError(Exception):
    def __init__(self, status, code, message, field=None):
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message, self.field = status, code, message, field


def _quoted(name):
    """A job name as one URL path segment: any character is allowed, the server validates it."""
    return urllib.parse.quote(str(name), safe="")


class JobApiClient:
    def __init__(self, address, timeout=10.0):
        """`address`: HOST:PORT, HOST (port 8090) or an http:// URL."""
        url = urllib.parse.urlsplit(address if "://" in address else f"http://{address}")
        if url.scheme != "http" or not url.hostname:
            raise ValueError(f"controller address {address!r}: expected HOST:PORT or http://HOST:PORT")
        host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname
        self.base = f"http://{host}:{url.port or DEFAULT_PORT}/v1"
        self.timeout = timeout

    def request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as e:
            try:
                err = json.loads(e.read()).get("error", {})
            except ValueError:
                err = {}
            raise JobApiError(e.code, err.get("code", "http_error"), err.get("message", str(e)),
                              err.get("field")) from None
        except (urllib.error.URLError, OSError) as e:
            raise JobApiError(None, "unreachable", f"controller at {self.base}: {e}") from None

    def health(self):
        return self.request("GET", "/health")

    def jobs(self):
        return self.request("GET", "/jobs")["jobs"]

    def create(self, name, workers, mode=None, slots=None, lease_s=None):
        body = {"name": name, "workers": workers}
        body.update({k: v for k, v in (("mode", mode), ("slots", slots), ("lease_s", lease_s)) if v is not None})
        return self.request("POST", "/jobs", body)

    def job(self, name):
        return self.request("GET", f"/jobs/{_quoted(name)}")

    def join(self, name, **fields):
        return self.request("POST", f"/jobs/{_quoted(name)}/join", {k: v for k, v in fields.items() if v is not None})

    def heartbeat(self, name, rank):
        return self.request("POST", f"/jobs/{_quoted(name)}/heartbeat", {"rank": rank})

    def leave(self, name, rank):
        return self.request("POST", f"/jobs/{_quoted(name)}/leave", {"rank": rank})

    def end(self, name):
        return self.request("DELETE", f"/jobs/{_quoted(name)}")

    def wait_running(self, name, timeout=60.0, poll=0.2):
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
