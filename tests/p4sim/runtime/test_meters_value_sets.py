"""MeterEntry (indirect meters) and ValueSetEntry (parser value sets)."""
import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from . import meter_vset_program as program
from .p4rt_client import update, write_errors

Entity = p4runtime_pb2.Entity
GREEN, RED = 0, 2


def tagged(etype="88b5"):
    return bytes.fromhex("000000000002" "000000000001" + etype + "ff00") + bytes(20)


@pytest.fixture
def client(harness):
    client = harness.client()
    client.set_pipeline(program.p4info(), program.device_config())
    return client


def value_set(*members):
    entry = p4runtime_pb2.ValueSetEntry(value_set_id=program.VALUE_SET_ID)
    for value, mask in members:
        fm = entry.members.add().match.add(field_id=1)
        if mask is None:
            fm.exact.value = value
        else:
            fm.ternary.value, fm.ternary.mask = value, mask
    return entry


def test_value_set_members_steer_the_parser(harness, client):
    frame = tagged("88b5")
    assert harness.inject(3, frame)[0][1] == frame  # not in the set: tag not parsed, unchanged
    client.write(update("MODIFY", value_set_entry=value_set((b"\x88\xb5", None), (b"\x90\x00", b"\xff\x00"))))
    (out_port, out), = harness.inject(3, frame)
    assert out_port == 1 and out[14] == GREEN  # tag parsed: the meter colour was written
    assert harness.inject(3, tagged("9042"))[0][1][14] == GREEN  # ternary member 0x90xx
    (read,) = client.read(Entity(value_set_entry=p4runtime_pb2.ValueSetEntry(value_set_id=program.VALUE_SET_ID)))
    assert read.value_set_entry == value_set((b"\x88\xb5", None), (b"\x90\x00", b"\xff\x00"))
    too_many = value_set(*[(bytes([1, i]), None) for i in range(5)])
    wrong_kind = p4runtime_pb2.ValueSetEntry(value_set_id=program.VALUE_SET_ID)
    wrong_kind.members.add().match.add(field_id=1).lpm.value = b"\x01"
    with pytest.raises(grpc.RpcError) as info:
        client.write(update("MODIFY", value_set_entry=too_many),
                     update("MODIFY", value_set_entry=wrong_kind),
                     update("INSERT", value_set_entry=value_set((b"\x01", None))))
    codes = [e[1] for e in write_errors(info.value)]
    assert codes == [code_pb2.RESOURCE_EXHAUSTED, code_pb2.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT]


def test_meter_config_marks_packets_and_reads_back(harness, client):
    client.write(update("MODIFY", value_set_entry=value_set((b"\x88\xb5", None))))
    meter = p4runtime_pb2.MeterEntry(meter_id=program.METER_ID)
    meter.index.index = 3
    (read,) = client.read(Entity(meter_entry=meter))
    assert not read.meter_entry.HasField("config")  # unconfigured: every packet GREEN
    # 1 packet/s, bursts of 2: the third back-to-back packet on port 3 is RED
    meter.config.cir, meter.config.cburst, meter.config.pir, meter.config.pburst = 1, 2, 1, 2
    client.write(update("MODIFY", meter_entry=meter))
    colors = [harness.inject(3, tagged())[0][1][14] for _ in range(3)]
    assert colors[:2] == [GREEN, GREEN] and colors[2] == RED
    assert harness.inject(4, tagged())[0][1][14] == GREEN  # other cells are unconfigured
    (read,) = client.read(Entity(meter_entry=p4runtime_pb2.MeterEntry(meter_id=program.METER_ID, index=meter.index)))
    assert read.meter_entry.config == meter.config
    assert len(client.read(Entity(meter_entry=p4runtime_pb2.MeterEntry(meter_id=program.METER_ID)))) == 8
    reset = p4runtime_pb2.MeterEntry(meter_id=program.METER_ID, index=meter.index)
    client.write(update("MODIFY", meter_entry=reset))  # no config: back to GREEN
    assert harness.inject(3, tagged())[0][1][14] == GREEN
    bad = p4runtime_pb2.MeterEntry(meter_id=program.METER_ID)
    bad.index.index = 8
    bad.config.cir, bad.config.pir = 5, 1
    with pytest.raises(grpc.RpcError) as info:
        client.write(update("MODIFY", meter_entry=bad))
    ((_, code, message),) = write_errors(info.value)
    assert code == code_pb2.OUT_OF_RANGE and "Ing.port_meter" in message
