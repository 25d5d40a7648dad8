"""Indirect meters: two-rate three-color markers (RFC 2698, color blind), as BMv2 meter arrays.

A cell without a configuration marks every packet GREEN, like a fresh BMv2.  Rates are given in
units per second (bytes or packets, per the meter's type), bursts in units, as P4Runtime's
MeterConfig (cir, cburst, pir, pburst).
"""
import time
from collections.abc import Callable

from .program import MeterInfo

GREEN, YELLOW, RED = 0, 1, 2


class MeterArray:
    def __init__(self, info: MeterInfo, clock: Callable[[], float] = time.monotonic) -> None:
        self.info = info
        self.clock = clock
        self.by_bytes = info.type == "bytes"
        self.configs: list[tuple | None] = [None] * info.size     # (cir, cburst, pir, pburst)
        self.state: list[list[float] | None] = [None] * info.size  # [committed tokens, peak tokens, last time]

    def configure(self, index: int, config: tuple | None) -> None:
        if config is None:
            self.configs[index] = self.state[index] = None
            return
        cir, cburst, pir, pburst = config
        self.configs[index] = (cir, cburst, pir, pburst)
        self.state[index] = [float(cburst), float(pburst), float(self.clock())]

    def execute(self, index: int, packet_length: int) -> int:
        if not 0 <= index < len(self.configs):
            return GREEN
        cfg = self.configs[index]
        if cfg is None:
            return GREEN
        cir, cburst, pir, pburst = cfg
        st = self.state[index]
        if st is None:
            return GREEN
        now = self.clock()
        elapsed = max(0.0, now - st[2])
        st[2] = now
        st[0] = min(float(cburst), st[0] + elapsed * cir)
        st[1] = min(float(pburst), st[1] + elapsed * pir)
        units = packet_length if self.by_bytes else 1
        if st[1] < units:
            return RED
        if st[0] < units:
            st[1] -= units
            return YELLOW
        st[0] -= units
        st[1] -= units
        return GREEN
