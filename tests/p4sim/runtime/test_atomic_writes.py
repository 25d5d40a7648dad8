"""ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC batches: one failure leaves the switch as before."""
import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from .p4rt_client import update, write_errors

Entity = p4runtime_pb2.Entity


def rewrite_entry(ref, rid, mac):
    table = next(t for t in ref.p4info.tables if t.preamble.name == "Egr.rewrite")
    action = next(a for a in ref.p4info.actions if a.preamble.name == "Egr.to")
    entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
    entry.match.add(field_id=1).exact.value = bytes([rid])
    entry.action.action.action_id = action.preamble.id
    entry.action.action.params.add(param_id=1, value=mac)
    return entry


def atomic_write(client, atomicity, *updates):
    request = p4runtime_pb2.WriteRequest(device_id=client.device_id, atomicity=atomicity)
    request.election_id.low = client.election_id
    request.updates.extend(updates)
    return client.stub.Write(request)


@pytest.mark.parametrize("atomicity", [p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
                                       p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC])
def test_failed_atomic_batch_changes_nothing(harness, reference, atomicity):
    ref = reference("agg_mini")
    client = harness.client()
    client.set_pipeline(ref.p4info, ref.device_config)
    register_id = next(r.preamble.id for r in ref.p4info.registers if r.preamble.name == "Ing.cnt")
    client.write(update("INSERT", table_entry=rewrite_entry(ref, 1, b"\x01")),
                 update("INSERT", table_entry=rewrite_entry(ref, 2, b"\x02")))
    before_tables = client.read(Entity(table_entry=p4runtime_pb2.TableEntry()))
    register = p4runtime_pb2.RegisterEntry(register_id=register_id)
    register.index.index = 3
    register.data.bitstring = b"\x09"
    group = p4runtime_pb2.PacketReplicationEngineEntry(
        multicast_group_entry=p4runtime_pb2.MulticastGroupEntry(multicast_group_id=4))
    group.multicast_group_entry.replicas.add(egress_port=1, instance=1)
    with pytest.raises(grpc.RpcError) as info:
        atomic_write(client, atomicity,
                     update("INSERT", table_entry=rewrite_entry(ref, 3, b"\x03")),
                     update("MODIFY", table_entry=rewrite_entry(ref, 1, b"\x11")),
                     update("DELETE", table_entry=rewrite_entry(ref, 2, b"\x02")),
                     update("MODIFY", register_entry=register),
                     update("INSERT", packet_replication_engine_entry=group),
                     update("INSERT", table_entry=rewrite_entry(ref, 1, b"\x01")),  # duplicate
                     update("INSERT", table_entry=rewrite_entry(ref, 5, b"\x05")))
    codes = [code for _, code, _ in write_errors(info.value)]
    assert codes == [code_pb2.ABORTED] * 5 + [code_pb2.ALREADY_EXISTS, code_pb2.ABORTED]
    assert sorted(e.SerializeToString() for e in client.read(Entity(table_entry=p4runtime_pb2.TableEntry()))) == \
        sorted(e.SerializeToString() for e in before_tables)
    register.ClearField("data")
    (cell,) = client.read(Entity(register_entry=register))
    assert cell.register_entry.data.bitstring == b"\x00"
    assert client.read(Entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
        multicast_group_entry=p4runtime_pb2.MulticastGroupEntry()))) == []
    # and the engine agrees: rid 1 still rewrites to ...:01 (not ...:11)
    engine = harness.server.device.engine
    assert sorted(e.params["mac"] for e in engine.table_entries("Egr.rewrite")) == [1, 2]
    # the same batch without the bad update goes through as a whole
    register.data.bitstring = b"\x09"
    atomic_write(client, atomicity, update("INSERT", table_entry=rewrite_entry(ref, 3, b"\x03")),
                 update("MODIFY", register_entry=register))
    assert len(client.read(Entity(table_entry=p4runtime_pb2.TableEntry()))) == 3
    register.ClearField("data")
    (cell,) = client.read(Entity(register_entry=register))
    assert cell.register_entry.data.bitstring == b"\x09"
