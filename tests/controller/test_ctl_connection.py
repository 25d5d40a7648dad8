"""Connection against p4sim-switch's P4Runtime server over real gRPC on loopback: bounded wait,
arbitration (non-primary refused), pipeline push and keep, forwarding entries from a topology,
register and counter reads."""
import json
import socket
import time

import pytest

from p4reduce.controller.connection import SwitchConnection
from p4reduce.controller.entities import decode_table_entry, table_entry
from p4reduce.controller.errors import SwitchError
from p4reduce.controller.forwarding import install_forwarding
from p4reduce.controller.inspection import SwitchInspector
from p4reduce.controller.registers import P4RuntimeRegisters, open_register_access
from p4reduce.controller.topology import from_dict
from p4reduce.mininet_topos.ports import free_port


def test_wait_is_bounded_and_reported():
    reports = []
    t0 = time.monotonic()
    with pytest.raises(SwitchError) as e:
        SwitchConnection(f"127.0.0.1:{free_port()}", name="s9").connect(timeout=2.5, report=reports.append)
    took = time.monotonic() - t0
    assert 2.4 <= took < 10
    assert "s9" in e.value.message and "within 2.5 s" in e.value.message
    assert reports and all("waiting for switch s9" in r for r in reports)


def test_non_primary_controller_rejected(p4rt_server):
    _, addr = p4rt_server
    primary = SwitchConnection(addr, election_id=10).connect(timeout=5)
    try:
        assert primary.primary
        with pytest.raises(SwitchError) as e:
            SwitchConnection(addr, election_id=5).connect(timeout=5)
        assert e.value.code == "not_primary" and "election id 10" in e.value.message
        backup = SwitchConnection(addr, election_id=3).connect(timeout=5, require_primary=False)
        assert not backup.primary
        backup.close()
    finally:
        primary.close()
    # the primary left: a lower id may now take over
    again = SwitchConnection(addr, election_id=5).connect(timeout=5)
    assert again.primary
    again.close()


def _case_topology(reference_dir, addr):
    case = json.loads((reference_dir / "programs" / "fwd_basic.case.json").read_text())
    return case, from_dict({"switches": {"s1": {"grpc_addr": addr}}, "hosts": {}, "entries": case["entries"]})


def test_pipeline_push_then_keep_and_forwarding_entries(p4rt_server, reference_dir):
    _, addr = p4rt_server
    out = reference_dir / "p4c-out"
    case, topo = _case_topology(reference_dir, addr)
    conn = SwitchConnection(addr, election_id=10).connect(timeout=5)
    try:
        assert conn.fetch_pipeline() == (None, None)
        assert conn.ensure_pipeline(out / "fwd_basic.p4info.txtpb", out / "fwd_basic.json") is True
        assert install_forwarding(conn, topo, "s1") == len(case["entries"])
        # a second start (controller restart) finds the same pipeline and keeps the entries
        assert conn.ensure_pipeline(out / "fwd_basic.p4info.txtpb", out / "fwd_basic.json") is False
        assert install_forwarding(conn, topo, "s1") == len(case["entries"])  # modify, not duplicate
        idx = conn.index
        got = sorted((decode_table_entry(idx, e.table_entry) for e in conn.read(table_entry(idx, "Ing.routes"))),
                     key=lambda d: d["match"]["hdr.ip.dst"])
        assert [(d["match"]["hdr.ip.dst"], d["params"]["port"]) for d in got] == [
            ((0x00000000, 1), 4), ((0x0A010000, 16), 1), ((0x0A010200, 24), 3)]
        assert got[1]["params"]["dmac"] == 0x000000000101
        l2 = [decode_table_entry(idx, e.table_entry) for e in conn.read(table_entry(idx, "Ing.l2"))]
        assert [(d["match"]["hdr.eth.dst"], d["action"], d["params"]) for d in l2] == [
            (2, "Ing.l2_forward", {"port": 2})]
        # a different program is pushed (and wipes state)
        assert conn.ensure_pipeline(out / "agg_mini.p4info.txtpb", out / "agg_mini.json") is True
        assert conn.index.has("register", "r0") and not conn.index.has("table", "Ing.routes")
    finally:
        conn.close()


def test_bad_entries_are_named(p4rt_server, reference_dir):
    _, addr = p4rt_server
    out = reference_dir / "p4c-out"
    topo = from_dict({"switches": {"s1": {"grpc_addr": addr}},
                      "entries": [{"table": "Ing.routes", "match": {"hdr.ip.dst": "10.0.0.0/40"},
                                   "action": "Ing.route", "params": {}}]}, "t.yaml")
    with SwitchConnection(addr, election_id=10).connect(timeout=5) as conn:
        conn.ensure_pipeline(out / "fwd_basic.p4info.txtpb", out / "fwd_basic.json")
        with pytest.raises(SwitchError) as e:
            install_forwarding(conn, topo, "s1")
        assert "t.yaml: entries[0]" in e.value.message and "prefix length 40" in e.value.message
        with pytest.raises(ValueError, match="no table named 'nope'"):
            table_entry(conn.index, "nope")
        with pytest.raises(ValueError, match="missing parameter 'port'"):
            table_entry(conn.index, "Ing.l2", {"hdr.eth.dst": 1}, "Ing.l2_forward", {})
        with pytest.raises(SwitchError) as e:  # the switch's own complaint reaches the user
            conn.insert(table_entry(conn.index, "Ing.l2", {"hdr.eth.dst": 1}, "Ing.l2_forward", {"port": 1}))
            conn.insert(table_entry(conn.index, "Ing.l2", {"hdr.eth.dst": 1}, "Ing.l2_forward", {"port": 1}))
        assert "ALREADY_EXISTS" in e.value.message


def test_registers_and_counters_over_p4runtime(p4rt_server, reference_dir):
    _server, addr = p4rt_server
    out = reference_dir / "p4c-out"
    with SwitchConnection(addr, election_id=10).connect(timeout=5) as conn:
        conn.ensure_pipeline(out / "agg_mini.p4info.txtpb", out / "agg_mini.json")
        regs = open_register_access(conn)
        assert isinstance(regs, P4RuntimeRegisters)
        regs.write_many("Ing.r3", {2: -5 & 0xFFFFFFFF, 3: 7})
        regs.fill("Ing.cnt", 0, 16, 3)
        insp = SwitchInspector(conn, regs)
        r3 = insp.register("r3", start=1, stop=4)
        assert r3["signed"] and r3["values"] == {1: 0, 2: -5, 3: 7}
        assert insp.register("cnt")["values"] == {i: 3 for i in range(16)}
        assert insp.register("cnt", 15)["values"] == {15: 3}
        with pytest.raises(ValueError, match="outside 0..15"):
            insp.register("cnt", 16)
        assert insp.multicast_groups() == []


def test_registers_fall_back_to_thrift_on_unimplemented(reference_dir):
    from ctl_bmv2_like import Bmv2LikeSwitch

    from p4reduce.controller.registers import ThriftRegisters
    sw = Bmv2LikeSwitch().start()
    out = reference_dir / "p4c-out"
    try:
        with SwitchConnection(sw.grpc_addr, election_id=10).connect(timeout=5) as conn:
            conn.ensure_pipeline(out / "agg_mini.p4info.txtpb", out / "agg_mini.json")
            with pytest.raises(SwitchError, match="cannot connect"):
                open_register_access(conn, f"127.0.0.1:{free_port()}")
            with socket.socket() as probe:
                default_port_free = probe.connect_ex(("127.0.0.1", 9090)) != 0
            if default_port_free:  # without a Thrift port, the default one is tried and named
                with pytest.raises(SwitchError, match=r"nothing answers on its default Thrift port \(127.0.0.1:9090\)"):
                    open_register_access(conn)
            regs = open_register_access(conn, f"127.0.0.1:{sw.thrift_port}")
            assert isinstance(regs, ThriftRegisters)
            regs.write("Ing.r2", 3, 41)
            regs.fill("Ing.cnt", 2, 5, 9)
            insp = SwitchInspector(conn, regs)
            assert insp.register("r2", 3)["values"] == {3: 41}
            assert insp.register("cnt", start=1, stop=6)["values"] == {1: 0, 2: 9, 3: 9, 4: 9, 5: 0}
            assert sw.p4rt.device.engine.register_read("Ing.cnt", 4) == 9  # really in the switch
    finally:
        sw.stop()
    # the stand-in's Thrift loop ends with it (a spinning one logged tracebacks for the rest of the session)
    sw.thrift_thread.join(timeout=5)
    assert not sw.thrift_thread.is_alive()
