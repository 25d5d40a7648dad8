"""The job API: HTTP/JSON over the standard library's http.server, run in a thread.

Routes requests to the JobManager; every failure becomes a JSON error with a stable code and an
HTTP status (docs/job-api.md). Request bodies are validated field by field; unknown fields are
rejected so typos do not pass silently.
"""
import json
import logging
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

from p4reduce.controller.errors import BadRequest, ControllerError, NotFound
from p4reduce.protocol.job_api import DEFAULT_PORT

log = logging.getLogger("p4reduce.controller.api")

API_VERSION = "1"
MAX_BODY = 64 * 1024

CREATE_FIELDS = {"name", "workers", "mode", "slots", "lease_s"}
JOIN_FIELDS = {"rank", "ip", "udp_port", "mac", "workers", "mode", "slots", "switch_port"}
RANK_FIELDS = {"rank"}


def _fields(body, allowed, required=()):
    for key in body:
        if key not in allowed:
            raise BadRequest(f"unknown field '{key}' (allowed: {', '.join(sorted(allowed))})", field=key)
    for key in required:
        if key not in body:
            raise BadRequest(f"field '{key}': required", field=key)
    return body


class JobApi:
    """Routing table from (method, path) to JobManager calls; independent of HTTP plumbing."""

    ROUTES: ClassVar[list[tuple[str, re.Pattern, str]]] = [
        ("GET", re.compile(r"^/v1/health$"), "health"),
        ("GET", re.compile(r"^/v1/jobs$"), "list_jobs"),
        ("POST", re.compile(r"^/v1/jobs$"), "create_job"),
        ("GET", re.compile(r"^/v1/jobs/(?P<name>[^/]+)$"), "get_job"),
        ("DELETE", re.compile(r"^/v1/jobs/(?P<name>[^/]+)$"), "end_job"),
        ("POST", re.compile(r"^/v1/jobs/(?P<name>[^/]+)/join$"), "join"),
        ("POST", re.compile(r"^/v1/jobs/(?P<name>[^/]+)/heartbeat$"), "heartbeat"),
        ("POST", re.compile(r"^/v1/jobs/(?P<name>[^/]+)/leave$"), "leave"),
    ]

    def __init__(self, manager, switches=()):
        self.manager = manager
        self.switches = list(switches)  # SwitchConnection objects, for /health

    def dispatch(self, method, path, body, peer_ip):
        """(status, json_object) for one request."""
        path = path.split("?", 1)[0].rstrip("/") or "/"
        allowed = []
        for m, pattern, handler in self.ROUTES:
            match = pattern.match(path)
            if match:
                if m != method:
                    allowed.append(m)
                    continue
                params = {k: urllib.parse.unquote(v) for k, v in match.groupdict().items()}
                return getattr(self, handler)(body, peer_ip, **params)
        if allowed:
            raise ControllerError(f"{method} is not allowed on {path} (use {', '.join(allowed)})",
                                  code="method_not_allowed", http_status=405)
        raise NotFound(f"no such endpoint: {method} {path} (see docs/job-api.md)")

    def health(self, body, peer):
        pool = self.manager.pool
        return 200, {"ok": True,
                     "switches": [{"name": c.name, "grpc_addr": c.grpc_addr, "primary": c.primary}
                                  for c in self.switches],
                     "slots": {"total": pool.total, "free": pool.free}}

    def list_jobs(self, body, peer):
        return 200, {"jobs": self.manager.list()}

    def create_job(self, body, peer):
        _fields(body, CREATE_FIELDS, required=("name",))
        job, created = self.manager.create(body["name"], body.get("workers"), body.get("mode"),
                                           body.get("slots"), body.get("lease_s"))
        return (201 if created else 200), job

    def get_job(self, body, peer, name):
        return 200, self.manager.status(name)

    def end_job(self, body, peer, name):
        return 200, self.manager.end(name)

    def join(self, body, peer, name):
        _fields(body, JOIN_FIELDS)
        rank, job = self.manager.join(name, ip=body.get("ip"), udp_port=body.get("udp_port"),
                                      mac=body.get("mac"), rank=body.get("rank"), workers=body.get("workers"),
                                      mode=body.get("mode"), slots=body.get("slots"), peer_ip=peer,
                                      switch_port=body.get("switch_port"))
        return 200, {"rank": rank, "job": job}

    def heartbeat(self, body, peer, name):
        _fields(body, RANK_FIELDS, required=("rank",))
        return 200, self.manager.heartbeat(name, body["rank"])

    def leave(self, body, peer, name):
        _fields(body, RANK_FIELDS, required=("rank",))
        return 200, self.manager.leave(name, body["rank"])


class _Handler(BaseHTTPRequestHandler):
    server_version = "p4reduce-controller"
    protocol_version = "HTTP/1.1"

    def _answer(self, status, obj):
        data = (json.dumps(obj, indent=None) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-P4reduce-Api", API_VERSION)
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = self.headers.get("Content-Length")
        if length is None:
            return {}
        try:
            length = int(length)
        except ValueError:
            raise BadRequest("bad Content-Length header", code="bad_json") from None
        if length > MAX_BODY:
            self.rfile.read(min(length, 4 * MAX_BODY))
            raise ControllerError(f"request body of {length} bytes is over the {MAX_BODY}-byte limit",
                                  code="too_large", http_status=413)
        raw = self.rfile.read(length)
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise BadRequest(f"request body is not valid JSON: {e}", code="bad_json") from None
        if not isinstance(body, dict):
            raise BadRequest(f"request body must be a JSON object, got {type(body).__name__}", code="bad_json")
        return body

    def _handle(self, method):
        try:
            body = self._body() if method in ("POST", "DELETE") else {}
            status, obj = self.server.api.dispatch(method, self.path, body, self.client_address[0])
        except ControllerError as e:
            status, obj = e.http_status, e.to_json()
        except Exception as e:  # a bug must still answer JSON, and be logged with its traceback
            log.exception("job API: %s %s failed", method, self.path)
            status, obj = 500, {"error": {"code": "internal", "message": f"{type(e).__name__}: {e}"}}
        self._answer(status, obj)

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_DELETE(self):
        self._handle("DELETE")

    def do_PUT(self):
        self._handle("PUT")

    def log_message(self, fmt, *args):
        log.debug("%s %s", self.client_address[0], fmt % args)


class _BackloggedHTTPServer(ThreadingHTTPServer):
    """A whole job's workers join at once: the default listen backlog (5) would drop their SYNs."""
    request_queue_size = 128


class JobApiServer:
    """The HTTP server in a daemon thread. `address` is (host, port); port 0 picks a free one."""

    def __init__(self, api, address=("0.0.0.0", DEFAULT_PORT)):
        self.httpd = _BackloggedHTTPServer(address, _Handler)
        self.httpd.daemon_threads = True
        self.httpd.api = api
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="job-api", daemon=True)

    @property
    def address(self):
        host, port = self.httpd.server_address[:2]
        return f"{host}:{port}"

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)
