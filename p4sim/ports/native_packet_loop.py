"""The native port loop: frames move between AF_PACKET sockets and a native switch in a C thread
(p4sim/engine/native/runtime/rt_ports.c) that never takes the GIL.

Python opens the sockets (errors name the -i binding, as the Python loop's do) and keeps one
thread that drains the C loop's queue: frames for the CPU port go to `packet_in` (PacketIn on the
P4Runtime stream), pcap records to the per-port pcap files, trace text to `trace`, log lines to
the log; and, while the current engine is the Python one (a program the native backend does not
run), every received frame goes to `inject`, whose outputs come back through `send`.

Same interface as PacketLoop (inject, send, start, stop) plus `attach(engine)`, called whenever
the device installs a new engine.

The C loop sends with PACKET_QDISC_BYPASS (no queueing discipline between the switch and a veth,
whose qdisc is `noqueue` anyway). A port whose interface has a queueing qdisc -- link shaping: tbf,
netem, htb, as Mininet's TCLink installs for --bw, --uplink-bw, --delay -- sends through it
instead, as BMv2 does: bypassing it would leave the switch's side of a shaped link unshaped
(between two switches, the whole link).
"""
from __future__ import annotations

import ctypes
import logging
import os
import re
import struct
import subprocess
import threading
from typing import TYPE_CHECKING

from ..engine.native import binding, toolchain
from .port_set import PortSet

if TYPE_CHECKING:
    from p4sim.engine import Engine

log = logging.getLogger("p4sim.ports")

QUEUE_BYTES = 64 << 20
TAKE_BYTES = 8 << 20
Q_RX, Q_CPU, Q_PCAP_IN, Q_PCAP_OUT, Q_TRACE, Q_LOG = 1, 2, 3, 4, 5, 6
_RECORD = struct.Struct("=IIIIQ")  # kind, port, length, padding, timestamp (ns)
SOL_PACKET = 263
PACKET_QDISC_BYPASS = 20


def root_qdisc(interface: str) -> str | None:
    """The kind of the interface's root qdisc (`noqueue` on a plain veth, `tbf` on a shaped
    Mininet link), or None when it cannot be told."""
    try:
        out = subprocess.run(["ip", "-o", "link", "show", "dev", interface], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"\bqdisc (\S+)", out)
    return m.group(1) if m else None


def bypasses_qdisc(interface: str) -> bool:
    """Whether the port may send past the qdisc: only when there is nothing to bypass."""
    return root_qdisc(interface) == "noqueue"


class NativePacketLoop:
    def __init__(self, ports: dict[int, str], pcap_dir: str | None = None, cpu_port: int | None = None):
        _path, lib = toolchain.runtime()
        self._lib = binding.declare(lib, {**binding.SIGNATURES, **binding.PORTS_SIGNATURES})
        self._port_set = PortSet(ports, pcap_dir)   # closes what it opened if one fails
        self.ports = self._port_set.ports
        self.pcaps = self._port_set.pcaps
        items = sorted(self.ports.items())
        n = len(items)
        fds = (ctypes.c_int * max(1, n))(*[p.fileno() for _, p in items])
        numbers = (ctypes.c_uint16 * max(1, n))(*[num for num, _ in items])
        names = (ctypes.c_char_p * max(1, n))(*[p.interface.encode() for _, p in items])
        self._c = self._lib.rt_ports_new(n, fds, numbers, names, -1 if cpu_port is None else cpu_port,
                                         int(bool(self.pcaps)), QUEUE_BYTES)
        if not self._c:
            self.close()
            raise MemoryError("native port loop: out of memory")
        for _, port in items:     # the C loop set PACKET_QDISC_BYPASS: off where a qdisc shapes the link
            if not bypasses_qdisc(port.interface):
                port.sock.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, 0)
                log.info("port %d (%s): sending through its qdisc (%s)", port.number, port.interface,
                         root_qdisc(port.interface) or "unknown")
        self._engine: Engine | None = None
        self._stop = threading.Event()
        self._reader: threading.Thread | None = None
        self.inject = None      # callable(port, frame): frames for the Python engine
        self.packet_in = None   # callable(frame): frames the program sent to the CPU port
        self.trace = None       # callable(line): trace lines of packets the loop processed

    # ---- engine ----------------------------------------------------------------------------
    def attach(self, engine: Engine) -> None:
        """Packets go through `engine` from now on (a native switch in C, anything else in Python).
        The previous engine is released only after the loop stopped using it."""
        handle = getattr(engine, "_c", None) if getattr(engine, "backend", None) == "native" else None
        self._lib.rt_ports_set_switch(self._c, handle)
        self._engine = engine

    # ---- frames from Python --------------------------------------------------------------------
    def send(self, port: int, frame: bytes) -> None:
        """Output of the pipeline run in Python: unknown ports (not given with -i) drop the frame."""
        if self._c is None or self._lib.rt_ports_send(self._c, port, bytes(frame), len(frame)) < 0:
            log.debug("dropping %d bytes for port %d: no interface on that port", len(frame), port)

    # ---- running ---------------------------------------------------------------------------------
    def start(self) -> None:
        self._reader = threading.Thread(target=self._drain_loop, name="p4sim-native-ports", daemon=True)
        self._reader.start()
        if self._lib.rt_ports_start(self._c):
            raise OSError("native port loop: cannot start its thread")

    def _drain_loop(self) -> None:
        fd = self._lib.rt_ports_event_fd(self._c)
        buf = ctypes.create_string_buffer(TAKE_BYTES)
        while True:
            try:
                os.read(fd, 8)  # blocks (without the GIL) until the C loop queued something
            except OSError:
                return
            self._drain(buf)
            if self._stop.is_set():
                self._drain(buf)
                return

    def _drain(self, buf):
        while True:
            n = self._lib.rt_ports_take(self._c, buf, len(buf))
            if not n:
                break
            data = buf.raw[:n]
            pos = 0
            while pos < n:
                kind, port, length, _pad, ts = _RECORD.unpack_from(data, pos)
                pos += _RECORD.size
                payload = data[pos:pos + length]
                pos += (length + 7) & ~7
                try:
                    self._handle(kind, port, payload, ts)
                except Exception:  # one bad record must not stop the loop's reader
                    log.exception("native port loop: handling a record of kind %d failed", kind)
        for pcap_in, pcap_out in self.pcaps.values():
            pcap_in.flush()
            pcap_out.flush()

    def _handle(self, kind, port, payload, ts):
        if kind == Q_RX:
            if self.inject is not None:
                self.inject(port, payload)
        elif kind == Q_CPU:
            if self.packet_in is not None:
                self.packet_in(payload)
        elif kind in (Q_PCAP_IN, Q_PCAP_OUT):
            pcaps = self.pcaps.get(port)
            if pcaps is not None:
                pcaps[0 if kind == Q_PCAP_IN else 1].write(payload, ts / 1e9, flush=False)
        elif kind == Q_TRACE:
            if self.trace is not None:
                for line in payload.decode("utf-8", "replace").splitlines():
                    self.trace(line)
        elif kind == Q_LOG:
            log.warning("%s", payload.decode("utf-8", "replace"))

    def stats(self) -> dict[str, int]:
        out = (ctypes.c_uint64 * len(binding.PORT_STAT_NAMES))()
        self._lib.rt_ports_stats(self._c, out)
        return dict(zip(binding.PORT_STAT_NAMES, out))

    def stop(self, timeout: float = 2.0) -> None:
        if self._c is not None:
            self._lib.rt_ports_stop(self._c)   # no more frames from the C thread
            self._stop.set()
            self._lib.rt_ports_notify(self._c)
            if self._reader is not None:
                self._reader.join(timeout)
        self.close()

    def close(self) -> None:
        c = getattr(self, "_c", None)
        reader = getattr(self, "_reader", None)
        if c is not None:
            self._c = None
            if reader is not None and reader.is_alive():  # still inside a callback: keep its memory
                log.warning("native port loop: the queue reader did not stop; not freeing the loop")
            else:
                self._lib.rt_ports_free(c)
        port_set = getattr(self, "_port_set", None)
        if port_set is not None:
            port_set.close()
        self._engine = None
