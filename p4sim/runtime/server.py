"""A running P4Runtime server: device + arbitration + packet path + grpc.Server."""
import logging
from concurrent import futures

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .arbitration import Arbitration, StreamLimits
from .device import Device
from .p4runtime_service import ARBITRATION_TIMEOUT, P4RuntimeService
from .packet_io import PacketPath
from .roles import Roles
from .tls import TlsOptions

log = logging.getLogger("p4sim.runtime")


class ServerError(Exception):
    """The server could not start (e.g. the address is in use)."""


class P4RuntimeServer:
    """Owns the P4Runtime side of a switch. `start()` listens, `stop()` ends streams and RPCs."""

    def __init__(self, address: str = "127.0.0.1:9559", device_id: int = 0,
                 cpu_port: int | None = None, drop_port: int = 511, max_workers: int = 32,
                 roles: Roles | None = None, streams_per_client: int = 8, max_streams: int | None = None,
                 backend: str | None = None, tls: TlsOptions | None = None,
                 arbitration_timeout: float = ARBITRATION_TIMEOUT):
        """Each StreamChannel holds one of the `max_workers` threads for its whole life: at most
        `max_streams` (default half of them) are open at once, `streams_per_client` per client
        host, so unary RPCs always find a thread; a stream that has not arbitrated makes room for
        a new one when a limit is reached, and is closed after `arbitration_timeout` seconds.
        `roles`: the non-default roles (roles.py). `backend`: the engine's ("native", "python",
        or None for p4sim.engine's default). `tls`: serve over TLS (tls.py), else in clear."""
        if not arbitration_timeout > 0:
            raise ValueError(f"arbitration_timeout must be positive, not {arbitration_timeout}")
        self.address = address
        self.tls = tls
        self.device = Device(device_id, cpu_port, drop_port, backend)
        self.arbitration = Arbitration(device_id, roles)
        self.packet_path = PacketPath(self.device, self.arbitration)
        total = max_streams if max_streams is not None else max(1, max_workers // 2)
        if total >= max_workers:
            raise ValueError(f"max_streams ({total}) must leave threads for unary RPCs (max_workers "
                             f"{max_workers})")
        self.service = P4RuntimeService(self.device, self.packet_path, self.arbitration,
                                        StreamLimits(min(streams_per_client, total), total),
                                        arbitration_timeout)
        # no SO_REUSEPORT: a second switch on the same address must fail, not share the port
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers,
                                                              thread_name_prefix="p4rt"),
                                   options=[("grpc.so_reuseport", 0),
                                            ("grpc.max_receive_message_length", 256 << 20),
                                            ("grpc.max_send_message_length", 256 << 20)])
        # registered before the generated handlers, so it is the one found for Read: its
        # responses are already serialized by the service (runtime/wire.py)
        read = grpc.unary_stream_rpc_method_handler(
            self.service.Read, request_deserializer=p4runtime_pb2.ReadRequest.FromString,
            response_serializer=_serialized)
        self._server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("p4.v1.P4Runtime", {"Read": read}),))
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self.service, self._server)
        self.port = None

    def start(self) -> int:
        """Listen on the address; returns the bound port (useful with port 0)."""
        try:
            if self.tls is not None:
                self.port = self._server.add_secure_port(self.address, self.tls.credentials())
            else:
                self.port = self._server.add_insecure_port(self.address)
        except RuntimeError as exc:
            raise ServerError(f"cannot listen on {self.address}: {exc}") from None
        if not self.port:
            raise ServerError(f"cannot listen on {self.address} (address in use or invalid)")
        self._server.start()
        log.info("P4Runtime server listening on %s (%s)", self.address,
                 "TLS, client certificates required" if self.tls and self.tls.client_auth
                 else "TLS" if self.tls else "no TLS")
        return self.port

    def stop(self, grace: float = 1.0) -> None:
        self.arbitration.close_all()
        self._server.stop(grace).wait(grace + 1)


def _serialized(response) -> bytes:
    """Read responses come as bytes; a message (should one slip through) is serialized."""
    return response if isinstance(response, bytes) else response.SerializeToString()

