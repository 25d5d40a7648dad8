"""pcap files, one per port and direction like BMv2's --pcap (IFACE_in.pcap, IFACE_out.pcap)."""
import os
import struct
import threading
import time

_GLOBAL_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)  # LINKTYPE_ETHERNET
_RECORD = struct.Struct("<IIII")


class PcapWriter:
    """Appends Ethernet frames to a pcap file; safe to call from several threads."""

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        self._file = open(path, "wb")
        self._file.write(_GLOBAL_HEADER)
        self._file.flush()

    def write(self, frame: bytes, timestamp: float | None = None, flush: bool = True) -> None:
        """Append one record; flush=False leaves it buffered until flush() (batched writers)."""
        now = time.time() if timestamp is None else timestamp
        seconds = int(now)
        micros = int((now - seconds) * 1e6)
        with self._lock:
            if self._file.closed:
                return
            self._file.write(_RECORD.pack(seconds, micros, min(len(frame), 65535), len(frame)))
            self._file.write(frame[:65535])
            if flush:
                self._file.flush()

    def flush(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()


def port_pcaps(directory: str, interface: str) -> tuple[PcapWriter, PcapWriter]:
    """(input writer, output writer) for one interface in `directory` (created if missing)."""
    os.makedirs(directory, exist_ok=True)
    return (PcapWriter(os.path.join(directory, f"{interface}_in.pcap")),
            PcapWriter(os.path.join(directory, f"{interface}_out.pcap")))


def read_pcap(path: str) -> list[bytes]:
    """Frames of a pcap file written by PcapWriter (for tests and tools)."""
    frames = []
    with open(path, "rb") as handle:
        data = handle.read()
    offset = len(_GLOBAL_HEADER)
    while offset + _RECORD.size <= len(data):
        _s, _us, captured, _orig = _RECORD.unpack_from(data, offset)
        offset += _RECORD.size
        frames.append(data[offset:offset + captured])
        offset += captured
    return frames
