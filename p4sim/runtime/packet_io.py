"""The packet path: frames from ports or from PacketOut go through the engine; its output goes to
front-panel ports or, for the CPU port, to the primary controllers as PacketIn.

@controller_header metadata: PacketOut metadata is packed (P4Info order, most significant bit
first) into the packet_out header in front of the payload, and the frame enters the pipeline on
the CPU port, as on BMv2. Frames the pipeline sends to the CPU port start with the packet_in
header, which becomes PacketIn metadata.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from p4.v1 import p4runtime_pb2

from . import bytestrings
from .errors import failed_precondition, invalid

if TYPE_CHECKING:
    from .arbitration import Arbitration
    from .device import Device
    from .p4info_index import ControllerHeaderInfo

log = logging.getLogger("p4sim.runtime")


def pack_header(header: ControllerHeaderInfo, metadata: Iterable[p4runtime_pb2.PacketMetadata],
                what: str = "PacketOut") -> bytes:
    """Bytes of a controller header from PacketMetadata messages (missing fields are 0)."""
    values = {}
    known = {f.id: f for f in header.fields}
    for item in metadata:
        info = known.get(item.metadata_id)
        if info is None:
            raise invalid(f"{what}: metadata id {item.metadata_id} is not a field of "
                          f"controller header '{header.name}'")
        values[item.metadata_id] = bytestrings.decode(
            item.value, info.bitwidth, f"{what} metadata '{info.name}'")
    bits, total = 0, 0
    for info in header.fields:
        bits = (bits << info.bitwidth) | values.get(info.id, 0)
        total += info.bitwidth
    pad = (-total) % 8
    return (bits << pad).to_bytes((total + pad) // 8, "big")


def unpack_header(header: ControllerHeaderInfo, frame: bytes) -> tuple[list[p4runtime_pb2.PacketMetadata], bytes]:
    """(metadata, payload) of a frame that starts with the controller header."""
    total = header.bitwidth
    size = (total + 7) // 8
    if len(frame) < size:
        return [], frame
    bits = int.from_bytes(frame[:size], "big") >> ((-total) % 8)
    metadata = []
    shift = total
    for info in header.fields:
        shift -= info.bitwidth
        value = (bits >> shift) & ((1 << info.bitwidth) - 1)
        metadata.append(p4runtime_pb2.PacketMetadata(
            metadata_id=info.id, value=bytestrings.encode(value)))
    return metadata, frame[size:]


class PacketPath:
    """Moves frames between ports, the engine and controllers. Never raises on a bad frame."""

    def __init__(self, device: Device, arbitration: Arbitration | None = None) -> None:
        self.device = device
        self.arbitration = arbitration
        self.port_sink: Callable[[int, bytes], None] | None = None  # front-panel output
        self.packet_in_listeners: list[Callable[[int, bytes], None]] = []  # raw CPU frames
        # diagnostics only: updated without a lock (a rare lost increment does not matter)
        self.stats = {"in": 0, "out": 0, "to_cpu": 0, "dropped": 0, "errors": 0}

    def _count(self, key, n=1):
        self.stats[key] += n

    def inject(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """Run one frame arriving on `port`; returns the engine's (port, bytes) output list."""
        engine = self.device.engine
        self._count("in")
        if engine is None:
            self._count("dropped")
            return []
        try:
            outputs = engine.process(port, frame)
        except Exception:  # a bad packet or an engine bug must not stop the switch
            self._count("errors")
            log.exception("engine failed on a %d-byte packet from port %d (dropped)", len(frame), port)
            return []
        if not outputs:
            self._count("dropped")
        cpu_port = self.device.cpu_port
        for out_port, data in outputs:
            if cpu_port is not None and out_port == cpu_port:
                self._count("to_cpu")
                self.to_controller(data)
            elif self.port_sink is not None:
                self._count("out")
                try:
                    self.port_sink(out_port, data)
                except Exception:
                    log.exception("sending %d bytes on port %d failed", len(data), out_port)
        return outputs

    # -- controller side -----------------------------------------------------------------------
    def packet_out(self, packet: p4runtime_pb2.PacketOut) -> None:
        """Inject a PacketOut on the CPU port (FAILED_PRECONDITION without pipeline/CPU port)."""
        device = self.device
        if device.engine is None:
            raise failed_precondition("PacketOut: no forwarding pipeline config has been set")
        if device.cpu_port is None:
            raise failed_precondition("PacketOut: the switch has no CPU port (start it with "
                                      "-- --cpu-port N)")
        header = None
        if device.pipeline is not None:
            header = device.pipeline.index.controller_headers.get("packet_out")
        if header is not None:
            frame = pack_header(header, packet.metadata) + packet.payload
        elif len(packet.metadata):
            raise invalid("PacketOut: metadata given but the P4Info has no packet_out "
                          "@controller_header")
        else:
            frame = packet.payload
        self.inject(device.cpu_port, frame)

    def to_controller(self, frame: bytes) -> None:
        cpu_port = self.device.cpu_port
        assert cpu_port is not None     # frames come here from the CPU port only
        for listener in list(self.packet_in_listeners):
            try:
                listener(cpu_port, frame)
            except Exception:
                log.exception("packet-in listener failed")
        if self.arbitration is None:
            return
        message = p4runtime_pb2.StreamMessageResponse()
        header = None
        if self.device.pipeline is not None:
            header = self.device.pipeline.index.controller_headers.get("packet_in")
        if header is not None:
            metadata, payload = unpack_header(header, frame)
            message.packet.metadata.extend(metadata)
            message.packet.payload = payload
        else:
            message.packet.payload = frame
        for session in self.arbitration.primaries():
            session.send(message)
