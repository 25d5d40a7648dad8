"""The link settings benchmarks run at (TCLink parameters for every host-switch link).

Delay needs the kernel's netem qdisc. Kernels without it (minimal VM kernels) still get the
bandwidth limit; the missing delay is recorded with every result (``applied`` says what was
really applied), never silently dropped.
"""
from __future__ import annotations

import functools
import subprocess
import uuid
from dataclasses import dataclass

# tbf queue depth, as the time to drain it: 10 ms = 125 kB at 100 Mbit/s, a switch-like buffer.
# (Mininet's default, 15 kB, drops most of an incast burst and measures TCP timeouts instead.)
QUEUE_LATENCY_MS = 10.0


@functools.lru_cache(maxsize=1)
def netem_available() -> bool:
    """True when `tc ... netem` works here (probed on a throwaway veth pair of our own)."""
    name = f"bnchq{uuid.uuid4().hex[:6]}"
    try:
        made = subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name", name + "p"],
                              capture_output=True)
    except OSError:
        return False
    if made.returncode != 0:
        return False
    try:
        probe = subprocess.run(["tc", "qdisc", "add", "dev", name, "root", "netem", "delay", "1ms"],
                               capture_output=True)
        return probe.returncode == 0
    finally:
        subprocess.run(["ip", "link", "del", name], capture_output=True)


@dataclass(frozen=True)
class LinkSetting:
    name: str
    bw_mbit: float | None = None
    delay: str | None = None

    def effective_delay(self) -> str | None:
        """The delay that will really be applied (None without netem)."""
        return self.delay if self.delay and netem_available() else None

    def tclink_params(self) -> dict:
        """Keyword arguments for mininet.link.TCLink (empty: unshaped veth)."""
        params = {}
        if self.bw_mbit is not None:
            params["bw"] = self.bw_mbit
            params["use_tbf"] = True
            params["latency_ms"] = QUEUE_LATENCY_MS
        if self.effective_delay():
            params["delay"] = self.delay
        return params

    def applied(self) -> str:
        """What the links really are, in words, including what could not be applied."""
        if self.bw_mbit is None and self.delay is None:
            return "unshaped veth"
        parts = []
        if self.bw_mbit is not None:
            parts.append(f"{self.bw_mbit:g} Mbit/s (tbf, {QUEUE_LATENCY_MS:g} ms queue)")
        if self.delay:
            parts.append(f"{self.delay} delay (netem)" if self.effective_delay()
                         else f"{self.delay} delay NOT applied: kernel lacks sch_netem")
        return ", ".join(parts)

    def as_dict(self) -> dict:
        return {"name": self.name, "bw_mbit": self.bw_mbit, "delay": self.delay,
                "delay_applied": self.effective_delay() is not None if self.delay else None,
                "applied": self.applied()}


UNSHAPED = LinkSetting("unshaped")
SHAPED = LinkSetting("100mbit-1ms", bw_mbit=100, delay="1ms")
LINKS = {s.name: s for s in (UNSHAPED, SHAPED)}


def parse_link(name: str) -> LinkSetting:
    """A link setting by name; the error lists the known ones."""
    try:
        return LINKS[name]
    except KeyError:
        raise ValueError(f"unknown link setting {name!r} (known: {', '.join(LINKS)})") from None
