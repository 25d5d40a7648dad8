"""A switch stand-in serving UDP on loopback from a thread: the socket, the thread and their
lifetime, shared by the fake switch (the reference model) and the P4 program on p4sim's engine."""
from __future__ import annotations

import socket
import threading
from typing import Any, Self


class UdpStandIn:
    """Binds a UDP socket (0.1 s timeouts, so the serving loop sees a stop soon); `_serve` is the
    subclass's loop, run by start() until stop()."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, rcvbuf: int | None = None,
                 name: str = "stand-in"):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.bind((host, port))
        self.sock.settimeout(0.1)
        self.addr: tuple[str, int] = self.sock.getsockname()
        self.received = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)

    def _serve(self) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2)
        self.sock.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
