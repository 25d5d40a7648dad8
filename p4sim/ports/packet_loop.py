"""The port side of the switch: one thread polls every port socket and feeds frames to the packet
path; the packet path's output comes back here to be sent (and written to pcap)."""
import logging
import os
import select
import threading
from collections.abc import Callable
from typing import Any

from .af_packet import AfPacketPort
from .port_set import PortSet

log = logging.getLogger("p4sim.ports")

BATCH = 64  # frames read from one socket before looking at the others


class PacketLoop:
    """Owns the ports. `start()` runs the poll thread; `stop()` closes sockets and pcaps."""

    def __init__(self, ports: dict[int, str], pcap_dir: str | None = None):
        self._port_set = PortSet(ports, pcap_dir)   # closes what it opened if one fails
        self.ports = self._port_set.ports
        self.pcaps = self._port_set.pcaps
        wake_r, wake_w = os.pipe()
        self._wake_r: int | None = wake_r      # None once closed
        self._wake_w: int | None = wake_w
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.inject: Callable[[int, bytes], Any] | None = None  # set by the owner: callable(port, frame)

    def send(self, port: int, frame: bytes) -> None:
        """Output of the pipeline: unknown ports (not given with -i) silently drop the frame."""
        target = self.ports.get(port)
        if target is None:
            log.debug("dropping %d bytes for port %d: no interface on that port", len(frame), port)
            return
        if port in self.pcaps:
            self.pcaps[port][1].write(frame)
        target.send(frame)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="p4sim-packet-loop", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        poller = select.poll()
        by_fd: dict[int, AfPacketPort] = {}
        for each in self.ports.values():
            poller.register(each.fileno(), select.POLLIN)
            by_fd[each.fileno()] = each
        assert self._wake_r is not None     # started before close()
        poller.register(self._wake_r, select.POLLIN)
        while not self._stop.is_set():
            try:
                events = poller.poll(1000)
            except InterruptedError:
                continue
            for fd, mask in events:
                if fd == self._wake_r:
                    continue
                port = by_fd.get(fd)
                if port is None:
                    continue
                if mask & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
                    port.receive()  # reading clears a pending socket error
                    if not port.exists():
                        # the interface was deleted (e.g. Mininet tearing links down first):
                        # stop polling it instead of spinning on its error state
                        log.warning("port %d: interface '%s' is gone; no longer polled",
                                    port.number, port.interface)
                        poller.unregister(fd)
                        del by_fd[fd]
                        continue
                for _ in range(BATCH):
                    frame = port.receive()
                    if frame is None:
                        break
                    if port.number in self.pcaps:
                        self.pcaps[port.number][0].write(frame)
                    try:
                        assert self.inject is not None, "PacketLoop.inject is not set"
                        self.inject(port.number, frame)
                    except Exception:  # the packet path already guards; belt and braces
                        log.exception("packet from port %d failed", port.number)

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        try:
            if self._wake_w is not None:
                os.write(self._wake_w, b"x")
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(timeout)
        self.close()

    def close(self) -> None:
        port_set = getattr(self, "_port_set", None)
        if port_set is not None:
            port_set.close()
        for fd in (getattr(self, "_wake_r", None), getattr(self, "_wake_w", None)):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._wake_r = self._wake_w = None
