"""`python -m p4reduce.protocol.pcap_dump FILE.pcap [--lanes]`: one line per p4reduce packet in a capture
(p4sim-switch --pcap, tcpdump), other packets summarized by scapy. For looking at what the switch
and the workers actually exchanged."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from . import constants as C


def describe(frames: Iterable[bytes], show_lanes: bool = False) -> list[str]:
    from scapy.layers.l2 import Ether

    from .scapy_layer import P4Reduce

    lines = []
    for i, frame in enumerate(frames):
        pkt = Ether(frame)
        if pkt.haslayer(P4Reduce):
            p = pkt[P4Reduce]
            kind = C.MsgType(p.msg_type).name if p.msg_type in (1, 2) else f"type{p.msg_type}"
            flags = "|".join(str(f.name) for f in C.Flags if f and int(p.flags) & f) or "-"
            nxt = "none" if p.next_offset == C.NEXT_NONE else str(p.next_offset)
            line = (f"{i:6d} {pkt['IP'].src}:{pkt['UDP'].sport} > {pkt['IP'].dst}:{pkt['UDP'].dport} "
                    f"{kind} job={p.job_id} rank={p.rank} slot={p.slot}/v{p.ver} off={p.offset} "
                    f"next={nxt} exp={p.exponent} bitmap={p.bitmap:#06x} count={p.count} flags={flags}")
            if show_lanes:
                line += " lanes=" + " ".join(str(v) for v in p.lanes())
        else:
            line = f"{i:6d} {pkt.summary()}"
        lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m p4reduce.protocol.pcap_dump",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("pcap", help="capture file (pcap)")
    ap.add_argument("--lanes", action="store_true", help="print the lanes of every p4reduce packet")
    args = ap.parse_args(argv)
    from scapy.utils import rdpcap
    try:
        packets = rdpcap(args.pcap)
    except (OSError, ValueError) as exc:
        print(f"pcap_dump: cannot read {args.pcap}: {exc}", file=sys.stderr)
        return 2
    for line in describe((bytes(p) for p in packets), args.lanes):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
