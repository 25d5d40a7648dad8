"""The one job-to-entries builder and its two writers: the controller's JobProgrammer (P4Runtime)
and EngineJobWriter (p4sim's in-process engine) leave the same state on a switch."""
import time

import pytest

from p4reduce.controller.connection import SwitchConnection
from p4reduce.controller.engine_writer import EngineJobWriter
from p4reduce.controller.job_entries import (
    JobSpec,
    MemberSpec,
    ParentLink,
    group_replicas,
    job_entry,
    job_multicast_group,
    member_entries,
    slot_registers,
    tree_entry,
)
from p4reduce.controller.job_programmer import JobProgrammer
from p4reduce.controller.jobs import Job, Member
from p4reduce.controller.registers import open_register_access
from p4reduce.controller.slots import SlotRange
from p4reduce.protocol import p4names
from p4reduce.protocol.constants import Mode

MEMBERS = [MemberSpec(1, "10.0.0.2", 40001, "00:00:00:00:00:02", 5),
           MemberSpec(0, "10.0.0.1", 40000, "00:00:00:00:00:01", 3)]


def test_entries_of_a_job():
    job = JobSpec(job_id=7, workers=2, slot_base=16, slot_count=4, mode=Mode.SPARSE, wire_token=0xCAFE0001)
    entry = job_entry(job)
    assert (entry.table, entry.match, entry.action) == (p4names.JOBS, {p4names.JOBS_KEY[0]: 7}, p4names.SET_JOB)
    assert entry.params == {"slot_base": 16, "slot_count": 4, "num_workers": 2, "mcast_grp": 0x107, "mode": 1,
                            "wire_token": 0xCAFE0001}
    assert entry.key().action is None and entry.key().match == entry.match
    worker, addr = member_entries(7, MEMBERS[0])
    assert worker.match == dict(zip(p4names.WORKERS_KEY, ("10.0.0.2", 40001, 7)))
    assert (worker.action, worker.params) == (p4names.SET_RANK, {"rank": 1, "port": 5})
    assert addr.match == dict(zip(p4names.WORKER_ADDRS_KEY, (7, 1)))
    assert addr.params == {"mac": "00:00:00:00:00:02", "ip": "10.0.0.2", "udp_port": 40001}
    assert group_replicas(MEMBERS) == [(3, 0), (5, 1)]                 # by rank
    assert job.multicast_group == job_multicast_group(7) == 0x100 + 7
    assert slot_registers(job) == (32, 40)                             # both copies of slots 16..19


PARENT = ParentLink(port=9, rank=1, ip="10.255.0.2", src_mac="02:ff:00:00:00:02", dst_mac="02:ff:00:00:00:01")


def test_tree_entries():
    root = tree_entry(7, 3, None)
    assert (root.table, root.match, root.action, root.params) == \
        (p4names.TREE, {p4names.TREE_KEY[0]: 7}, p4names.AGGREGATE_ROOT, {"children": 3})
    child = tree_entry(7, 2, PARENT)
    assert (child.table, child.match, child.action) == (p4names.TREE, {p4names.TREE_KEY[0]: 7}, p4names.AGGREGATE_CHILD)
    assert child.params == {"children": 2, "up_port": 9, "up_rank": 1, "up_ip": "10.255.0.2",
                            "up_src_mac": "02:ff:00:00:00:02", "up_dst_mac": "02:ff:00:00:00:01"}


def test_tree_entries_encode_for_p4runtime_and_install_in_the_engine(p4reduce_build):
    """What a P4Runtime writer sends (the P4Info's ids and widths) and what EngineJobWriter writes."""
    from p4reduce.controller.entities import decode_table_entry, table_entry
    from p4reduce.controller.p4info import P4InfoIndex
    from p4sim.engine import Switch
    p4info, bmv2 = p4reduce_build
    index = P4InfoIndex(str(p4info))
    for entry, want in ((tree_entry(4, 3, None), {"children": 3}),
                        (tree_entry(5, 2, PARENT), {"children": 2, "up_port": 9, "up_rank": 1, "up_ip": 0x0AFF0002,
                                                    "up_src_mac": 0x02FF00000002, "up_dst_mac": 0x02FF00000001})):
        d = decode_table_entry(index, table_entry(index, entry.table, entry.match, entry.action, entry.params))
        assert (d["match"], d["action"], d["params"]) == (entry.match, entry.action, want)
    engine = Switch(str(bmv2))
    writer = EngineJobWriter(engine)
    writer.install(JobSpec(job_id=5, workers=4, slot_base=0, slot_count=2), MEMBERS, tree=(2, PARENT))
    writer.set_tree(6, 3, None)
    got = {e.match[p4names.TREE_KEY[0]]: (e.action, e.params) for e in engine.table_entries(p4names.TREE)}
    assert got[5][0] == p4names.AGGREGATE_CHILD and got[5][1]["up_rank"] == 1 and got[5][1]["up_ip"] == 0x0AFF0002
    assert got[6] == (p4names.AGGREGATE_ROOT, {"children": 3})


def _engine_state(engine):
    tables = {t: sorted((tuple(sorted(e.match.items())), e.action, tuple(sorted(e.params.items())))
                        for e in engine.table_entries(t))
              for t in (p4names.JOBS, p4names.WORKERS, p4names.WORKER_ADDRS)}
    return tables, engine.mc_groups()


def test_p4runtime_and_engine_writers_leave_the_same_switch_state(p4rt_server, p4reduce_build):
    """The controller's writer over gRPC into a p4sim server, the engine writer into a fresh
    engine: same entries, same multicast group (0x100 + job), stale slot registers cleared."""
    from p4sim.engine import Switch
    server, addr = p4rt_server
    p4info, bmv2 = p4reduce_build
    conn = SwitchConnection(addr, election_id=1).connect(timeout=5)
    conn.push_pipeline(str(p4info), str(bmv2))
    spec = JobSpec(job_id=3, workers=2, slot_base=8, slot_count=4, mode=Mode.DENSE)
    stale = {p4names.SEEN: {16: 0b11, 23: 1}, p4names.COUNT: {17: 1}}

    by_grpc = server.device.engine
    for name, cells in stale.items():
        for i, v in cells.items():
            by_grpc.register_write(name, i, v)
    now = time.monotonic()
    job = Job("same", spec.job_id, spec.workers, "dense", SlotRange(spec.slot_base, spec.slot_count), 10.0, now, 0.0)
    programmer = JobProgrammer(conn, open_register_access(conn))
    programmer.install_job(job)
    for m in MEMBERS:
        job.members[m.rank] = Member(m.rank, m.ip, m.udp_port, m.mac, m.port, now)
        programmer.add_member(job, job.members[m.rank])
    conn.close()

    in_process = Switch(str(bmv2))
    for name, cells in stale.items():
        for i, v in cells.items():
            in_process.register_write(name, i, v)
    EngineJobWriter(in_process).install(spec, MEMBERS)

    assert _engine_state(by_grpc) == _engine_state(in_process)
    assert _engine_state(in_process)[1] == {0x103: [(3, 0), (5, 1)]}
    for engine in (by_grpc, in_process):
        for name in stale:
            assert [engine.register_read(name, i) for i in range(16, 24)] == [0] * 8


@pytest.mark.parametrize("lanes,subblock", [(64, 8), (48, 16)])
def test_program_layout_is_read_from_the_loaded_programs_p4info(tmp_path, lanes, subblock):
    """The layout workers are told is the one compiled into the program, not a Python constant."""
    from p4reduce.controller.job_programmer import program_layout
    from p4reduce.controller.p4info import P4InfoIndex
    from p4reduce.p4src.build import compile_program
    built = compile_program(tmp_path, defines=[f"LANES={lanes}", f"SUBBLOCK={subblock}"])
    layout = program_layout(P4InfoIndex(str(built.p4info_path)))
    assert (layout.lanes, layout.subblock) == (lanes, subblock)


def test_a_program_without_lane_registers_has_no_layout():
    from p4.config.v1 import p4info_pb2

    from p4reduce.controller.job_programmer import program_layout
    from p4reduce.controller.p4info import P4InfoIndex
    with pytest.raises(ValueError, match="no lane registers"):
        program_layout(P4InfoIndex(p4info_pb2.P4Info()))
