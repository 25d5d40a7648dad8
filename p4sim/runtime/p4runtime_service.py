"""The p4.v1.P4Runtime gRPC servicer: request checks (device id, roles, arbitration, atomicity) and
dispatch to the device, the arbitration state and the packet path. StreamChannels are bounded
(arbitration.StreamLimits) so that they never take every server thread."""
from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .arbitration import Arbitration, StreamLimits, StreamSession
from .errors import (
    P4RuntimeError,
    abort_with_status,
    invalid,
    not_found,
    permission_denied,
    rpc_code,
    unimplemented,
    write_status,
)

if TYPE_CHECKING:
    from .device import Device
    from .packet_io import PacketPath

log = logging.getLogger("p4sim.runtime")

API_VERSION = "1.4.1"
READ_CHUNK = 1000  # entities per ReadResponse message


# a StreamChannel that has not sent an accepted MasterArbitrationUpdate after this long is closed
ARBITRATION_TIMEOUT = 5.0


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device: Device, packet_path: PacketPath, arbitration: Arbitration,
                 stream_limits: StreamLimits | None = None,
                 arbitration_timeout: float = ARBITRATION_TIMEOUT) -> None:
        """`arbitration_timeout`: seconds a stream may stay open without arbitrating."""
        self.device = device
        self.packet_path = packet_path
        self.arbitration = arbitration
        self.stream_limits = stream_limits or StreamLimits(per_client=8, total=16)
        self.arbitration_timeout = arbitration_timeout

    # -- helpers -------------------------------------------------------------------------------
    def _check_device(self, device_id: int, what: str) -> None:
        if device_id != self.device.device_id:
            raise not_found(f"{what}: device_id {device_id} is not this device "
                            f"({self.device.device_id})")

    @staticmethod
    def _abort(context: grpc.ServicerContext, error: P4RuntimeError) -> None:
        log.debug("RPC failed: %s", error)
        message = error.message if len(error.message) <= 2000 else error.message[:1997] + "..."
        context.abort(error.code, message)   # a default client reads 8 KiB of metadata at most

    # -- RPCs ----------------------------------------------------------------------------------
    def Capabilities(self, request: p4runtime_pb2.CapabilitiesRequest, context: grpc.ServicerContext
                     ) -> p4runtime_pb2.CapabilitiesResponse:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def SetForwardingPipelineConfig(self, request: p4runtime_pb2.SetForwardingPipelineConfigRequest,
                                    context: grpc.ServicerContext) -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
        try:
            self._check_device(request.device_id, "SetForwardingPipelineConfig")
            self.arbitration.roles.check_known(request.role, "SetForwardingPipelineConfig")
            self.arbitration.check_primary(request.election_id, request.role,
                                           "SetForwardingPipelineConfig")
            self.arbitration.roles.check_default(request.role, "SetForwardingPipelineConfig")
            self.device.set_pipeline(request)
        except P4RuntimeError as error:
            self._abort(context, error)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request: p4runtime_pb2.GetForwardingPipelineConfigRequest,
                                    context: grpc.ServicerContext) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        try:
            self._check_device(request.device_id, "GetForwardingPipelineConfig")
            return self.device.get_pipeline(request)
        except P4RuntimeError as error:
            self._abort(context, error)

    def Write(self, request: p4runtime_pb2.WriteRequest, context: grpc.ServicerContext) -> p4runtime_pb2.WriteResponse:
        try:
            self._check_device(request.device_id, "Write")
            if request.role_id:
                raise unimplemented("Write: role_id is deprecated, use role (a name)")
            self.arbitration.roles.check_known(request.role, "Write")
            self.arbitration.check_primary(request.election_id, request.role, "Write")
            pipeline = self.device.pipeline
            self.arbitration.roles.check_write(request.role, request.updates,
                                               pipeline.index if pipeline is not None else None)
            atomic = request.atomicity in (p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
                                           p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC)
            if not atomic and request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                raise invalid(f"Write: unknown atomicity {request.atomicity}")
            results = self.device.write(request.updates, atomic=atomic)
        except P4RuntimeError as error:
            self._abort(context, error)
            return
        if any(r is not None for r in results):
            for index, result in enumerate(results):
                if result is not None:
                    log.info("Write update %d failed: %s", index, result)
            abort_with_status(context, write_status(results))
        return p4runtime_pb2.WriteResponse()

    def Read(self, request: p4runtime_pb2.ReadRequest, context: grpc.ServicerContext) -> Iterator[bytes]:
        """Streams serialized ReadResponse messages (bytes: see server.py's Read serializer)."""
        try:
            self._check_device(request.device_id, "Read")
            responses = self.device.read(request.entities, READ_CHUNK)
            yield from responses
        except P4RuntimeError as error:
            self._abort(context, error)

    def StreamChannel(self, request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest],
                      context: grpc.ServicerContext) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        peer = context.peer()
        session = StreamSession(peer)
        try:
            self.stream_limits.acquire(session)
        except P4RuntimeError as error:
            log.warning("%s", error.message)
            self._abort(context, error)
            return
        try:
            yield from self._stream(request_iterator, context, session)
        finally:
            self.stream_limits.release(session)

    def _stream(self, request_iterator, context, session):
        reader = threading.Thread(target=self._read_stream, args=(session, request_iterator),
                                  name=f"p4rt-stream-{session.id}", daemon=True)
        reader.start()
        context.add_callback(session.close)
        deadline = time.monotonic() + self.arbitration_timeout
        try:
            while True:
                if session.role is None:     # not arbitrated yet: only until the deadline
                    left = deadline - time.monotonic()
                    if left <= 0:
                        log.warning("stream %s (%s) closed: no MasterArbitrationUpdate within %g s",
                                    session.id, session.peer, self.arbitration_timeout)
                        context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                                      f"StreamChannel: no MasterArbitrationUpdate within "
                                      f"{self.arbitration_timeout:g} s of opening the stream")
                        return
                    try:
                        item = session.outbox.get(timeout=min(left, 0.5))
                    except queue.Empty:
                        continue
                else:
                    item = session.outbox.get()
                if isinstance(item, tuple):  # ("close", error)
                    error = item[1]
                    if error is not None:
                        context.abort(error.code, error.message)
                    return
                yield item
        finally:
            self.arbitration.remove(session)

    def _read_stream(self, session: StreamSession, request_iterator):
        try:
            for request in request_iterator:
                kind = request.WhichOneof("update")
                if kind == "arbitration":
                    try:
                        self.arbitration.update(session, request.arbitration)
                    except P4RuntimeError as error:
                        session.close(error)
                        return
                elif kind == "packet":
                    self._packet_out(session, request.packet)
                else:
                    self._stream_error(session, unimplemented(
                        f"StreamChannel: {kind} messages are not supported"), None)
        except grpc.RpcError:
            pass  # the client went away
        except Exception:
            log.exception("StreamChannel reader failed")
        finally:
            session.close()

    def _packet_out(self, session, packet):
        try:
            if not self.arbitration.is_primary(session) or session.role:
                raise permission_denied("PacketOut: only the primary client of the default role may "
                                        "send packets")
            self.packet_path.packet_out(packet)
        except P4RuntimeError as error:
            self._stream_error(session, error, packet)

    @staticmethod
    def _stream_error(session, error, packet):
        response = p4runtime_pb2.StreamMessageResponse()
        response.error.canonical_code = rpc_code(error.code)
        response.error.message = error.message
        if packet is not None:
            response.error.packet_out.packet_out.CopyFrom(packet)
        session.send(response)
