"""The program compiles cleanly with p4sim-compile, at the default sizes and at others, and its
control-plane names are the ones protocol/p4names.py promises."""
import json

import numpy as np
import pytest

from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.protocol.constants import Mode
from p4reduce.protocol.program import compile_program
from p4reduce.protocol.wire import Layout
from testbed.fabric import Fabric
from testbed.lossy_net import LossyNetwork
from testbed.reference_worker import JobRun


def test_compiles_without_warnings(tmp_path):
    _, stderr = compile_program(tmp_path)
    assert stderr.strip() == ""


def test_names_and_sizes(compiled):
    prog = json.loads(compiled.read_text())
    tables = {t["name"]: t for p in prog["pipelines"] for t in p["tables"]}
    for name, keys in [(N.JOBS, N.JOBS_KEY), (N.WORKERS, N.WORKERS_KEY), (N.IPV4_ROUTES, N.IPV4_ROUTES_KEY),
                       (N.L2_FORWARD, N.L2_FORWARD_KEY), (N.WORKER_ADDRS, N.WORKER_ADDRS_KEY)]:
        assert tuple(k["name"] for k in tables[name]["key"]) == keys, name
    registers = {r["name"]: r for r in prog["register_arrays"]}
    for name in (N.SEEN, N.COUNT, N.ROUND_OFFSET, N.UNION_BITMAP, N.MIN_NEXT, N.MAX_EXP):
        assert registers[name]["size"] == 2 * C.SLOTS, name
    lanes = [n for n in registers if ".sb" in n]
    assert len(lanes) == C.LANES and N.lane_register(C.NUM_SUBBLOCKS - 1, C.SUBBLOCK - 1) in registers
    assert registers[N.SEEN]["bitwidth"] == C.MAX_WORKERS
    counters = {c["name"]: c for c in prog["counter_arrays"]}
    assert counters[N.DROP_REASONS]["size"] == C.DROP_REASONS_SIZE
    assert counters[N.AGG_EVENTS]["size"] == C.AGG_EVENTS_SIZE
    # set_rank binds a worker to a switch port as wide as standard_metadata.ingress_port
    actions = {a["name"]: a for a in prog["actions"]}
    assert [(r["name"], r["bitwidth"]) for r in actions[N.SET_RANK]["runtime_data"]] == [("rank", 8), ("port", 9)]


def test_p4info_names(compiled):
    p4info = compiled.with_name("p4reduce.p4info.txtpb").read_text()
    for name in (N.JOBS, N.WORKERS, N.WORKER_ADDRS, N.SET_JOB, N.SET_WORKER_ADDR, N.DROP_REASONS, N.SEEN):
        assert f'name: "{name}"' in p4info, name


@pytest.mark.parametrize("lanes,subblock,slots,max_workers", [(64, 16, 64, 64), (16, 4, 32, 8), (8, 8, 16, 4)])
def test_other_sizes_aggregate(tmp_path, lanes, subblock, slots, max_workers):
    from p4reduce.p4sim.engine import Switch
    json_path, stderr = compile_program(tmp_path, (f"LANES={lanes}", f"SUBBLOCK={subblock}",
                                                   f"SLOTS={slots}", f"MAX_WORKERS={max_workers}"))
    assert stderr.strip() == ""
    layout = Layout(lanes, subblock)
    fabric = Fabric(Switch(str(json_path)), layout=layout, slots=slots, max_workers=max_workers)
    rng = np.random.default_rng(lanes)
    n = min(max_workers, 5)
    for job_id, mode in ((1, Mode.SPARSE), (2, Mode.DENSE)):
        fabric.add_job(job_id, n, slot_base=4 * (job_id - 1), slot_count=4, mode=mode)
        tensors = [rng.integers(-9, 9, 7 * lanes + 3).astype(np.int32) * (rng.random(7 * lanes + 3) < 0.2)
                   for _ in range(n)]
        run = JobRun(tensors, job_id, 4, mode, layout=layout)
        LossyNetwork(fabric.send, seed=job_id, loss=0.1, dup=0.1).run({job_id: run})
        assert (run.results() == np.sum(tensors, axis=0)).all()


def test_bad_sizes_are_refused(tmp_path):
    with pytest.raises(RuntimeError, match="LANES must be a multiple of SUBBLOCK"):
        compile_program(tmp_path, ("LANES=30",))
    with pytest.raises(RuntimeError, match="1..16"):
        compile_program(tmp_path, ("LANES=64", "SUBBLOCK=2"))
