"""A switch that behaves like real simple_switch_grpc where it matters to register access: its
P4Runtime server (p4sim's) answers UNIMPLEMENTED to RegisterEntry reads and writes, and the
registers are served over BMv2's Thrift API (the bm_runtime 'standard' service, multiplexed as
simple_switch does), backed by the same p4sim engine."""
import socket
import threading
from concurrent import futures

import grpc
from bm_runtime.standard import Standard
from bm_runtime.standard.ttypes import InvalidRegisterOperation, RegisterOperationErrorCode
from p4.v1 import p4runtime_pb2_grpc
from thrift.protocol import TBinaryProtocol
from thrift.server import TServer
from thrift.TMultiplexedProcessor import TMultiplexedProcessor
from thrift.transport import TSocket, TTransport

from p4sim.runtime import P4RuntimeServer
from p4sim.runtime.p4runtime_service import P4RuntimeService


class _NoRegistersService(P4RuntimeService):
    @staticmethod
    def _has_register(entities):
        return any(e.HasField("register_entry") for e in entities)

    def Read(self, request, context):
        if self._has_register(request.entities):
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "Register reads are not supported yet")
        yield from super().Read(request, context)

    def Write(self, request, context):
        if self._has_register([u.entity for u in request.updates]):
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "Register writes are not supported yet")
        return super().Write(request, context)


class _RegisterHandler:
    """The register part of BMv2's Thrift 'standard' service, over a p4sim engine."""

    def __init__(self, device):
        self.device = device

    def _engine_call(self, fn, *args):
        try:
            return fn(*args)
        except ValueError:
            raise InvalidRegisterOperation(code=RegisterOperationErrorCode.INVALID_INDEX) from None

    def bm_register_read(self, cxt_id, name, idx):
        return self._engine_call(self.device.engine.register_read, name, idx)

    def bm_register_read_all(self, cxt_id, name):
        size = self.device.engine.program.registers[name].size if hasattr(self.device.engine.program, "registers") \
            else None
        out, i = [], 0
        while size is None or i < size:
            try:
                out.append(self.device.engine.register_read(name, i))
            except ValueError:
                break
            i += 1
        return out

    def bm_register_write(self, cxt_id, name, idx, value):
        self._engine_call(self.device.engine.register_write, name, idx, value)

    def bm_register_write_range(self, cxt_id, name, start, end, value):
        for i in range(start, end):
            self._engine_call(self.device.engine.register_write, name, i, value)


class Bmv2LikeSwitch:
    def __init__(self):
        self.p4rt = P4RuntimeServer("127.0.0.1:0")  # provides device, arbitration, packet path
        self.grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(
            _NoRegistersService(self.p4rt.device, self.p4rt.packet_path, self.p4rt.arbitration), self.grpc)
        self.grpc_port = self.grpc.add_insecure_port("127.0.0.1:0")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.thrift_port = s.getsockname()[1]
        processor = TMultiplexedProcessor()
        processor.registerProcessor("standard", Standard.Processor(_RegisterHandler(self.p4rt.device)))
        self._thrift_socket = TSocket.TServerSocket("127.0.0.1", self.thrift_port)
        self.thrift = TServer.TThreadedServer(processor, self._thrift_socket, TTransport.TBufferedTransportFactory(),
                                              TBinaryProtocol.TBinaryProtocolFactory(), daemon=True)
        self._stopped = threading.Event()

    def start(self):
        self.grpc.start()
        self._thrift_socket.listen()
        self.thrift_thread = threading.Thread(target=self._serve_thrift, daemon=True)
        self.thrift_thread.start()
        return self

    def _serve_thrift(self):
        """TThreadedServer.serve() never returns once its socket is closed: it spins on accept and
        logs a traceback each turn, for the rest of the test session. This loop ends on stop()."""
        while not self._stopped.is_set():
            try:
                client = self._thrift_socket.accept()
            except Exception:
                if self._stopped.is_set() or self._thrift_socket.handle is None:
                    return
                continue
            if client is not None:
                threading.Thread(target=self.thrift.handle, args=(client,), daemon=True).start()

    @property
    def grpc_addr(self):
        return f"127.0.0.1:{self.grpc_port}"

    def stop(self):
        self.grpc.stop(0.2)
        self._stopped.set()
        handle = self._thrift_socket.handle
        if handle is not None:
            try:
                handle.shutdown(socket.SHUT_RDWR)   # wakes the blocked accept()
            except OSError:
                pass
        self._thrift_socket.close()
