"""The link settings benchmarks run at: named mininet_topos LinkOptions for every host-switch link.

Delay needs the kernel's netem qdisc. Kernels without it (minimal VM kernels) still get the
bandwidth limit; the missing delay is recorded with every result (``applied`` says what was
really applied), never silently dropped.
"""
from __future__ import annotations

import dataclasses

from p4reduce.mininet_topos.links import LinkOptions

UNSHAPED = LinkOptions(name="unshaped")
# shaped links get mininet_topos.links' default tbf queue (10 ms, a switch-like buffer), as make run's
SHAPED = LinkOptions(name="100mbit-1ms", bw_mbps=100, delay="1ms", delay_optional=True)
# random loss on every host-switch link, each direction (netem, or nftables without it): the loss section
LOSS_1 = LinkOptions(name="loss-1pct", loss_pct=1.0)
LOSS_5 = LinkOptions(name="loss-5pct", loss_pct=5.0)
# jumbo frames (MTU 9000 on every interface, gloo's included): the wide-packet section, whose
# program carries 1024 lanes per packet (bench/grid.py JUMBO_DEFINES)
JUMBO_MTU = 9000
UNSHAPED_JUMBO = dataclasses.replace(UNSHAPED, name="unshaped-mtu9000", mtu=JUMBO_MTU)
SHAPED_JUMBO = dataclasses.replace(SHAPED, name="100mbit-1ms-mtu9000", mtu=JUMBO_MTU)
LINKS = {s.name: s for s in (UNSHAPED, SHAPED, LOSS_1, LOSS_5, UNSHAPED_JUMBO, SHAPED_JUMBO)}
GRID_LINKS = (UNSHAPED.name, SHAPED.name)          # the allreduce grid's settings
LOSS_LINKS = (UNSHAPED.name, LOSS_1.name, LOSS_5.name)
JUMBO_LINKS = (UNSHAPED_JUMBO.name, SHAPED_JUMBO.name)


def parse_link(name: str) -> LinkOptions:
    """A link setting by name; the error lists the known ones."""
    try:
        return LINKS[name]
    except KeyError:
        raise ValueError(f"unknown link setting {name!r} (known: {', '.join(LINKS)})") from None
