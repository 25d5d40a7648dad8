"""A subset of BMv2's Thrift runtime API ("standard" service), so `simple_switch_CLI` can read
and write registers and counters of p4sim-switch as it does on simple_switch_grpc.

Served: bm_get_config / bm_get_config_md5 (the CLI loads the program from them),
bm_register_read / read_all / write / write_range / reset, bm_counter_read / write / reset_all,
bm_mt_get_num_entries. Anything else answers a Thrift application error (not implemented).

As on simple_switch (one context, id 0): a request for any other context id is answered with a
Thrift application error of type UNKNOWN (BMv2 looks the context up with a checked access that
throws, and its Thrift server turns the exception into an application error); the connection
stays usable. A register write stores the value's low `width` bits, two's complement for a
negative value (BMv2 masks the big integer with 2^width - 1): -5 into a bit<8> register reads
back 251, 300 reads back 44. A negative index or one past the array is INVALID_INDEX.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from p4sim.engine import Engine

    from .device import Device

log = logging.getLogger("p4sim.runtime")


def _thrift_modules():
    from bm_runtime.standard import Standard, ttypes
    from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol  # noqa: F401
    from thrift.server import TServer
    from thrift.TMultiplexedProcessor import TMultiplexedProcessor
    from thrift.transport import TSocket, TTransport
    return Standard, ttypes, TBinaryProtocol, TServer, TMultiplexedProcessor, TSocket, TTransport


# the one context of a simple_switch
CONTEXT_ID = 0


def _unknown_context_class() -> type:
    from thrift.Thrift import TApplicationException

    class UnknownContext(TApplicationException):
        """A request for a context this switch does not have (answered as BMv2 does)."""

        def __init__(self, cxt_id: int) -> None:
            super().__init__(TApplicationException.UNKNOWN,
                             f"unknown context id {cxt_id} (this switch has one context, {CONTEXT_ID})")
    return UnknownContext


class _QuietUnknownContext:
    """A root-logger filter: the generated Thrift processors log every TApplicationException a
    handler raises with its traceback (logging.exception); an unknown context id is a client's
    mistake, logged by the handler as one line instead."""

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, self.cls)


_UnknownContext: type | None = None


def unknown_context_error() -> type:
    """The exception class for unknown context ids (created once, with its log filter)."""
    global _UnknownContext
    if _UnknownContext is None:
        _UnknownContext = _unknown_context_class()
        logging.getLogger().addFilter(_QuietUnknownContext(_UnknownContext))
    return _UnknownContext


class StandardHandler:
    """Implements the served methods over the device's current engine."""

    def __init__(self, device: Device) -> None:
        self.device = device
        _, self.ttypes, *_ = _thrift_modules()
        self._unknown_context = unknown_context_error()

    def _context(self, cxt_id: int) -> None:
        if cxt_id != CONTEXT_ID:
            log.warning("Thrift: request for unknown context id %s refused", cxt_id)
            raise self._unknown_context(cxt_id)

    # -- program -------------------------------------------------------------------------------
    def _config(self) -> str:
        device = self.device
        if device.pipeline is not None:
            return device.pipeline.config.p4_device_config.decode("utf-8", "replace")
        program = getattr(device, "loaded_program", None)
        if isinstance(program, dict):
            return json.dumps(program)
        if isinstance(program, (bytes, bytearray)):
            return program.decode("utf-8", "replace")
        if isinstance(program, str) and os.path.isfile(program):
            with open(program) as handle:
                return handle.read()
        return program or "{}"

    def bm_get_config(self) -> str:
        return self._config()

    def bm_get_config_md5(self) -> bytes:
        return hashlib.md5(self._config().encode()).digest()

    # -- registers -----------------------------------------------------------------------------
    def _register_call(self, fn: Callable[[Engine], Callable[..., Any]], cxt_id: int, *args: Any) -> Any:
        self._context(cxt_id)
        codes = self.ttypes.RegisterOperationErrorCode
        engine = self.device.engine
        if engine is None:
            raise self.ttypes.InvalidRegisterOperation(codes.ERROR)
        name = args[0]
        if name not in engine.program.registers:
            raise self.ttypes.InvalidRegisterOperation(codes.INVALID_REGISTER_NAME)
        try:
            return fn(engine)(*args)
        except ValueError:
            raise self.ttypes.InvalidRegisterOperation(codes.INVALID_INDEX) from None

    def bm_register_read(self, cxt_id: int, name: str, index: int) -> int:
        return self._register_call(lambda e: e.register_read, cxt_id, name, index)

    def bm_register_read_all(self, cxt_id: int, name: str) -> list[int]:
        return self._register_call(lambda e: e.register_read, cxt_id, name, None)

    @staticmethod
    def _masked(engine: Engine, name: str, value: int) -> int:
        """The value as BMv2 stores it: its low `width` bits (two's complement if negative)."""
        return value & ((1 << engine.program.registers[name].width) - 1)

    def bm_register_write(self, cxt_id: int, name: str, index: int, value: int) -> None:
        def write(engine):
            return lambda name_, index_, value_: engine.register_write(name_, index_,
                                                                     self._masked(engine, name_, value_))
        self._register_call(write, cxt_id, name, index, value)

    def bm_register_write_range(self, cxt_id: int, name: str, start: int, end: int, value: int) -> None:
        def write_range(engine):
            def run(name_, start_, end_, value_):
                # as BMv2: cells start..end-1; end past the array or start > end is an error
                if start_ < 0 or start_ > end_ or end_ > engine.program.registers[name_].size:
                    raise ValueError(f"range {start_}..{end_} is invalid")
                with engine.lock:
                    for index in range(start_, end_):
                        engine.register_write(name_, index, self._masked(engine, name_, value_))
            return run
        self._register_call(write_range, cxt_id, name, start, end, value)

    def bm_register_reset(self, cxt_id: int, name: str) -> None:
        self._register_call(lambda e: e.register_write, cxt_id, name, None, 0)

    # -- counters ------------------------------------------------------------------------------
    def _counter_call(self, fn: Callable[[Engine], Callable[..., Any]], cxt_id: int, *args: Any) -> Any:
        self._context(cxt_id)
        codes = self.ttypes.CounterOperationErrorCode
        engine = self.device.engine
        if engine is None:
            raise self.ttypes.InvalidCounterOperation(codes.ERROR)
        info = engine.program.counters.get(args[0])
        if info is None or info.direct:
            raise self.ttypes.InvalidCounterOperation(codes.INVALID_COUNTER_NAME)
        try:
            return fn(engine)(*args)
        except ValueError:
            raise self.ttypes.InvalidCounterOperation(codes.INVALID_INDEX) from None

    def bm_counter_read(self, cxt_id: int, name: str, index: int) -> Any:
        packets, octets = self._counter_call(lambda e: e.counter_read, cxt_id, name, index)
        return self.ttypes.BmCounterValue(bytes=octets, packets=packets)

    def bm_counter_write(self, cxt_id: int, name: str, index: int, value: Any) -> None:
        self._counter_call(lambda e: e.counter_write, cxt_id, name, index, value.packets, value.bytes)

    def bm_counter_reset_all(self, cxt_id: int, name: str) -> None:
        self._counter_call(lambda e: e.counter_write, cxt_id, name, None, 0, 0)

    # -- tables --------------------------------------------------------------------------------
    def bm_mt_get_num_entries(self, cxt_id: int, table_name: str) -> int:
        self._context(cxt_id)
        engine = self.device.engine
        if engine is None or table_name not in engine.program.tables:
            raise self.ttypes.InvalidTableOperation(self.ttypes.TableOperationErrorCode.INVALID_TABLE_NAME)
        return sum(1 for e in engine.table_entries(table_name) if not e.is_const)


SERVED = {"bm_get_config", "bm_get_config_md5", "bm_register_read", "bm_register_read_all",
          "bm_register_write", "bm_register_write_range", "bm_register_reset", "bm_counter_read",
          "bm_counter_write", "bm_counter_reset_all", "bm_mt_get_num_entries"}


def _other_services():
    """simple_pre_lag / simple_pre / simple_switch processors that know no method."""
    from bm_runtime.simple_pre import SimplePre
    from bm_runtime.simple_pre_lag import SimplePreLAG
    from sswitch_runtime import SimpleSwitch
    out = []
    for name, module in (("simple_pre_lag", SimplePreLAG), ("simple_pre", SimplePre),
                         ("simple_switch", SimpleSwitch)):
        processor = module.Processor(None)
        processor._processMap = {}
        out.append((name, processor))
    return out


class ThriftServer:
    """Serves StandardHandler on a TCP port (multiplexed as "standard", like BMv2); one thread
    per connection, as BMv2's Thrift server."""

    def __init__(self, device: Device, port: int, host: str = "127.0.0.1") -> None:
        (Standard, _ttypes, TBinaryProtocol, TServer, TMultiplexedProcessor, TSocket,
         TTransport) = _thrift_modules()
        processor = TMultiplexedProcessor()
        standard = Standard.Processor(StandardHandler(device))
        standard._processMap = {name: method for name, method in standard._processMap.items()
                                if name in SERVED}  # the rest: "Unknown function" errors
        processor.registerProcessor("standard", standard)
        for service in _other_services():  # known to simple_switch_CLI: answer, never hang up
            processor.registerProcessor(*service)
        self.port = port
        self._socket = TSocket.TServerSocket(host, port)
        self._server = TServer.TThreadedServer(
            processor, self._socket, TTransport.TBufferedTransportFactory(),
            TBinaryProtocol.TBinaryProtocolFactory(), daemon=True)
        self._stopped = threading.Event()

    def start(self) -> None:
        """Bind and serve in a daemon thread; OSError if the port is taken."""
        self._socket.listen()
        threading.Thread(target=self._serve, name="p4sim-thrift", daemon=True).start()
        log.info("Thrift runtime API (registers, counters) on port %d", self.port)

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                client = self._socket.accept()
            except Exception:
                if self._stopped.is_set():
                    return
                continue
            if client is not None:
                threading.Thread(target=self._server.handle, args=(client,), daemon=True).start()

    def stop(self) -> None:
        self._stopped.set()
        handle = getattr(self._socket, "handle", None)
        if handle is not None:
            try:
                handle.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
            except OSError:
                pass
        try:
            self._socket.close()
        except OSError:
            pass
