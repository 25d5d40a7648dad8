"""testbed.switch_model.SwitchModel served over UDP: a fake switch for tests and local demos.

Workers talk to it exactly as to the real switch (plain UDP to its address). It can impair the
traffic, with a seeded RNG so tests are repeatable: drop contributions or results, duplicate
results, and reorder results (hold one back and deliver it after the next). ``service_time``
makes it a slow switch: it spends that long on every packet it receives (retransmissions
included), like a software switch under load, so a window of many slots takes long to turn around.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass

from p4reduce.protocol.constants import Mode
from testbed.switch_model import SwitchModel
from testbed.udp_stand_in import UdpStandIn


def _busy_until(t: float) -> None:
    """Wait until perf_counter() reaches t; sleeps most of it (a busy loop would starve the
    workers of the CPU), the remainder is too short for sleep's granularity."""
    left = t - time.perf_counter()
    if left > 0.0002:
        time.sleep(left - 0.0001)
    while time.perf_counter() < t:
        pass


@dataclass
class Impairments:
    loss_up: float = 0.0       # probability a contribution is lost on its way to the switch
    loss_down: float = 0.0     # probability a result is lost on its way to a worker
    duplicate: float = 0.0     # probability a result is delivered twice
    reorder: float = 0.0       # probability a result is held back behind the next one
    seed: int = 0


class FakeSwitch(UdpStandIn):
    """A thread answering UDP aggregation packets with testbed.switch_model's state machine."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, impair: Impairments | None = None,
                 model: SwitchModel | None = None, service_time: float = 0.0,
                 stall: tuple[float, ...] | None = None):
        if service_time < 0:
            raise ValueError(f"service_time must be >= 0, got {service_time}")
        self.service_time = service_time
        # (n, seconds[, late_s]): after the n-th packet, answer nothing for that long (and drop
        # what queued); with late_s, that packet arrives late_s after the freeze began
        self.stall: tuple[float, ...] | None = stall
        # (due, packet): the packet the switch froze on, when `stall` has a third element: it is
        # processed that long after the freeze began, as a datagram stuck in a queue meanwhile
        self._late: tuple[float, tuple[bytes, str, int]] | None = None
        self.model = model or SwitchModel()
        self.layout = self.model.layout       # the layout of the switch it stands in for
        self.impair = impair or Impairments()
        self._rng = random.Random(self.impair.seed)
        self._held: list = []
        super().__init__(host, port, rcvbuf=4 << 20, name="fakeswitch")

    def add_job(self, job_id: int, n_workers: int, slot_count: int, sparse: bool = False, slot_base: int = 0,
                wire_token: int = 0) -> None:
        self.model.add_job(job_id, slot_base, slot_count, n_workers, Mode.SPARSE if sparse else Mode.DENSE,
                           wire_token=wire_token)

    def add_worker(self, job_id: int, rank: int, ip: str, port: int) -> None:
        self.model.add_worker(job_id, rank, ip, port)

    def _deliver(self, payload: bytes, dest) -> None:
        imp = self._rng
        if imp.random() < self.impair.loss_down:
            return
        copies = 2 if imp.random() < self.impair.duplicate else 1
        if imp.random() < self.impair.reorder:
            self._held.append((payload, dest))
            return
        for _ in range(copies):
            self.sock.sendto(payload, dest)
        while self._held:
            self.sock.sendto(*self._held.pop(0))

    def _drain(self) -> None:
        """Drop what queued up while frozen (a frozen switch loses what its buffers cannot hold)."""
        self.sock.setblocking(False)
        try:
            while True:
                self.sock.recv(65536)
        except (BlockingIOError, OSError):
            pass
        finally:
            self.sock.setblocking(True)
            self.sock.settimeout(0.1)

    def _serve(self) -> None:
        while not self._stop.is_set():
            if self._late is not None and time.monotonic() >= self._late[0]:
                due, self._late = self._late[1], None
                self._process(*due)
            try:
                data, (ip, port) = self.sock.recvfrom(65536)
            except TimeoutError:
                while self._held:  # nothing else is coming: release what was held back
                    self.sock.sendto(*self._held.pop(0))
                continue
            except OSError:
                if self._stop.is_set():
                    return
                continue
            self.received += 1
            if self.stall is not None and self.received == self.stall[0]:
                late = len(self.stall) > 2
                if late:       # held from now: release_late() may deliver it during the freeze
                    self._late = (time.monotonic() + self.stall[2], (data, ip, port))
                time.sleep(self.stall[1])      # the switch frozen, as a host starved of the CPU
                self._drain()
                if late:
                    continue
            self._process(data, ip, port)

    def release_late(self) -> bool:
        """Process the held-back packet now (a test's moment, e.g. right after the controller reset
        the job's slots); False when none is held."""
        late, self._late = self._late, None
        if late is None:
            return False
        self._process(*late[1])
        return True

    def _process(self, data: bytes, ip: str, port: int) -> None:
        """One datagram through the model: service time, loss, the results it gives."""
        if self.service_time:
            _busy_until(time.perf_counter() + self.service_time)
        if self._rng.random() < self.impair.loss_up:
            return
        with_lock = self.model.receive(ip, port, data)
        for d in with_lock.deliveries:
            try:
                self._deliver(d.payload, (d.ip, d.port))
            except OSError:
                pass
