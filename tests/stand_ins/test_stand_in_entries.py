"""The stand-ins that run the real program install jobs as the controller does (one builder,
controller.job_entries): results go to multicast group 0x100 + job id, and the job's slot
registers are cleared before it uses them (the copies these replaced used group 1 or the job id,
and one cleared nothing)."""
from testbed.fabric import Fabric
from testbed.p4sim_udp import P4SimUdpSwitch

from p4reduce.protocol import p4names as N
from p4reduce.protocol.wire import DEFAULT_LAYOUT


def _dirty(engine, start, stop):
    for i in range(start, stop):
        engine.register_write(N.SEEN, i, 1)
        engine.register_write(N.COUNT, i, 1)


def test_p4sim_udp_switch_installs_the_controllers_entries(p4reduce_json):
    sw = P4SimUdpSwitch(p4reduce_json)
    try:
        _dirty(sw.sw, 0, 8)
        sw.add_job(5, 2, slot_count=4)
        sw.add_worker(5, 0, "127.0.0.1", 40000)
        sw.add_worker(5, 1, "127.0.0.1", 40001)
        assert sw.sw.mc_groups() == {0x105: [(1, 0), (2, 1)]}
        assert [sw.sw.register_read(N.SEEN, i) + sw.sw.register_read(N.COUNT, i) for i in range(8)] == [0] * 8
        [job] = sw.sw.table_entries(N.JOBS)
        assert job.params["mcast_grp"] == 0x105
    finally:
        sw.sock.close()


def test_fabric_installs_the_controllers_entries(p4reduce_json):
    from p4sim.engine import Switch
    fabric = Fabric(Switch(p4reduce_json), DEFAULT_LAYOUT)   # p4reduce_json: the default build
    _dirty(fabric.sw, 20, 28)
    fabric.add_job(9, 3, slot_base=10, slot_count=4, ports=[4, 2, 6])
    assert fabric.sw.mc_groups() == {0x109: [(4, 0), (2, 1), (6, 2)]}
    assert all(fabric.sw.register_read(N.SEEN, i) == fabric.sw.register_read(N.COUNT, i) == 0 for i in range(20, 28))
    assert fabric.model.jobs[9].multicast_group == 0x109
