"""The program compiles cleanly with p4sim-compile at every layout of the data-plane tests, its
control-plane names are the ones protocol/p4names.py promises (in the BMv2 JSON and the P4Info),
and its layout and sizes can be read back from those names."""
import json

import numpy as np
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from testbed.fabric import Fabric
from testbed.lossy_net import LossyNetwork
from testbed.reference_worker import JobRun

from p4reduce.p4src.build import compile_program
from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.protocol.constants import Mode
from p4reduce.protocol.wire import Header, Layout, encode

TABLES = {N.JOBS: N.JOBS_KEY, N.WORKERS: N.WORKERS_KEY, N.IPV4_ROUTES: N.IPV4_ROUTES_KEY,
          N.L2_FORWARD: N.L2_FORWARD_KEY, N.WORKER_ADDRS: N.WORKER_ADDRS_KEY,
          N.SOURCE_GUARD: N.SOURCE_GUARD_KEY, N.TREE: N.TREE_KEY}
ACTIONS = {   # docs/protocol.md section 3: parameter names and widths
    N.SET_JOB: [("slot_base", 32), ("slot_count", 16), ("num_workers", 8), ("mcast_grp", 16), ("mode", 8),
                ("wire_token", 32)],
    N.SET_RANK: [("rank", 8), ("port", 9)],
    N.ROUTE: [("port", 9), ("dst_mac", 48), ("src_mac", 48)],
    N.FORWARD: [("port", 9)],
    N.FLOOD: [("mcast_grp", 16)],
    N.DROP_PACKET: [],
    N.SET_WORKER_ADDR: [("mac", 48), ("ip", 32), ("udp_port", 16)],
    N.HOST_SOURCE: [("ip", 32)],
    N.AGGREGATE_ROOT: [("children", 8)],
    N.AGGREGATE_CHILD: [("children", 8), ("up_port", 9), ("up_rank", 8), ("up_ip", 32), ("up_src_mac", 48),
                        ("up_dst_mac", 48)],
}
SLOT_REGISTERS = {N.SEEN: C.MAX_WORKERS, N.COUNT: 8, N.ROUND_OFFSET: 32, N.UNION_BITMAP: 16,
                  N.MIN_NEXT: 32, N.MAX_EXP: 8, N.HAVE_RESULT: 8}
COUNTERS = {N.DROP_REASONS: C.DROP_REASONS_SIZE, N.AGG_EVENTS: C.AGG_EVENTS_SIZE,
            N.EGRESS_DROPS: C.DROP_REASONS_SIZE}


@pytest.fixture(scope="module")
def p4info(compiled):
    return text_format.Parse(compiled.with_name("p4reduce.p4info.txtpb").read_text(), p4info_pb2.P4Info())


def test_compiles_without_warnings(tmp_path, layout):
    _, stderr = compile_program(tmp_path, (f"LANES={layout.lanes}", f"SUBBLOCK={layout.subblock}"))
    assert stderr.strip() == ""


def test_names_and_sizes_in_the_json(program, layout):
    tables = {t["name"]: t for p in program["pipelines"] for t in p["tables"]}
    for name, keys in TABLES.items():
        assert tuple(k["name"] for k in tables[name]["key"]) == keys, name
    actions = {a["name"]: a for a in program["actions"]}
    for name, params in ACTIONS.items():
        assert [(r["name"], r["bitwidth"]) for r in actions[name]["runtime_data"]] == params, name
    registers = {r["name"]: r for r in program["register_arrays"]}
    for name, width in SLOT_REGISTERS.items():
        assert (registers[name]["size"], registers[name]["bitwidth"]) == (2 * C.SLOTS, width), name
    lanes = {n for n in registers if n.startswith(N.lane_register(0, 0).rsplit(".", 2)[0])}
    assert lanes == {N.lane_register(k, j) for k in range(layout.num_subblocks) for j in range(layout.subblock)}
    assert all((registers[n]["size"], registers[n]["bitwidth"]) == (2 * C.SLOTS, 32) for n in lanes)
    counters = {c["name"]: c for c in program["counter_arrays"]}
    for name, size in COUNTERS.items():
        assert counters[name]["size"] == size, name


def test_names_and_layout_in_the_p4info(p4info, layout):
    """What a controller sees: every object p4names names, and the layout from the lane registers."""
    tables = {t.preamble.name: t for t in p4info.tables}
    for name, keys in TABLES.items():
        assert tuple(f.name for f in tables[name].match_fields) == keys, name
    actions = {a.preamble.name: a for a in p4info.actions}
    for name, params in ACTIONS.items():
        assert [(p.name, p.bitwidth) for p in actions[name].params] == params, name
    registers = {r.preamble.name: r for r in p4info.registers}
    assert set(SLOT_REGISTERS) <= set(registers)
    assert registers[N.SEEN].size == 2 * C.SLOTS
    assert N.lane_layout(registers) == (layout.num_subblocks, layout.subblock)
    assert set(COUNTERS) <= {c.preamble.name for c in p4info.counters}


def test_lane_layout_refuses_a_broken_grid():
    with pytest.raises(ValueError, match="no lane registers"):
        N.lane_layout([N.SEEN, N.COUNT])
    with pytest.raises(ValueError, match="2 x 2 grid"):
        N.lane_layout([N.lane_register(0, 0), N.lane_register(0, 1), N.lane_register(1, 0)])


@pytest.mark.parametrize("layout,slots,max_workers", [
    (Layout(352, 22), C.SLOTS, C.MAX_WORKERS),      # the widest packets a 1500-byte MTU carries:
    (Layout(352, 32), 64, 64),                      # 1474-byte frames, 16 and 11 sub-blocks
    (Layout(64, 16), 16, 4),
], ids=["352x22", "352x32-slots64-workers64", "64x16-slots16-workers4"])
def test_widest_packets_and_other_sizes_aggregate(tmp_path, layout, slots, max_workers):
    """Layouts beyond the data-plane suite's, and SLOTS and MAX_WORKERS (build settings too):
    register sizes and the seen width follow, and jobs aggregate exactly in lockstep with the model."""
    from p4sim.engine import Switch
    json_path, stderr = compile_program(tmp_path, (f"LANES={layout.lanes}", f"SUBBLOCK={layout.subblock}",
                                                   f"SLOTS={slots}", f"MAX_WORKERS={max_workers}"))
    assert stderr.strip() == ""
    registers = {r["name"]: r for r in json.loads(json_path.read_text())["register_arrays"]}
    assert (registers[N.SEEN]["size"], registers[N.SEEN]["bitwidth"]) == (2 * slots, max_workers)
    assert N.lane_layout(registers) == (layout.num_subblocks, layout.subblock)
    fabric = Fabric(Switch(str(json_path)), layout=layout, slots=slots, max_workers=max_workers)
    rng = np.random.default_rng(slots)
    n = min(max_workers, 5)
    for job_id, mode in ((1, Mode.SPARSE), (2, Mode.DENSE)):
        fabric.add_job(job_id, n, slot_base=4 * (job_id - 1), slot_count=4, mode=mode)
        length = 7 * layout.lanes + 3
        tensors = [rng.integers(-9, 9, length).astype(np.int32) * (rng.random(length) < 0.2) for _ in range(n)]
        run = JobRun(tensors, job_id, 4, mode, layout=layout)
        LossyNetwork(fabric.send, seed=job_id, loss=0.1, dup=0.1).run({job_id: run})
        assert (run.results() == np.sum(tensors, axis=0)).all()
    fabric.assert_counters_match_model()
    # a dense result is a full-size frame: 14 + 20 + 8 + 24 + 4 * LANES bytes
    fabric.add_job(3, n, slot_base=8, slot_count=1, mode=Mode.DENSE)
    for r in range(n):
        out = fabric.inject(*fabric.frame(3, r, encode(Header(job_id=3, rank=r, bitmap=layout.full_bitmap),
                                                       np.full(layout.lanes, r, np.int32), layout)))
    assert len(out) == n and {len(frame) for _, frame in out} == {66 + 4 * layout.lanes}
