"""The job API: HTTP/JSON over the standard library's http.server, run in a thread.

Routes requests to the JobManager; every failure becomes a JSON error with a stable code and an
HTTP status (docs/job-api.md), including what http.server itself refuses (unknown methods,
malformed request lines). Request bodies are validated field by field; unknown fields are rejected
so typos do not pass silently. Changes to a job need a bearer credential (controller/auth.py).

Everything is bounded, since any caller may be hostile: connections at once and per source address,
the time a request may take to arrive (a slow sender is cut off), the header and body sizes, and the
numbers in a body. Connections that have not delivered a whole request are *waiting*: when a new
connection would pass a limit, the oldest waiting connection of the busiest source (or, past the
per-source limit, of the same source) is closed to make room, so idle or trickling connections can
never keep a caller that sends its request at once -- a worker's heartbeat -- out (issue #24).
A new connection is refused `503 busy` only when every connection it could displace is being
answered.
"""
from __future__ import annotations

import hmac
import json
import logging
import re
import select
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, ClassVar

from p4reduce.controller.auth import Caller
from p4reduce.controller.errors import BadRequest, ControllerError, NotFound
from p4reduce.protocol.job_api import DEFAULT_PORT

if TYPE_CHECKING:
    from p4reduce.controller.connection import SwitchConnection
    from p4reduce.controller.jobs import JobManager


log = logging.getLogger("p4reduce.controller.api")

API_VERSION = "1"
MAX_BODY = 64 * 1024
IDLE_TIMEOUT_S = 10.0         # the longest wait for any read of a request (or between requests)
REQUEST_DEADLINE_S = 20.0     # the longest a whole request may take to arrive, however it trickles
MAX_CONNECTIONS = 256         # connections served at once (waiting ones yield their place; else 503)
MAX_PER_SOURCE = 64           # of them from one source address (a fourth of the cap by default)
EVICTION_LOG_S = 10.0         # at most one log line per this many seconds about displaced connections
DRAIN_LIMIT = 4 * MAX_BODY     # what is read (and dropped) of a refused body before closing
DEFAULT_ADDRESS = ("127.0.0.1", DEFAULT_PORT)

CREATE_FIELDS = {"name", "workers", "mode", "slots", "lease_s", "aggregation"}
JOIN_FIELDS = {"rank", "ip", "udp_port", "mac", "workers", "mode", "slots", "switch_port"}
RANK_FIELDS = {"rank"}
HEARTBEAT_FIELDS = {"rank", "path", "reason", "generation"}
BEARER = re.compile(r"Bearer +(\S+)\s*", re.IGNORECASE)

Answer = tuple[int, Any]   # (HTTP status, JSON object)


def _fields(body: dict[str, Any], allowed: set[str], required: tuple[str, ...] = ()) -> dict[str, Any]:
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
        ("GET", re.compile(r"/v1/health"), "health"),
        ("GET", re.compile(r"/v1/jobs"), "list_jobs"),
        ("POST", re.compile(r"/v1/jobs"), "create_job"),
        ("GET", re.compile(r"/v1/jobs/(?P<name>[^/]+)"), "get_job"),
        ("DELETE", re.compile(r"/v1/jobs/(?P<name>[^/]+)"), "end_job"),
        ("POST", re.compile(r"/v1/jobs/(?P<name>[^/]+)/join"), "join"),
        ("POST", re.compile(r"/v1/jobs/(?P<name>[^/]+)/heartbeat"), "heartbeat"),
        ("POST", re.compile(r"/v1/jobs/(?P<name>[^/]+)/leave"), "leave"),
    ]

    def __init__(self, manager: JobManager, switches: Iterable[SwitchConnection] = (),
                 admin_credential: str | None = None):
        self.manager = manager
        self.switches = list(switches)  # SwitchConnection objects, for /health
        self.admin_credential = admin_credential  # None: no admin; job credentials only

    def caller(self, authorization: str | None) -> Caller:
        """The Caller of a request from its Authorization header (None if absent)."""
        if authorization is None:
            return Caller()
        match = BEARER.fullmatch(authorization)
        if not match:
            raise ControllerError("header 'Authorization': expected 'Bearer CREDENTIAL'", code="bad_credential",
                                  http_status=401)
        credential = match.group(1)
        admin = self.admin_credential is not None and hmac.compare_digest(credential.encode(),
                                                                          self.admin_credential.encode())
        return Caller(credential, admin)

    def dispatch(self, method: str, path: str, body: dict[str, Any], peer_ip: str,
                 authorization: str | None = None) -> Answer:
        """(status, json_object) for one request."""
        path = path.split("?", 1)[0].rstrip("/") or "/"
        allowed = []
        for m, pattern, handler in self.ROUTES:
            match = pattern.fullmatch(path)
            if match:
                if m != method:
                    allowed.append(m)
                    continue
                try:
                    params = {k: urllib.parse.unquote(v, errors="strict") for k, v in match.groupdict().items()}
                except UnicodeDecodeError:
                    raise BadRequest(f"the job name in {path[:100]!r} is not UTF-8", field="name") from None
                return getattr(self, handler)(body, peer_ip, self.caller(authorization), **params)
        if allowed:
            raise ControllerError(f"{method} is not allowed on {path} (use {', '.join(allowed)})",
                                  code="method_not_allowed", http_status=405)
        raise NotFound(f"no such endpoint: {method} {path} (see docs/job-api.md)")

    def health(self, body: dict[str, Any], peer: str, caller: Caller) -> Answer:
        pool = self.manager.pool
        switches = [{"name": c.name, "grpc_addr": c.grpc_addr, "primary": c.primary and not c.lost.is_set()}
                    for c in self.switches]
        problems = [f"switch {s['name']} ({s['grpc_addr']}): " + ("connection lost" if c.lost.is_set() else
                                                                  "this controller is not its primary")
                    for s, c in zip(switches, self.switches, strict=True) if not s["primary"]]
        if self.manager.switch_down and not problems:
            problems.append(self.manager.switch_down)
        if self.manager.no_aggregation:
            problems.append(f"{self.manager.no_aggregation}: jobs run on the host fallback only")
        answer: dict[str, Any] = {"ok": not problems, "switches": switches,
                                  "slots": {"total": pool.total, "free": pool.free},
                                  "degraded_jobs": sum(1 for j in self.manager.list() if j.get("path") == "fallback")}
        if problems:
            answer["problems"] = problems
        return 200, answer

    def list_jobs(self, body: dict[str, Any], peer: str, caller: Caller) -> Answer:
        return 200, {"jobs": self.manager.list()}

    def create_job(self, body: dict[str, Any], peer: str, caller: Caller) -> Answer:
        _fields(body, CREATE_FIELDS, required=("name",))
        job, created, credential = self.manager.create(body["name"], body.get("workers"), body.get("mode"),
                                                       body.get("slots"), body.get("lease_s"), caller=caller,
                                                       aggregation=body.get("aggregation"))
        if credential is not None:
            job = dict(job, credential=credential)
        return (201 if created else 200), job

    def get_job(self, body: dict[str, Any], peer: str, caller: Caller, name: str) -> Answer:
        return 200, self.manager.status(name, caller)

    def end_job(self, body: dict[str, Any], peer: str, caller: Caller, name: str) -> Answer:
        return 200, self.manager.end(name, caller=caller)

    def join(self, body: dict[str, Any], peer: str, caller: Caller, name: str) -> Answer:
        _fields(body, JOIN_FIELDS)
        rank, job, credential = self.manager.join(
            name, ip=body.get("ip"), udp_port=body.get("udp_port"), mac=body.get("mac"), rank=body.get("rank"),
            workers=body.get("workers"), mode=body.get("mode"), slots=body.get("slots"), peer_ip=peer,
            switch_port=body.get("switch_port"), caller=caller)
        answer: dict[str, Any] = {"rank": rank, "job": job}
        if credential is not None:
            answer["credential"] = credential
        return 200, answer

    def heartbeat(self, body: dict[str, Any], peer: str, caller: Caller, name: str) -> Answer:
        _fields(body, HEARTBEAT_FIELDS, required=("rank",))
        return 200, self.manager.heartbeat(name, body["rank"], caller=caller, path=body.get("path"),
                                           reason=body.get("reason"), generation=body.get("generation"))

    def leave(self, body: dict[str, Any], peer: str, caller: Caller, name: str) -> Answer:
        _fields(body, RANK_FIELDS, required=("rank",))
        return 200, self.manager.leave(name, body["rank"], caller=caller)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_body(raw: bytes) -> dict[str, Any]:
    """A request body as a JSON object; BadRequest (code bad_json) for anything else."""
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:   # also: integers past Python's digit limit, deep nesting
        raise BadRequest(f"request body is not valid JSON: {str(e)[:200]}", code="bad_json") from None
    if not isinstance(body, dict):
        raise BadRequest(f"request body must be a JSON object, got {type(body).__name__}", code="bad_json")
    return body


class _Handler(BaseHTTPRequestHandler):
    server_version = "p4reduce-controller"
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT_S      # socket timeout: every read of a request is bounded
    deadline = REQUEST_DEADLINE_S
    server: _BoundedHTTPServer
    _timer: threading.Timer

    def _answer(self, status: int, obj: Any, close: bool = False) -> None:
        data = (json.dumps(obj, indent=None) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-P4reduce-Api", API_VERSION)
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="p4reduce job API"')
        if status == 405 and isinstance(obj, dict) and obj.get("allow"):
            self.send_header("Allow", obj.pop("allow"))
        if close:
            self.close_connection = True
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """What http.server refuses by itself (bad request line, unknown method, headers too long)
        answers JSON like everything else, and ends the connection."""
        if self.request_version == "HTTP/0.9":   # a request line too broken to say: answer HTTP/1.1
            self.request_version = "HTTP/1.1"
        if code == 501:   # a method http.server has no do_X for
            code, err = 405, "method_not_allowed"
            message = f"method {self.command!r} is not allowed (the job API takes GET, POST and DELETE)"
        else:
            err = {400: "bad_request", 408: "timeout", 414: "too_large", 431: "too_large"}.get(code, "bad_request")
        try:
            self._answer(code, {"error": {"code": err, "message": message or explain or "bad request"}},
                         close=True)
        except OSError:
            self.close_connection = True

    def _body(self) -> dict[str, Any]:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            raise ControllerError("chunked request bodies are not accepted: send Content-Length",
                                  code="bad_length", http_status=411)
        header = self.headers.get("Content-Length")
        if header is None:
            return {}
        if not header.strip().isdigit():
            raise BadRequest(f"header 'Content-Length': must be a non-negative integer, got "
                             f"{header[:40]!r}", code="bad_length")
        if len(header.strip()) > 12 or int(header) > MAX_BODY:
            raise ControllerError(f"request body of {header.strip()[:40]} bytes is over the {MAX_BODY}-byte limit",
                                  code="too_large", http_status=413)
        length = int(header)
        raw = self.rfile.read(length)
        if len(raw) < length:
            raise ControllerError(f"request body ended after {len(raw)} of {length} bytes", code="bad_length",
                                  http_status=400)
        return parse_body(raw)

    def handle_one_request(self) -> None:
        """One request, however slowly it arrives, within REQUEST_DEADLINE_S: then the socket is shut.
        Until it has arrived whole the connection is *waiting*, and may be displaced (_Admission)."""
        timer = threading.Timer(self.deadline, self._cut_off)
        timer.daemon = True
        self._timer = timer
        self._waiting(True)
        timer.start()
        try:
            super().handle_one_request()
        except TimeoutError:
            self.close_connection = True
        except ConnectionError as e:     # the client reset or closed the connection: one line
            self.close_connection = True
            log.info("job API: %s: %s", self.client_address[0], _reason(e))
        finally:
            timer.cancel()

    def _waiting(self, waiting: bool) -> None:
        record = self.server.admission.record(self.request)
        if record is not None:
            record.wait(waiting)

    def _cut_off(self) -> None:
        log.info("job API: %s took over %g s to send a request; connection closed",
                 self.client_address[0], self.deadline)
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _handle(self, method: str) -> None:
        close = False
        try:
            body = self._body() if method in ("POST", "DELETE") else {}
            self._timer.cancel()   # the request has arrived whole; answering is not bounded by it
            self._waiting(False)   # nor may it be displaced any more
            status, obj = self.server.api.dispatch(method, self.path, body, self.client_address[0],
                                                   self.headers.get("Authorization"))
        except TimeoutError:
            status, obj, close = 408, {"error": {"code": "timeout", "message": "the request body did not "
                                                 f"arrive within {self.timeout:g} s"}}, True
        except ControllerError as e:
            status, obj = e.http_status, e.to_json()
            close = e.code in ("too_large", "bad_length")   # the rest of the body was not read
        except Exception as e:  # a bug must still answer JSON, and be logged with its traceback
            log.exception("job API: %s %s failed", method, self.path)
            status, obj = 500, {"error": {"code": "internal", "message": f"{type(e).__name__}: {e}"}}
        try:
            self._answer(status, obj, close=close)
            if close:
                self._drain()
        except OSError:
            self.close_connection = True

    def _drain(self) -> None:
        """Read (and drop) what the client still sends of a refused body, briefly, so closing
        does not reset the connection before the client has read the answer."""
        self.connection.settimeout(1.0)
        left = DRAIN_LIMIT
        while left > 0:
            chunk = self.connection.recv(min(left, 65536))
            if not chunk:
                return
            left -= len(chunk)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_HEAD(self) -> None:
        self._handle("HEAD")

    def log_message(self, fmt: str, *args: Any) -> None:
        log.debug("%s %s", self.client_address[0], fmt % args)


def _reason(e: BaseException) -> str:
    if isinstance(e, ConnectionResetError):
        return "connection reset by the client"
    if isinstance(e, (BrokenPipeError, ConnectionAbortedError)):
        return "connection closed by the client"
    return f"connection failed: {getattr(e, 'strerror', None) or type(e).__name__}"


class _Connection:
    """One open connection as the admission sees it."""
    __slots__ = ("since", "sock", "source", "waiting")

    def __init__(self, sock: socket.socket, source: str):
        self.sock, self.source = sock, source
        self.waiting, self.since = True, time.monotonic()

    def wait(self, waiting: bool) -> None:
        if waiting and not self.waiting:
            self.since = time.monotonic()
        self.waiting = waiting


class _Admission:
    """Which connections are open, and which one yields its place when a new one would pass a limit.

    At most `cap` connections at once and `per_source` from one source address. A new connection
    that would pass the per-source limit displaces the oldest *waiting* connection (no whole
    request yet: idle, or trickling) of its own source; one that would pass the total limit
    displaces the oldest waiting connection of the source holding the most connections. A waiting
    connection whose request bytes are already in the socket is never chosen, and the oldest
    goes first: a request sent at once arrives long before a flood could make it the oldest.
    Refused (503) only when every connection it could displace is being answered."""

    def __init__(self, cap: int, per_source: int):
        self.cap, self.per_source = cap, max(1, min(per_source, cap))
        self.lock = threading.Lock()
        self.open: dict[socket.socket, _Connection] = {}   # insertion order: oldest first
        self.displaced = 0
        self._displaced_logged = 0
        self._next_log = 0.0

    def record(self, sock: socket.socket) -> _Connection | None:
        return self.open.get(sock)

    def admit(self, sock: socket.socket, source: str) -> str | None:
        """None when `sock` is admitted (perhaps displacing another); else why it is refused."""
        with self.lock:
            mine = [c for c in self.open.values() if c.source == source]
            victim = None
            if len(mine) >= self.per_source:
                victim = self._oldest_waiting(mine)
                if victim is None:
                    return f"{len(mine)} requests from {source} are being answered, the most from one address"
            elif len(self.open) >= self.cap:
                by_source: dict[str, list[_Connection]] = {}
                for c in self.open.values():
                    by_source.setdefault(c.source, []).append(c)
                for conns in sorted(by_source.values(), key=len, reverse=True):
                    victim = self._oldest_waiting(conns)
                    if victim is not None:
                        break
                if victim is None:
                    return f"all {len(self.open)} connections are being answered"
            if victim is not None:
                del self.open[victim.sock]
                self.displaced += 1
            self.open[sock] = _Connection(sock, source)
        if victim is not None:
            try:
                victim.sock.shutdown(socket.SHUT_RDWR)   # its thread sees the end and leaves
            except OSError:
                pass
            self._log_displaced(victim.source)
        return None

    @staticmethod
    def _oldest_waiting(conns: list[_Connection]) -> _Connection | None:
        for c in sorted((c for c in conns if c.waiting), key=lambda c: c.since):
            if not _has_data(c.sock):
                return c
        return None

    def release(self, sock: socket.socket) -> None:
        with self.lock:
            self.open.pop(sock, None)

    def _log_displaced(self, source: str) -> None:
        now = time.monotonic()
        if now < self._next_log:
            return
        self._next_log = now + EVICTION_LOG_S
        count, self._displaced_logged = self.displaced - self._displaced_logged, self.displaced
        log.warning("job API: %d connection(s) that had sent no whole request closed to make room for new "
                    "ones (the last from %s; limits: %d at once, %d per address)", count, source, self.cap,
                    self.per_source)


def _has_data(sock: socket.socket) -> bool:
    """Whether bytes (or the end of the stream) wait in the socket: a request that arrived but is
    not read yet. Never blocks (a socket's own recv waits up to its timeout first)."""
    try:
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return False


class _BoundedHTTPServer(ThreadingHTTPServer):
    """A thread per connection, at most MAX_CONNECTIONS at once and MAX_PER_SOURCE per source
    address (_Admission). A whole job's workers join at once, so the listen backlog is deep (the
    default 5 would drop their SYNs)."""
    request_queue_size = 128
    daemon_threads = True
    api: JobApi

    def __init__(self, address: tuple[str, int], handler: type[_Handler], max_connections: int = MAX_CONNECTIONS,
                 max_per_source: int | None = None):
        super().__init__(address, handler)
        per_source = max_per_source if max_per_source is not None else \
            max(max_connections * MAX_PER_SOURCE // MAX_CONNECTIONS, min(max_connections, 16))
        self.admission = _Admission(max_connections, per_source)
        self.max_connections = max_connections

    def process_request(self, request: Any, client_address: Any) -> None:
        refused = self.admission.admit(request, client_address[0])
        if refused is not None:
            _refuse_busy(request, refused)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.admission.release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.admission.release(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """What escapes a connection's handler: one log line, never a traceback on stderr."""
        e = sys.exc_info()[1]
        if isinstance(e, OSError):
            log.info("job API: %s: %s", client_address[0], _reason(e))
        else:
            log.error("job API: %s: connection handler failed: %s: %s", client_address[0],
                      type(e).__name__, e, exc_info=log.isEnabledFor(logging.DEBUG))


def _refuse_busy(sock: socket.socket, why: str) -> None:
    body = json.dumps({"error": {"code": "busy", "message": f"the job API is busy: {why}; try again"}}).encode() \
        + b"\n"
    head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: "
            f"{len(body)}\r\nX-P4reduce-Api: {API_VERSION}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n")
    try:
        sock.settimeout(1.0)
        sock.sendall(head.encode() + body)
    except OSError:
        pass


class JobApiServer:
    """The HTTP server in a daemon thread. `address` is (host, port); port 0 picks a free one.
    It listens on loopback unless told otherwise."""

    def __init__(self, api: JobApi, address: tuple[str, int] = DEFAULT_ADDRESS, max_connections: int = MAX_CONNECTIONS,
                 idle_timeout_s: float = IDLE_TIMEOUT_S, request_deadline_s: float = REQUEST_DEADLINE_S,
                 max_per_source: int | None = None):
        """`max_per_source`: connections from one address at once (default a fourth of
        `max_connections`, at least 16)."""
        handler = type("JobApiHandler", (_Handler,), {"timeout": idle_timeout_s, "deadline": request_deadline_s})
        self.httpd = _BoundedHTTPServer(address, handler, max_connections, max_per_source)
        self.httpd.api = api
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="job-api", daemon=True)

    @property
    def address(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"{host!s}:{port}"

    def start(self) -> JobApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)
