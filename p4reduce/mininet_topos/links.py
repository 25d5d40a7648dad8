"""Link emulation options (bandwidth, delay, loss, MTU) for Mininet links: the command line's --bw,
--delay, --loss and --mtu, and the benchmarks' named settings (bench/links.py), one type for both.

Bandwidth uses TCLink (tbf) with a queue of DEFAULT_QUEUE_MS unless told otherwise (`queue_ms`):
Mininet's own default (15 kB + a 15 kB burst, 1.2 ms at 100 Mbit/s) holds about 27 full-size
frames, less than one worker's window of rounds (64 slots of ~1.1 kB), so a shaped run measured
drops in the worker's own egress queue (45 % of its packets, 2.2x the payload sent) rather than
the link. Delay and loss use netem through TCLink when the kernel has it; when
it does not (minimal VM kernels lack sch_netem), loss is emulated with an nftables netdev table on
both ends' egress -- the same place netem sits, before packet taps, so the P4 target never sees a
lost frame -- and delay is refused with a clear error rather than silently ignored, unless the
options say the delay is optional (benchmarks: the results then record it as not applied).

Host links (a worker's link to its switch: --bw, --delay, --loss) and uplinks (every
switch-to-switch link: --uplink-bw, --uplink-delay, --uplink-loss) are shaped apart, each by its
own LinkOptions; an uplink's errors name the --uplink-* option (`option_prefix`).

The MTU applies to every interface of the network (hosts, switch ports, links between switches):
a link is only as wide as its narrower end. Jumbo frames let a packet carry more lanes
(docs/protocol.md, "Wider packets on links with a larger MTU"); the program must be built for it
(`make build MTU=9000 LANES=1024 SUBBLOCK=64`), and P4Network refuses a program whose dense
packet does not fit the links.
"""
import argparse
import gzip
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

LOSS_TABLE = "p4reduce_loss"
DEFAULT_MTU = 1500                    # Ethernet's, and every Linux interface's unless told
MIN_MTU = 576                         # the smallest IPv4 datagram every host must accept (RFC 791)
MAX_MTU = 65535                       # the largest a veth takes (and an IPv4 total length)
# tbf queue depth of a shaped link, as the time to drain it: 10 ms = 125 kB at 100 Mbit/s, a
# switch-like buffer that holds a worker's window (the benchmarks' shaped links use the same)
DEFAULT_QUEUE_MS = 10.0


class LinkOptionError(ValueError):
    """A link option is malformed or cannot be applied on this machine."""


@dataclass(frozen=True)
class LinkOptions:
    bw_mbps: float | None = None
    delay: str | None = None          # e.g. "1ms", "200us"
    loss_pct: float = 0.0             # 0..100, per direction
    queue_ms: float | None = None     # tbf queue depth as the time to drain it (None: DEFAULT_QUEUE_MS)
    mtu: int | None = None            # IPv4 MTU of every interface, bytes (None: DEFAULT_MTU)
    delay_optional: bool = False      # without netem: leave the delay out (and say so) instead of refusing
    name: str = ""                    # a named setting (benchmarks), reported with its results
    option_prefix: str = ""           # "uplink-": errors name --uplink-bw, ... (the switch-to-switch links')

    def __post_init__(self) -> None:
        if self.bw_mbps is not None and not 0 < self.bw_mbps <= 100000:
            raise LinkOptionError(f"{self.option('bw')} {self.bw_mbps}: must be in (0, 100000] Mbit/s")
        if self.delay is not None and not re.fullmatch(r"\d+(\.\d+)?(us|ms|s)", self.delay):
            raise LinkOptionError(f"{self.option('delay')} {self.delay!r}: expected a duration such as 2ms or 500us")
        if not 0 <= self.loss_pct < 100:
            raise LinkOptionError(f"{self.option('loss')} {self.loss_pct}: must be a percentage in [0, 100)")
        if self.queue_ms is not None and not self.queue_ms > 0:
            raise LinkOptionError(f"queue {self.queue_ms} ms: must be > 0")
        if self.mtu is not None and (isinstance(self.mtu, bool) or not isinstance(self.mtu, int)
                                     or not MIN_MTU <= self.mtu <= MAX_MTU):
            raise LinkOptionError(f"--mtu {self.mtu}: must be a whole number of bytes in {MIN_MTU}..{MAX_MTU}")

    def option(self, name: str) -> str:
        """The command-line option these options' `name` came from: '--bw', or '--uplink-bw'."""
        return f"--{self.option_prefix}{name}"

    @property
    def link_mtu(self) -> int:
        """The MTU the interfaces really have."""
        return DEFAULT_MTU if self.mtu is None else self.mtu

    @property
    def tbf_queue_ms(self) -> float | None:
        """The tbf queue depth really applied, ms (None on a link without a bandwidth limit)."""
        if self.bw_mbps is None:
            return None
        return DEFAULT_QUEUE_MS if self.queue_ms is None else self.queue_ms

    @property
    def shaped(self) -> bool:
        return self.bw_mbps is not None or self.delay is not None or self.loss_pct > 0

    def effective_delay(self) -> str | None:
        """The delay that is really applied (None without netem)."""
        return self.delay if self.delay and netem_available() else None

    def tclink_params(self) -> dict:
        """What TCLink applies itself: bandwidth always, delay/loss only through netem."""
        params: dict = {}
        if self.bw_mbps is not None:
            params["bw"] = self.bw_mbps
            params["use_tbf"] = True      # tbf: no htb quantum warnings, same shaping
            params["latency_ms"] = self.tbf_queue_ms
        if netem_available():
            if self.delay:
                params["delay"] = self.delay
            if self.loss_pct:
                params["loss"] = self.loss_pct
        elif self.delay and not self.delay_optional:
            raise LinkOptionError(
                f"{self.option('delay')} {self.delay}: this kernel has no netem qdisc (sch_netem), which link "
                f"delay needs; run without {self.option('delay')} or on a kernel with CONFIG_NET_SCH_NETEM")
        return params

    def needs_nft_loss(self) -> bool:
        return self.loss_pct > 0 and not netem_available()

    def applied(self) -> str:
        """What the links really are, in words, including what could not be applied."""
        mtu = f", MTU {self.mtu}" if self.mtu is not None else ""
        if not self.shaped:
            return "unshaped veth" + mtu
        parts = []
        if self.bw_mbps is not None:
            parts.append(f"{self.bw_mbps:g} Mbit/s (tbf, {self.tbf_queue_ms:g} ms queue)")
        if self.delay:
            parts.append(f"{self.delay} delay (netem)" if self.effective_delay()
                         else f"{self.delay} delay NOT applied: kernel lacks sch_netem")
        if self.loss_pct:
            parts.append(f"{self.loss_pct:g}% loss ({'netem' if netem_available() else 'nftables'})")
        return ", ".join(parts) + mtu

    def describe(self) -> dict:
        """The options and what was applied (topology description, benchmark results)."""
        return {"name": self.name or None, "bw_mbps": self.bw_mbps, "delay": self.delay,
                "loss_pct": self.loss_pct, "queue_ms": self.tbf_queue_ms, "mtu": self.link_mtu,
                "loss_method": ("netem" if netem_available() else "nftables") if self.loss_pct else None,
                "delay_applied": self.effective_delay() is not None if self.delay else None,
                "applied": self.applied()}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--bw/--delay/--loss/--mtu and --uplink-bw/--uplink-delay/--uplink-loss on a CLI parser."""
    parser.add_argument("--bw", type=float, default=None, metavar="MBPS",
                        help="bandwidth of every worker link, Mbit/s (TCLink tbf, a 10 ms queue)")
    parser.add_argument("--delay", default=None, metavar="DURATION",
                        help="one-way delay of every worker link, e.g. 1ms (needs netem)")
    parser.add_argument("--loss", type=float, default=0.0, metavar="PERCENT",
                        help="random loss of every worker link, percent per direction, e.g. 2")
    parser.add_argument("--mtu", type=int, default=None, metavar="BYTES",
                        help=f"MTU of every interface, hosts and switch ports, {MIN_MTU}..{MAX_MTU} "
                             f"(default {DEFAULT_MTU}); the program must be built for it: "
                             "make build MTU=BYTES")
    # read as text and checked by uplink_from_args: a bad value is one line naming the option
    parser.add_argument("--uplink-bw", default=None, metavar="MBPS",
                        help="bandwidth of every switch-to-switch link, Mbit/s (tbf, a 10 ms queue; two-tier, tree; "
                             "default unshaped)")
    parser.add_argument("--uplink-delay", default=None, metavar="DURATION",
                        help="one-way delay of every switch-to-switch link, e.g. 1ms (needs netem)")
    parser.add_argument("--uplink-loss", default=None, metavar="PERCENT",
                        help="random loss of every switch-to-switch link, percent per direction, e.g. 1")


def from_args(args: argparse.Namespace) -> LinkOptions:
    """The worker links' options (--bw, --delay, --loss, --mtu)."""
    return LinkOptions(bw_mbps=args.bw, delay=args.delay, loss_pct=args.loss, mtu=getattr(args, "mtu", None))


def uplink_from_args(args: argparse.Namespace) -> LinkOptions:
    """The switch-to-switch links' options (--uplink-bw, --uplink-delay, --uplink-loss; --mtu is
    every link's); LinkOptionError naming the option for a value that is not one."""
    bw, loss = getattr(args, "uplink_bw", None), getattr(args, "uplink_loss", None)
    return LinkOptions(bw_mbps=None if bw is None else _number(bw, "--uplink-bw", "a rate in Mbit/s such as 100"),
                       delay=getattr(args, "uplink_delay", None),
                       loss_pct=0.0 if loss is None else _number(loss, "--uplink-loss", "a percentage such as 1"),
                       mtu=getattr(args, "mtu", None), option_prefix="uplink-")


def _number(value: object, option: str, expected: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        raise LinkOptionError(f"{option} {value!r}: expected {expected}") from None


@lru_cache(maxsize=1)
def netem_available() -> bool:
    """True when the kernel knows the netem qdisc (probed on a throwaway dummy device of our own)."""
    probe = f"p4rnetem{uuid.uuid4().hex[:6]}"
    try:
        subprocess.run(["ip", "link", "add", probe, "type", "dummy"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        # Cannot probe (no dummy driver, no root): say what /proc/config.gz says, else assume no.
        return _config_has("CONFIG_NET_SCH_NETEM")
    try:
        result = subprocess.run(["tc", "qdisc", "add", "dev", probe, "root", "netem", "delay", "1ms"],
                                capture_output=True)
        return result.returncode == 0
    finally:
        subprocess.run(["ip", "link", "del", probe], capture_output=True)


def _config_has(option: str) -> bool:
    try:
        with gzip.open("/proc/config.gz", "rt") as config:
            return any(line.startswith(option + "=") for line in config)
    except OSError:
        return False


def nft_loss_script(interfaces: Iterable[str], loss_pct: float, table: str = LOSS_TABLE) -> str:
    """An nft script dropping loss_pct percent of the frames each interface sends."""
    threshold = round(loss_pct * 100)          # per 10,000
    chains = []
    for i, intf in enumerate(interfaces):
        chains.append(
            f"  chain egress{i} {{ type filter hook egress device \"{intf}\" priority 0; "
            f"numgen random mod 10000 < {threshold} counter drop; }}")
    return f"table netdev {table} {{\n" + "\n".join(chains) + "\n}\n"


def apply_nft_loss(node: Any, interfaces: Iterable[str], loss_pct: float, table: str = LOSS_TABLE,
                   option: str = "--loss") -> None:
    """Install the loss table in node's network namespace (node.cmd runs there); errors name
    `option` (the host links' --loss, or --uplink-loss)."""
    if not shutil.which("nft"):
        raise LinkOptionError(f"{option}: this kernel has no netem and the nft command is missing "
                              "(apt-get install nftables, or `make setup`)")
    script = nft_loss_script(interfaces, loss_pct, table)
    with tempfile.NamedTemporaryFile("w", prefix="p4reduce-loss-", suffix=".nft") as f:
        f.write(script)
        f.flush()
        out = node.cmd(f"nft -f {f.name}; echo rc=$?")
    if "rc=0" not in out:
        raise LinkOptionError(f"{option} on {node.name}: nft refused the loss table: {out.strip()}")


def apply_mtu(net_links: Iterable[Any], mtu: int) -> None:
    """Set `mtu` on both ends of every link (each end in its node's namespace: a host's own, a
    switch's the root one) and read it back; raises LinkOptionError naming an interface that
    refused it."""
    for link in net_links:
        for intf in (link.intf1, link.intf2):
            out = intf.node.cmd(f"ip link set dev {intf.name} mtu {mtu}; ip -o link show dev {intf.name}")
            found = re.search(r" mtu (\d+) ", out)
            if found is None or int(found[1]) != mtu:
                raise LinkOptionError(f"--mtu {mtu}: interface {intf.name} of {intf.node.name} "
                                      f"refused it: {out.strip()}")


def remove_nft_loss(node: Any, table: str = LOSS_TABLE) -> None:
    node.cmd(f"nft delete table netdev {table} 2>/dev/null")
