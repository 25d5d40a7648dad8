"""Interface byte/packet counters, read from the kernel rather than computed.

Bytes on the wire are what the kernel's interface statistics say, so protocol headers, ACKs,
retransmissions and control traffic are all included. Two sources give the same numbers:

* ``/sys/class/net/IF/statistics/*``: for interfaces in the namespace that mounted ``/sys``
  (the root namespace, where a Mininet switch's ports live);
* ``/proc/PID/net/dev``: the namespace of process PID, which is how a Mininet host's own
  interfaces are read (Mininet hosts share the root's mount of ``/sys`` but not its network
  namespace, so ``/sys/class/net`` cannot show them). ``PID`` may be ``self``.
"""
from __future__ import annotations

import dataclasses
import os

FIELDS = ("rx_bytes", "rx_packets", "tx_bytes", "tx_packets")


class CounterError(RuntimeError):
    """An interface's counters cannot be read (missing interface, process or file)."""


@dataclasses.dataclass(frozen=True)
class IfCounters:
    """A snapshot of one interface's counters."""

    rx_bytes: int
    rx_packets: int
    tx_bytes: int
    tx_packets: int

    def __sub__(self, earlier: IfCounters) -> IfCounters:
        """Counters accumulated since `earlier`; a decrease means the interface was reset."""
        deltas = {f: getattr(self, f) - getattr(earlier, f) for f in FIELDS}
        negative = [f for f, v in deltas.items() if v < 0]
        if negative:
            raise CounterError(f"interface counters went backwards ({', '.join(negative)}): "
                               "was the interface recreated between the two readings?")
        return IfCounters(**deltas)

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def parse_proc_net_dev(text: str) -> dict[str, IfCounters]:
    """Parse the text of /proc/net/dev into {interface: IfCounters}.

    Format (two header lines, then one line per interface):
    ``  eth0: rxbytes rxpkts errs drop fifo frame compressed multicast txbytes txpkts ...``
    """
    result: dict[str, IfCounters] = {}
    lines = text.splitlines()
    if len(lines) < 2 or "|" not in lines[0]:
        raise CounterError("not a /proc/net/dev table: missing the two header lines")
    for lineno, line in enumerate(lines[2:], start=3):
        if not line.strip():
            continue
        name, sep, rest = line.partition(":")
        if not sep:
            raise CounterError(f"/proc/net/dev line {lineno}: no ':' after the interface name")
        cols = rest.split()
        if len(cols) < 16:
            raise CounterError(f"/proc/net/dev line {lineno}: expected 16 counters, got {len(cols)}")
        try:
            nums = [int(c) for c in cols[:16]]
        except ValueError as exc:
            raise CounterError(f"/proc/net/dev line {lineno}: non-numeric counter ({exc})") from None
        result[name.strip()] = IfCounters(rx_bytes=nums[0], rx_packets=nums[1],
                                          tx_bytes=nums[8], tx_packets=nums[9])
    return result


def read_proc(iface: str, pid: int | str = "self") -> IfCounters:
    """Counters of `iface` as seen from the network namespace of process `pid`."""
    path = f"/proc/{pid}/net/dev"
    try:
        with open(path) as fh:
            table = parse_proc_net_dev(fh.read())
    except OSError as exc:
        raise CounterError(f"cannot read {path}: {exc.strerror}") from None
    if iface not in table:
        raise CounterError(f"interface {iface!r} not in {path} (has: {', '.join(sorted(table))})")
    return table[iface]


def read_sysfs(iface: str, root: str = "/sys/class/net") -> IfCounters:
    """Counters of `iface` from /sys/class/net/IF/statistics (the namespace that mounted /sys)."""
    base = os.path.join(root, iface, "statistics")
    if not os.path.isdir(base):
        raise CounterError(f"interface {iface!r} has no {base} (not in this namespace?)")
    values = {}
    for field in FIELDS:
        path = os.path.join(base, field)
        try:
            with open(path) as fh:
                values[field] = int(fh.read().strip())
        except (OSError, ValueError) as exc:
            raise CounterError(f"cannot read {path}: {exc}") from None
    return IfCounters(**values)
