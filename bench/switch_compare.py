"""Switch packet rate on veth: p4sim-switch, and simple_switch_grpc when it is on PATH, as a ratio.

Placeholder until the aggregation program and its traffic generator land.
"""
from __future__ import annotations

import shutil


def compare(grid, progress) -> dict:
    return {"veth": {"status": "skipped",
                     "error": "veth packet-rate harness waits for p4src/p4reduce.p4 and protocol/",
                     "simple_switch_grpc": shutil.which("simple_switch_grpc")}}
