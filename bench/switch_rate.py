"""Benchmark: in-process packets/s of the p4sim engine (not a test).

    python -m p4reduce.bench.switch_rate [--seconds S] [--p4reduce-json PATH] [--workers W] [--json]

* L2 forwarding: a one-table exact-match L2 switch (BMv2 JSON built below), 64-byte frames.
* Aggregation, closed loop: W workers each send their packet for a slot; the last one completes it
  and is multicast to the W workers.  The program is p4src/p4reduce.p4 (32 lanes, 4 workers by
  default) compiled with p4sim-compile; if that is not possible, the ground-truth agg_mini program
  (8 lanes, 3 workers) from ../shared/p4-reference is used and the output says so.
Reference point: simple_switch_grpc aggregates ~2,800 packets/s (32 lanes, 4 workers, one core).
"""
import argparse
import json
import os
import pathlib
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

from p4reduce.p4sim.engine import Switch

REPO = pathlib.Path(__file__).resolve().parent.parent
SHARED_AGG = REPO.parent / "shared" / "p4-reference" / "p4c-out" / "agg_mini.json"


def l2_program() -> dict:
    """BMv2 JSON of: parse ethernet; table dmac { eth.dst: exact } -> forward(port) / drop; emit."""
    sm_fields = [["ingress_port", 9, False], ["egress_spec", 9, False], ["egress_port", 9, False],
                 ["instance_type", 32, False], ["packet_length", 32, False], ["mcast_grp", 16, False],
                 ["egress_rid", 16, False], ["checksum_error", 1, False], ["parser_error", 32, False],
                 ["_padding", 4, False]]
    return {
        "__meta__": {"version": [2, 23]},
        "header_types": [
            {"name": "scalars_0", "id": 0, "fields": []},
            {"name": "standard_metadata", "id": 1, "fields": sm_fields},
            {"name": "ethernet_t", "id": 2, "fields": [["dst", 48, False], ["src", 48, False],
                                                       ["etype", 16, False]]},
        ],
        "headers": [
            {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True},
            {"name": "standard_metadata", "id": 1, "header_type": "standard_metadata", "metadata": True},
            {"name": "eth", "id": 2, "header_type": "ethernet_t", "metadata": False},
        ],
        "header_stacks": [], "errors": [["NoError", 0], ["PacketTooShort", 1]],
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
            {"name": "start", "id": 0, "parser_ops": [
                {"op": "extract", "parameters": [{"type": "regular", "value": "eth"}]}],
             "transitions": [{"type": "default", "value": None, "mask": None, "next_state": None}],
             "transition_key": []}]}],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["eth"]}],
        "actions": [
            {"name": "forward", "id": 0, "runtime_data": [{"name": "port", "bitwidth": 9}],
             "primitives": [{"op": "assign", "parameters": [
                 {"type": "field", "value": ["standard_metadata", "egress_spec"]},
                 {"type": "runtime_data", "value": 0}]}]},
            {"name": "drop", "id": 1, "runtime_data": [], "primitives": [
                {"op": "mark_to_drop", "parameters": [{"type": "header", "value": "standard_metadata"}]}]},
        ],
        "pipelines": [
            {"name": "ingress", "id": 0, "init_table": "dmac", "tables": [
                {"name": "dmac", "id": 0, "key": [{"match_type": "exact", "name": "hdr.eth.dst",
                                                   "target": ["eth", "dst"], "mask": None}],
                 "match_type": "exact", "type": "simple", "max_size": 4096, "with_counters": False,
                 "support_timeout": False, "direct_meters": None, "action_ids": [0, 1],
                 "actions": ["forward", "drop"], "base_default_next": None,
                 "next_tables": {"forward": None, "drop": None},
                 "default_entry": {"action_id": 1, "action_const": False, "action_data": [],
                                   "action_entry_const": False}}],
             "conditionals": [], "action_profiles": []},
            {"name": "egress", "id": 1, "init_table": None, "tables": [], "conditionals": [],
             "action_profiles": []},
        ],
        "calculations": [], "checksums": [], "register_arrays": [], "counter_arrays": [],
        "meter_arrays": [], "field_lists": [], "learn_lists": [], "extern_instances": [],
        "field_aliases": [],
    }


def rate(fn: Callable[[], None], seconds: float) -> float:
    """Calls per CPU-second of this process (one core), so other load on the machine does not count."""
    n = 0
    start = time.process_time()
    deadline = start + seconds
    while True:
        for _ in range(200):
            fn()
        n += 200
        now = time.process_time()
        if now >= deadline:
            return n / (now - start)


def bench_l2(seconds: float) -> float:
    sw = Switch(l2_program())
    for i in range(256):
        sw.table_add("dmac", {"hdr.eth.dst": i + 1}, "forward", {"port": i % 4 + 1})
    frames = [((i % 256) + 1).to_bytes(6, "big") + b"\x00\x00\x00\x00\x00\x99\x08\x00" + bytes(50)
              for i in range(64)]
    state = {"i": 0}

    def one():
        i = state["i"] = (state["i"] + 1) & 63
        out = sw.process(1, frames[i])
        assert out, "L2 benchmark frame was dropped"
    return rate(one, seconds)


def compile_p4reduce() -> pathlib.Path | None:
    """BMv2 JSON of p4src/p4reduce.p4 via p4sim-compile, or None when that is not possible."""
    import tempfile

    from p4reduce.protocol.program import ProgramBuildError, compile_program
    try:
        return compile_program(tempfile.mkdtemp(prefix="p4sim-bench-")).json_path
    except ProgramBuildError:
        return None


def bench_p4reduce(path: str | pathlib.Path, seconds: float, workers: int = 4, slots: int = 16) -> tuple[float, str]:
    """Closed loop on p4src/p4reduce.p4: `workers` workers, dense 32-lane blocks, `slots` streams.

    Each round, every worker contributes its block for one slot; the last contribution completes
    the round and is multicast back to all workers (docs/protocol.md).  Packets/s counts switch
    input packets, as for simple_switch_grpc's figure.
    """
    import numpy as np

    from p4reduce.controller.engine_writer import EngineJobWriter
    from p4reduce.controller.job_entries import JobSpec, MemberSpec
    from p4reduce.protocol import constants as PC
    from p4reduce.protocol import p4names as N
    from p4reduce.protocol.addressing import SERVICE_IP, SERVICE_MAC, host_address
    from p4reduce.protocol.frames import udp_frame
    from p4reduce.protocol.wire import Header, encode

    sw = Switch(path)
    job = 1
    hosts = [host_address(r + 1) for r in range(workers)]
    macs, ips = [h.mac for h in hosts], [h.ip for h in hosts]
    EngineJobWriter(sw).install(JobSpec(job, workers, 0, slots, PC.Mode.DENSE),
                                [MemberSpec(r, ips[r], 5000, macs[r], port=r + 1) for r in range(workers)])
    lanes = np.arange(PC.LANES, dtype=np.int32)
    rounds = 2 * slots  # both shadow copies of every slot, then the pattern repeats
    frames = []
    for k in range(rounds):
        slot, ver = k % slots, (k // slots) % 2
        for r in range(workers):
            hdr = Header(job_id=job, rank=r, slot=slot, ver=ver, offset=k * PC.LANES,
                         next_offset=(k + slots) * PC.LANES, bitmap=PC.full_bitmap())
            frames.append((r + 1, udp_frame(macs[r], SERVICE_MAC, ips[r], SERVICE_IP, 5000,
                                            PC.AGG_UDP_PORT, encode(hdr, lanes + r))))
    state = {"i": 0}
    nframes = len(frames)

    def one():
        i = state["i"]
        state["i"] = (i + 1) % nframes
        port, frame = frames[i]
        out = sw.process(port, frame)
        if i % workers == workers - 1 and len(out) != workers:
            raise RuntimeError(f"p4reduce benchmark: round did not complete (got {len(out)} packets; "
                               f"drop_reasons {sw.counter_read(N.DROP_REASONS)})")
    return rate(one, seconds), f"p4reduce ({PC.LANES} lanes, {workers} workers, dense)"


def bench_agg_mini(path: str | pathlib.Path, seconds: float) -> tuple[float, str]:
    """Closed loop on the agg_mini program: 3 workers x 16 slots, 8 int32 lanes."""
    sw = Switch(path)
    workers, slots = 3, 16
    sw.mc_group_set(1, [(w + 1, w + 1) for w in range(workers)])
    frames = []
    for slot in range(slots):
        for rank in range(workers):
            lanes = struct.pack(">8i", *[(rank + 1) * (j + 1) for j in range(8)])
            frames.append((rank + 1, b"\x00\xaa\x00\x00\x00\x01" + bytes(5) + bytes([rank + 1])
                           + b"\x88\xbc" + bytes([slot, rank, 0, 0]) + lanes))
    state = {"i": 0}
    nframes = len(frames)

    def one():
        i = state["i"]
        state["i"] = (i + 1) % nframes
        if i == 0:  # agg_mini has no slot versioning: start each round with fresh slots
            sw.register_reset("Ing.seen")
            sw.register_reset("Ing.cnt")
        port, frame = frames[i]
        out = sw.process(port, frame)
        if i % workers == workers - 1:
            assert len(out) == workers, "aggregation benchmark: slot did not complete"
    return rate(one, seconds), "agg_mini (8 lanes, 3 workers, ground truth program)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0, help="duration of each measurement")
    ap.add_argument("--p4reduce-json", help="BMv2 JSON of p4src/p4reduce.p4 (default: compile it now)")
    ap.add_argument("--workers", type=int, default=4, help="workers in the p4reduce closed loop")
    ap.add_argument("--agg-json", help="BMv2 JSON with agg_mini's wire format (used when p4reduce is unavailable)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    results: dict[str, Any] = {"l2_forwarding_pps": round(bench_l2(args.seconds))}
    p4reduce = args.p4reduce_json or compile_p4reduce()
    agg = args.agg_json or (str(SHARED_AGG) if SHARED_AGG.exists() else None)
    if p4reduce:
        pps, what = bench_p4reduce(p4reduce, args.seconds, workers=args.workers)
        results["aggregation_pps"] = round(pps)
        results["aggregation_program"] = what
    elif agg:
        pps, what = bench_agg_mini(agg, args.seconds)
        results["aggregation_pps"] = round(pps)
        results["aggregation_program"] = what if not args.agg_json else os.path.basename(agg)
    else:
        results["aggregation_pps"] = None
        results["aggregation_program"] = "none found (pass --agg-json)"
    if args.json:
        print(json.dumps(results))
    else:
        print(f"L2 forwarding (1 exact table, 256 entries): {results['l2_forwarding_pps']:,} packets/s")
        if results["aggregation_pps"] is not None:
            print(f"Aggregation [{results['aggregation_program']}]: {results['aggregation_pps']:,} packets/s")
        else:
            print(f"Aggregation: {results['aggregation_program']}")
        print("Reference: simple_switch_grpc ~2,800 packets/s (32 lanes, 4 workers, one core)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
