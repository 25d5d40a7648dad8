"""RegisterEntry, CounterEntry, DirectCounterEntry and PacketReplicationEngineEntry."""
import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from .p4rt_client import update, write_errors
from .shell_fixture import install_case, shell_session

Entity = p4runtime_pb2.Entity


def ids_of(p4info, kind):
    return {o.preamble.name: o.preamble.id for o in getattr(p4info, kind)}


def register_read(client, register_id, index=None):
    entry = p4runtime_pb2.RegisterEntry(register_id=register_id)
    if index is not None:
        entry.index.index = index
    return [(e.register_entry.index.index, e.register_entry.data.bitstring)
            for e in client.read(Entity(register_entry=entry))]


def register_write(client, register_id, index, value):
    entry = p4runtime_pb2.RegisterEntry(register_id=register_id)
    if index is not None:
        entry.index.index = index
    entry.data.bitstring = value
    return update("MODIFY", register_entry=entry)


def test_registers_follow_the_data_plane_and_accept_writes(harness, reference):
    ref = reference("agg_mini")
    with shell_session(harness, ref) as sh:
        install_case(sh, ref.case)
        # two workers of three contribute to slot 0: count 2, partial sums in r0
        for port, packet in ref.case["packets"][:2]:
            harness.inject(port, bytes.fromhex(packet))
        client = harness.client(election_id=(1 << 64) + 5)  # becomes primary
        regs = ids_of(ref.p4info, "registers")
        assert register_read(client, regs["Ing.cnt"], 0) == [(0, b"\x02")]
        assert register_read(client, regs["Ing.r0"], 0) == [(0, bytes([0x0b]))]  # 1 + 10
        whole = register_read(client, regs["Ing.seen"])
        assert len(whole) == 16 and whole[0] == (0, b"\x03") and whole[1] == (1, b"\x00")
        # int<32> cells read as two's complement bit patterns
        client.write(register_write(client, regs["Ing.r1"], 4, b"\xff\xff\xff\xfe"))
        assert register_read(client, regs["Ing.r1"], 4) == [(4, b"\xff\xff\xff\xfe")]
        # no index: every cell
        client.write(register_write(client, regs["Ing.cnt"], None, b"\x07"))
        assert {v for _, v in register_read(client, regs["Ing.cnt"])} == {b"\x07"}
        with pytest.raises(grpc.RpcError) as info:
            register_read(client, regs["Ing.cnt"], 16)
        assert info.value.code() == grpc.StatusCode.OUT_OF_RANGE
        with pytest.raises(grpc.RpcError) as info:
            client.write(register_write(client, regs["Ing.cnt"], 0, b"\x01\x00"),
                         register_write(client, 424242, 0, b"\x01"))
        errors = write_errors(info.value)
        assert errors[0][1] == code_pb2.OUT_OF_RANGE and "Ing.cnt" in errors[0][2]
        assert errors[1][1] == code_pb2.NOT_FOUND and "424242" in errors[1][2]


def test_counters_read_write_and_reset(harness, reference):
    ref = reference("fwd_basic")
    client = harness.client()
    client.set_pipeline(ref.p4info, ref.device_config)
    drops = ids_of(ref.p4info, "counters")["Ing.drops"]
    non_ip = bytes.fromhex("ffffffffffff000000000000080600000000000000000000000000000000000000000000000000000000")
    harness.inject(1, non_ip)
    harness.inject(2, non_ip)
    entry = p4runtime_pb2.CounterEntry(counter_id=drops)
    entry.index.index = 0
    (read,) = client.read(Entity(counter_entry=entry))
    assert read.counter_entry.data.packet_count == 2
    everything = client.read(Entity(counter_entry=p4runtime_pb2.CounterEntry(counter_id=drops)))
    assert [e.counter_entry.index.index for e in everything] == [0, 1, 2, 3]
    all_counters = client.read(Entity(counter_entry=p4runtime_pb2.CounterEntry()))
    assert len(all_counters) == 4
    entry.data.packet_count = 0
    client.write(update("MODIFY", counter_entry=entry))
    (read,) = client.read(Entity(counter_entry=entry))
    assert read.counter_entry.data.packet_count == 0
    bad = p4runtime_pb2.CounterEntry(counter_id=drops)
    bad.index.index = 4
    with pytest.raises(grpc.RpcError) as info:
        client.read(Entity(counter_entry=bad))
    assert info.value.code() == grpc.StatusCode.OUT_OF_RANGE and "Ing.drops" in info.value.details()


def test_direct_counter_of_one_entry_and_table_entry_counter_data(harness, reference):
    ref = reference("fwd_basic")
    with shell_session(harness, ref) as sh:
        install_case(sh, ref.case)
        for port, packet in ref.case["packets"]:
            harness.inject(port, bytes.fromhex(packet))
        client = harness.client(election_id=(1 << 64) + 5)
        tables = ids_of(ref.p4info, "tables")
        one = p4runtime_pb2.DirectCounterEntry()
        one.table_entry.table_id = tables["Ing.routes"]
        fm = one.table_entry.match.add(field_id=1)
        fm.lpm.value, fm.lpm.prefix_len = b"\x0a\x01\x02\x00", 24
        (read,) = client.read(Entity(direct_counter_entry=one))
        assert read.direct_counter_entry.data.packet_count == 2
        request = p4runtime_pb2.TableEntry(table_id=tables["Ing.routes"])
        request.counter_data.SetInParent()
        counts = sorted(e.table_entry.counter_data.packet_count for e in client.read(Entity(table_entry=request)))
        assert counts == [1, 1, 2]
        one.data.packet_count, one.data.byte_count = 100, 1000
        client.write(update("MODIFY", direct_counter_entry=one))
        (read,) = client.read(Entity(direct_counter_entry=one))
        assert (read.direct_counter_entry.data.packet_count, read.direct_counter_entry.data.byte_count) == (100, 1000)


def test_multicast_groups_and_clone_sessions(harness, reference):
    ref = reference("agg_mini")
    client = harness.client()
    client.set_pipeline(ref.p4info, ref.device_config)
    group = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=1)
    group.replicas.add(egress_port=1, instance=1)
    group.replicas.add(egress_port=2, instance=2)
    pre = lambda g: p4runtime_pb2.PacketReplicationEngineEntry(multicast_group_entry=g)
    client.write(update("INSERT", packet_replication_engine_entry=pre(group)))
    (read,) = client.read(Entity(packet_replication_engine_entry=pre(
        p4runtime_pb2.MulticastGroupEntry(multicast_group_id=1))))
    assert read.packet_replication_engine_entry.multicast_group_entry == group
    assert harness.server.device.engine.mc_group_get(1) is not None
    # the aggregator multicasts the completed slot to the group's ports only
    for port, packet in ref.case["packets"][:4]:
        out = harness.inject(port, bytes.fromhex(packet))
    assert [p for p, _ in out] == [1, 2]
    group.replicas.add(egress_port=3, instance=3)
    client.write(update("MODIFY", packet_replication_engine_entry=pre(group)))
    session = p4runtime_pb2.CloneSessionEntry(session_id=5, packet_length_bytes=64)
    session.replicas.add(egress_port=4, instance=0)
    clone = p4runtime_pb2.PacketReplicationEngineEntry(clone_session_entry=session)
    client.write(update("INSERT", packet_replication_engine_entry=clone))
    (read,) = client.read(Entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
        clone_session_entry=p4runtime_pb2.CloneSessionEntry())))
    assert read.packet_replication_engine_entry.clone_session_entry == session
    missing = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=9)
    with pytest.raises(grpc.RpcError) as info:
        client.write(update("INSERT", packet_replication_engine_entry=pre(group)),
                     update("DELETE", packet_replication_engine_entry=pre(missing)),
                     update("INSERT", packet_replication_engine_entry=pre(
                         p4runtime_pb2.MulticastGroupEntry(multicast_group_id=0))))
    errors = write_errors(info.value)
    assert [e[1] for e in errors] == [code_pb2.ALREADY_EXISTS, code_pb2.NOT_FOUND, code_pb2.INVALID_ARGUMENT]
    assert "multicast group 9" in errors[1][2]
    client.write(update("DELETE", packet_replication_engine_entry=pre(group)))
    assert client.read(Entity(packet_replication_engine_entry=pre(p4runtime_pb2.MulticastGroupEntry()))) == []
