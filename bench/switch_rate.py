"""Benchmark: in-process packets/s of the p4sim engine (not a test).

    python -m bench.switch_rate [--seconds S] [--agg-json PATH] [--lanes N --workers W]

* L2 forwarding: a one-table exact-match L2 switch (BMv2 JSON built below), 64-byte frames.
* Aggregation, closed loop: W workers each send their packet for a slot; the last one completes it
  and is multicast to the W workers.  The program is p4src/p4reduce.p4 compiled with p4sim-compile
  when `--agg-json` is not given and the compiler can build it; otherwise the ground-truth
  agg_mini program (8 lanes, 3 workers) from ../shared/p4-reference is used and the output says so.
Reference point: simple_switch_grpc aggregates ~2,800 packets/s (32 lanes, 4 workers, one core).
"""
import argparse
import json
import os
import pathlib
import struct
import sys
import time

from p4sim.engine import Switch

REPO = pathlib.Path(__file__).resolve().parent.parent
SHARED_AGG = REPO.parent / "shared" / "p4-reference" / "p4c-out" / "agg_mini.json"


def l2_program():
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


def rate(fn, seconds):
    n = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(200):
            fn()
        n += 200
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


def bench_l2(seconds):
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


def compile_p4reduce():
    """BMv2 JSON of p4src/p4reduce.p4 via p4sim-compile, or None when that is not possible yet."""
    src = REPO / "p4src" / "p4reduce.p4"
    if not src.exists():
        return None
    try:
        import subprocess
        import tempfile
        out = pathlib.Path(tempfile.mkdtemp(prefix="p4sim-bench-")) / "p4reduce.json"
        r = subprocess.run([sys.executable, "-m", "p4sim.compile", "-o", str(out), str(src)],
                           capture_output=True, text=True, timeout=300, cwd=REPO)
        if r.returncode == 0 and out.exists():
            return out
    except Exception:  # noqa: BLE001 - the bench falls back to the reference program
        pass
    return None


def bench_agg_mini(path, seconds):
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0, help="duration of each measurement")
    ap.add_argument("--agg-json", help="BMv2 JSON of an aggregation program with agg_mini's wire format")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    results = {"l2_forwarding_pps": round(bench_l2(args.seconds))}
    agg = args.agg_json or (str(SHARED_AGG) if SHARED_AGG.exists() else None)
    if agg:
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
