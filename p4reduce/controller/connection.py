"""One P4Runtime session with one switch: channel, arbitration, pipeline, reads and writes.

The same code drives simple_switch_grpc and p4sim-switch. `connect()` waits (bounded, reporting
progress) for the gRPC server, opens the StreamChannel and runs master arbitration with the
configured election id; a controller that is not primary is refused unless it asked to be a
read-only backup. Every gRPC failure becomes a SwitchError whose message says which switch, which
RPC and what the server said (including each failed update of a batch).
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging
import pathlib
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4reduce.controller.errors import SwitchError
from p4reduce.controller.p4info import P4InfoIndex, load_p4info

log = logging.getLogger("p4reduce.controller.connection")

Update = p4runtime_pb2.Update


def parse_election_id(value: int | str | tuple[int, int] | list[int]) -> tuple[int, int]:
    """(high, low) from an int, 'high,low' or a pair."""
    if isinstance(value, (tuple, list)):
        high, low = value
    elif isinstance(value, str) and "," in value:
        high, low = (int(x, 0) for x in value.split(","))
    else:
        n = int(value, 0) if isinstance(value, str) else int(value)
        high, low = n >> 64, n & ((1 << 64) - 1)
    if high < 0 or low < 0 or (high == 0 and low == 0):
        raise ValueError(f"election id must be a positive 128-bit number, got {value!r}")
    return int(high), int(low)


def _write_error_details(err: grpc.RpcError) -> list[str]:
    """'update #i: CODE: message' lines from a Write error's p4.v1.Error details."""
    lines = []
    for key, value in err.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status()
        status.ParseFromString(value)
        for i, detail in enumerate(status.details):
            p4err = p4runtime_pb2.Error()
            if detail.Unpack(p4err) and p4err.canonical_code != code_pb2.OK:
                code = code_pb2.Code.Name(p4err.canonical_code)
                lines.append(f"update #{i}: {code}: {p4err.message}")
    return lines


def pipeline_cookie(device_config: bytes) -> int:
    """Stable 64-bit cookie identifying a device config, so a restart can tell it is unchanged."""
    return int.from_bytes(hashlib.sha256(device_config).digest()[:8], "big")


@dataclasses.dataclass(frozen=True)
class TlsClient:
    """P4Runtime over TLS: the CA the switch's certificate must be signed by, and this client's
    certificate and key (for a switch that requires client certificates,
    --grpc-server-with-client-auth). Paths; read at each connect."""
    ca: str
    cert: str | None = None
    key: str | None = None

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise ValueError("P4Runtime TLS: a client certificate needs its key, and a key its certificate "
                             "(--tls-cert and --tls-key together)")

    def credentials(self) -> grpc.ChannelCredentials:
        def read(path: str | None, what: str) -> bytes | None:
            if path is None:
                return None
            try:
                data = pathlib.Path(path).read_bytes()
            except OSError as e:
                raise SwitchError(f"P4Runtime TLS: cannot read the {what} {path}: {e.strerror}") from None
            if b"-----BEGIN" not in data:
                raise SwitchError(f"P4Runtime TLS: the {what} {path} is not PEM")
            return data
        return grpc.ssl_channel_credentials(root_certificates=read(self.ca, "CA certificate"),
                                            private_key=read(self.key, "client key"),
                                            certificate_chain=read(self.cert, "client certificate"))

    def describe(self) -> dict[str, str | None]:
        return {"ca": self.ca, "cert": self.cert, "key": self.key}


class SwitchConnection:
    """A P4Runtime client for one device (over TLS when given a TlsClient)."""

    def __init__(self, grpc_addr: str, device_id: int = 0, election_id: int | str | tuple[int, int] = 1,
                 name: str | None = None, tls: TlsClient | None = None):
        self.tls = tls
        self.grpc_addr = grpc_addr
        self.device_id = device_id
        self.election_id = parse_election_id(election_id)
        self.name = name or grpc_addr
        self.primary = False
        self.index: P4InfoIndex | None = None  # once a pipeline is known
        self._channel: Any = None     # grpc.Channel while connected
        self._stub: Any = None        # P4RuntimeStub while connected
        self._requests: queue.Queue[Any] | None = None   # StreamChannel requests (None ends it)
        self._stream: Any = None
        self._arbitration: queue.Queue[Any] = queue.Queue()
        self.packet_ins: queue.Queue[Any] = queue.Queue()
        self._reader: threading.Thread | None = None
        self._arbitrated = False
        self.lost = threading.Event()  # set when the stream to the switch breaks (switch gone)
        self.became_primary = threading.Event()
        # set when another client made itself primary while this one was (recovery.SwitchWatchdog
        # contests it); displaced_by: that client's election id
        self.displaced = threading.Event()
        self.displaced_by: int | None = None

    @property
    def pipeline(self) -> P4InfoIndex:
        """The P4Info index of the program the switch runs (known after push/fetch/ensure_pipeline)."""
        if self.index is None:
            raise SwitchError(f"switch {self.name}: its program is not known yet (push or fetch the pipeline first)")
        return self.index

    # -- session -------------------------------------------------------------------------------
    def connect(self, timeout: float = 30.0, require_primary: bool = True,
                report: Callable[[str], None] | None = None, arbitrate: bool = True) -> SwitchConnection:
        """Wait up to `timeout` s for the switch, then arbitrate. `report(msg)` hears progress.

        With arbitrate=False no stream is opened: enough for reads (inspection tools), which
        P4Runtime allows from any client without disturbing the primary controller.
        """
        report = report or log.info
        self.close()
        self.lost = threading.Event()
        self.became_primary = threading.Event()
        self.displaced = threading.Event()
        self._arbitrated = False
        self._arbitration = queue.Queue()
        self._channel = (grpc.secure_channel(self.grpc_addr, self.tls.credentials()) if self.tls is not None
                         else grpc.insecure_channel(self.grpc_addr))
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        deadline = time.monotonic() + timeout
        ready = grpc.channel_ready_future(self._channel)
        next_report = time.monotonic() + 2.0
        while True:
            try:
                ready.result(timeout=min(0.5, max(0.01, deadline - time.monotonic())))
                break
            except grpc.FutureTimeoutError:
                now = time.monotonic()
                if now >= deadline:
                    self.close()
                    raise SwitchError(f"switch {self.name} ({self.grpc_addr}): {self._why_not_ready(timeout)}") \
                        from None
                if now >= next_report:
                    report(f"waiting for switch {self.name} at {self.grpc_addr} "
                           f"({deadline - now:.0f} s left)")
                    next_report = now + 2.0
        if not arbitrate:
            return self
        self._open_stream()
        self._arbitrate(max(1.0, deadline - time.monotonic()), require_primary)
        return self

    def _why_not_ready(self, timeout: float) -> str:
        """Why the channel did not become ready: nothing listens, or a TLS mismatch."""
        host, _, port = self.grpc_addr.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=1.0):
                listening = True
        except (OSError, ValueError):
            listening = False
        if not listening:
            return f"no P4Runtime server answered within {timeout:g} s"
        if self.tls is None:
            return ("something listens there but does not speak P4Runtime in clear: if the switch was started "
                    "with --grpc-server-ssl, give the controller --tls-ca (and --tls-cert/--tls-key)")
        return ("the TLS handshake failed: is the switch's certificate signed by the CA of --tls-ca and valid "
                "for this address, and does the switch require a client certificate (--tls-cert/--tls-key, "
                "signed by the CA it trusts)?")

    def _open_stream(self) -> None:
        pending: queue.Queue[Any] = queue.Queue()
        self._requests = pending

        def requests() -> Iterator[Any]:
            while True:
                msg = pending.get()
                if msg is None:
                    return
                yield msg

        self._stream = self._stub.StreamChannel(requests())

        stream, lost = self._stream, self.lost

        def receive() -> None:
            try:
                for msg in stream:
                    which = msg.WhichOneof("update")
                    if which == "arbitration":
                        if self._arbitrated:  # a later update: a takeover, or the primary left
                            was, self.primary = self.primary, msg.arbitration.status.code == code_pb2.OK
                            if was and not self.primary:
                                eid = msg.arbitration.election_id
                                self.displaced_by = (eid.high << 64) | eid.low
                                log.warning("switch %s: this controller is no longer primary: a client with "
                                            "election id %d is", self.name, self.displaced_by)
                                self.displaced.set()
                            if self.primary:
                                self.became_primary.set()
                        else:
                            self._arbitration.put(msg.arbitration)
                    elif which == "packet":
                        self.packet_ins.put(msg.packet)
                    elif which == "error":
                        log.warning("switch %s stream error: %s", self.name, msg.error)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.CANCELLED:
                    log.warning("switch %s: stream closed: %s", self.name, e.details())
                self._arbitration.put(e)
            if stream is self._stream:  # not our own close(): the switch went away
                self.primary = False
                lost.set()

        self._reader = threading.Thread(target=receive, name=f"p4rt-stream-{self.name}", daemon=True)
        self._reader.start()

    def _arbitrate(self, timeout: float, require_primary: bool) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = self.election_id
        assert self._requests is not None, "the stream is opened first"
        self._requests.put(req)
        try:
            reply = self._arbitration.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise SwitchError(f"switch {self.name}: no arbitration answer within {timeout:g} s") from None
        if isinstance(reply, grpc.RpcError):
            self.close()
            raise SwitchError(f"switch {self.name}: arbitration failed: "
                              f"{reply.code().name}: {reply.details()}")
        self.primary = reply.status.code == code_pb2.OK
        self._arbitrated = True
        if self.primary:
            self.became_primary.set()
        if not self.primary and require_primary:
            primary = (reply.election_id.high << 64) | reply.election_id.low
            mine = (self.election_id[0] << 64) | self.election_id[1]
            self.close()
            raise SwitchError(
                f"switch {self.name}: this controller (election id {mine}) is not primary; the primary "
                f"controller has election id {primary}. Stop it, or use a higher --election-id, or "
                f"connect read-only (backup).", code="not_primary", http_status=409)

    def reclaim_primary(self, timeout: float = 5.0) -> tuple[int, int]:
        """Become primary again on the open stream, with an election id above the one that
        displaced this client (P4Runtime lets a client re-arbitrate on its stream). Returns the
        new election id; SwitchError if the switch does not make this client primary."""
        if self._requests is None:
            raise SwitchError(f"switch {self.name}: no stream to re-arbitrate on")
        mine = (self.election_id[0] << 64) | self.election_id[1]
        new = max(mine, self.displaced_by or 0) + 1
        if new >> 128:
            raise SwitchError(f"switch {self.name}: cannot outbid election id {self.displaced_by}")
        self.election_id = (new >> 64, new & ((1 << 64) - 1))
        self.became_primary.clear()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = self.election_id
        self._requests.put(req)
        if not self.became_primary.wait(timeout):
            raise SwitchError(f"switch {self.name}: re-arbitrating with election id {new} did not make this "
                              f"controller primary within {timeout:g} s")
        return self.election_id

    def close(self) -> None:
        stream, self._stream = self._stream, None
        if self._requests is not None:
            self._requests.put(None)
        if stream is not None:
            stream.cancel()
        if self._channel is not None:
            self._channel.close()
        self._requests = self._channel = None
        self.primary = False

    def __enter__(self) -> SwitchConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- pipeline ------------------------------------------------------------------------------
    def push_pipeline(self, p4info: str | pathlib.Path | bytes | Any,
                      device_config: str | pathlib.Path | bytes) -> P4InfoIndex:
        """SetForwardingPipelineConfig(VERIFY_AND_COMMIT) with a P4Info and BMv2 JSON (paths or data)."""
        info = load_p4info(p4info)
        if isinstance(device_config, (str, pathlib.Path)):
            path = pathlib.Path(device_config)
            if not path.is_file():
                raise ValueError(f"device config {path} does not exist (build the program first: make build)")
            device_config = path.read_bytes()
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.high, req.election_id.low = self.election_id
        req.config.p4info.CopyFrom(info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = pipeline_cookie(device_config)
        self._call("SetForwardingPipelineConfig", self._stub.SetForwardingPipelineConfig, req)
        self.index = P4InfoIndex(info)
        return self.index

    def fetch_pipeline(self) -> tuple[P4InfoIndex | None, int | None]:
        """(P4InfoIndex or None, cookie or None) of the pipeline the switch runs now."""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        try:
            reply = self._stub.GetForwardingPipelineConfig(req)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.FAILED_PRECONDITION:
                return None, None  # no pipeline yet
            raise self._error("GetForwardingPipelineConfig", e) from None
        p4info = reply.config.p4info
        if not reply.config.HasField("p4info") or (not p4info.tables and not p4info.registers):
            return None, None
        cookie = reply.config.cookie.cookie if reply.config.HasField("cookie") else None
        self.index = P4InfoIndex(reply.config.p4info)
        return self.index, cookie

    def ensure_pipeline(self, p4info: str | pathlib.Path | bytes | Any, device_config: str | pathlib.Path | bytes,
                        report: Callable[[str], None] | None = None) -> bool:
        """Push the pipeline unless the switch already runs this exact one (restart keeps state).

        Returns True if it pushed, False if it found the same pipeline running.
        """
        report = report or log.info
        data = pathlib.Path(device_config).read_bytes() if isinstance(device_config, (str, pathlib.Path)) \
            else device_config
        _, cookie = self.fetch_pipeline()
        if cookie is not None and cookie == pipeline_cookie(data):
            report(f"switch {self.name}: already runs this pipeline (cookie {cookie:#x}); keeping its state")
            self.index = P4InfoIndex(load_p4info(p4info))
            return False
        self.push_pipeline(p4info, data)
        report(f"switch {self.name}: pipeline pushed")
        return True

    # -- reads and writes ----------------------------------------------------------------------
    def write(self, updates: list[Any], atomic: bool = False) -> None:
        """Write a batch of p4.v1.Update."""
        if not updates:
            return
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        req.election_id.high, req.election_id.low = self.election_id
        if atomic:
            req.atomicity = p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR
        req.updates.extend(updates)
        self._call("Write", self._stub.Write, req)

    def insert(self, entity: Any) -> None:
        self.write([update(Update.INSERT, entity)])

    def modify(self, entity: Any) -> None:
        self.write([update(Update.MODIFY, entity)])

    def delete(self, entity: Any) -> None:
        self.write([update(Update.DELETE, entity)])

    def read(self, *entities: Any) -> list[Any]:
        """All entities matching the given filters (a list of p4.v1.Entity)."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        for ent in entities:
            req.entities.append(as_entity(ent))
        try:
            return [e for reply in self._stub.Read(req) for e in reply.entities]
        except grpc.RpcError as e:
            raise self._error("Read", e) from None

    def _call(self, rpc: str, fn: Callable[[Any], Any], req: Any) -> Any:
        try:
            return fn(req)
        except grpc.RpcError as e:
            raise self._error(rpc, e) from None

    def _error(self, rpc: str, e: grpc.RpcError) -> SwitchError:
        lines = _write_error_details(e) if e.code() == grpc.StatusCode.UNKNOWN else []
        detail = "; ".join(lines) if lines else (e.details() or "")
        err = SwitchError(f"switch {self.name}: {rpc} failed: {e.code().name}: {detail}")
        err.grpc_code = e.code()
        return err


def as_entity(obj: Any) -> p4runtime_pb2.Entity:
    """Wrap a TableEntry / RegisterEntry / ... into a p4.v1.Entity."""
    if isinstance(obj, p4runtime_pb2.Entity):
        return obj
    ent = p4runtime_pb2.Entity()
    field = {
        p4runtime_pb2.TableEntry: "table_entry",
        p4runtime_pb2.RegisterEntry: "register_entry",
        p4runtime_pb2.CounterEntry: "counter_entry",
        p4runtime_pb2.DirectCounterEntry: "direct_counter_entry",
        p4runtime_pb2.PacketReplicationEngineEntry: "packet_replication_engine_entry",
    }[type(obj)]
    getattr(ent, field).CopyFrom(obj)
    return ent


def update(kind: int, obj: Any) -> p4runtime_pb2.Update:
    return p4runtime_pb2.Update(type=kind, entity=as_entity(obj))

