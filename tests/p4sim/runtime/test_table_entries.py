"""TableEntry writes and reads: identity, canonical byte strings, defaults, wildcard reads and
the error code and message of every kind of bad request."""
import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from .p4rt_client import update, write_errors

Entity = p4runtime_pb2.Entity
TableEntry = p4runtime_pb2.TableEntry


@pytest.fixture
def fwd(harness, reference):
    ref = reference("fwd_basic")
    client = harness.client()
    client.set_pipeline(ref.p4info, ref.device_config)
    ids = {t.preamble.name: t.preamble.id for t in ref.p4info.tables}
    ids.update({a.preamble.name: a.preamble.id for a in ref.p4info.actions})
    return client, ids


def l2_entry(ids, dst=b"\x02", port=b"\x02", action="Ing.l2_forward"):
    entry = TableEntry(table_id=ids["Ing.l2"])
    entry.match.add(field_id=1).exact.value = dst
    entry.action.action.action_id = ids[action]
    if action == "Ing.l2_forward":
        entry.action.action.params.add(param_id=1, value=port)
    return entry


def route_entry(ids, value, plen, port=b"\x03"):
    entry = TableEntry(table_id=ids["Ing.routes"])
    fm = entry.match.add(field_id=1)
    fm.lpm.value = value
    fm.lpm.prefix_len = plen
    entry.action.action.action_id = ids["Ing.route"]
    entry.action.action.params.add(param_id=1, value=b"\xaa\x00\x00\x00\x01")
    entry.action.action.params.add(param_id=2, value=b"\x03\x03")
    entry.action.action.params.add(param_id=3, value=port)
    return entry


def failed_write(client, *updates):
    with pytest.raises(grpc.RpcError) as info:
        client.write(*updates)
    assert info.value.code() == grpc.StatusCode.UNKNOWN  # batch errors travel in the details
    return write_errors(info.value)


def test_insert_read_modify_delete(fwd, harness):
    client, ids = fwd
    client.write(update("INSERT", table_entry=l2_entry(ids)))
    frame = bytes.fromhex("000000000002" "000000000099" "0800") + bytes(30)
    assert [p for p, _ in harness.inject(1, frame)] == [2]
    read = client.read(Entity(table_entry=TableEntry(table_id=ids["Ing.l2"])))
    assert [e.table_entry for e in read] == [l2_entry(ids)]
    client.write(update("MODIFY", table_entry=l2_entry(ids, port=b"\x04")))
    assert [p for p, _ in harness.inject(1, frame)] == [4]
    read = client.read(Entity(table_entry=TableEntry(table_id=ids["Ing.l2"])))
    assert read[0].table_entry.action.action.params[0].value == b"\x04"
    client.write(update("DELETE", table_entry=l2_entry(ids, port=b"\x04")))
    assert client.read(Entity(table_entry=TableEntry(table_id=ids["Ing.l2"]))) == []


def test_padded_byte_strings_are_accepted_and_read_back_canonical(fwd):
    client, ids = fwd
    client.write(update("INSERT", table_entry=l2_entry(ids, dst=bytes(5) + b"\x02", port=b"\x00\x02")))
    (entity,) = client.read(Entity(table_entry=TableEntry(table_id=ids["Ing.l2"])))
    assert entity.table_entry.match[0].exact.value == b"\x02"
    assert entity.table_entry.action.action.params[0].value == b"\x02"
    # the same key in canonical form is the same entry
    errors = failed_write(client, update("INSERT", table_entry=l2_entry(ids)))
    assert errors[0][1] == code_pb2.ALREADY_EXISTS


def test_wildcard_read_over_all_tables_and_read_of_one_key(fwd):
    client, ids = fwd
    client.write(update("INSERT", table_entry=l2_entry(ids)),
                 update("INSERT", table_entry=route_entry(ids, b"\x0a\x01\x00\x00", 16)),
                 update("INSERT", table_entry=route_entry(ids, b"\x0a\x01\x02\x00", 24)))
    everything = client.read(Entity(table_entry=TableEntry()))
    assert len(everything) == 3
    one = TableEntry(table_id=ids["Ing.routes"])
    one.match.add(field_id=1).lpm.value = b"\x0a\x01\x02\x00"
    one.match[0].lpm.prefix_len = 24
    read = client.read(Entity(table_entry=one))
    assert [e.table_entry for e in read] == [route_entry(ids, b"\x0a\x01\x02\x00", 24)]


def test_default_entry_modify_read_and_reset(fwd, harness):
    client, ids = fwd
    request = TableEntry(table_id=ids["Ing.routes"], is_default_action=True)
    (initial,) = client.read(Entity(table_entry=request))
    assert initial.table_entry.is_default_action
    assert initial.table_entry.action.action.action_id == ids["Ing.no_route"]
    default = TableEntry(table_id=ids["Ing.routes"], is_default_action=True)
    default.action.action.action_id = ids["Ing.route"]
    for pid, value in ((1, b"\x01"), (2, b"\x02"), (3, b"\x03")):
        default.action.action.params.add(param_id=pid, value=value)
    client.write(update("MODIFY", table_entry=default))
    (now,) = client.read(Entity(table_entry=request))
    assert now.table_entry == default
    frame = bytes.fromhex("00aa00000001000000000099080045000021000100004011efbfc0000209c801010100050006000d30eb68656c6c6f")
    assert [p for p, _ in harness.inject(1, frame)] == [3]
    # MODIFY without an action resets to the program's default
    client.write(update("MODIFY", table_entry=TableEntry(table_id=ids["Ing.routes"], is_default_action=True)))
    (reset,) = client.read(Entity(table_entry=request))
    assert reset.table_entry.action.action.action_id == ids["Ing.no_route"]
    assert harness.inject(1, frame) == []
    errors = failed_write(client, update("INSERT", table_entry=default))
    assert errors[0][1] == code_pb2.INVALID_ARGUMENT and "default" in errors[0][2]


def test_errors_carry_codes_and_name_the_object(fwd):
    client, ids = fwd
    client.write(update("INSERT", table_entry=l2_entry(ids)))
    cases = []
    cases.append((l2_entry(ids), "INSERT", code_pb2.ALREADY_EXISTS, "Ing.l2"))
    cases.append((l2_entry(ids, dst=b"\x07"), "MODIFY", code_pb2.NOT_FOUND, "Ing.l2"))
    cases.append((l2_entry(ids, dst=b"\x07"), "DELETE", code_pb2.NOT_FOUND, "Ing.l2"))
    unknown_table = l2_entry(ids)
    unknown_table.table_id = 12345
    cases.append((unknown_table, "INSERT", code_pb2.NOT_FOUND, "12345"))
    too_wide = l2_entry(ids, dst=b"\x01" + bytes(6))
    cases.append((too_wide, "INSERT", code_pb2.OUT_OF_RANGE, "hdr.eth.dst"))
    wide_param = l2_entry(ids, dst=b"\x08", port=b"\x02\x00")  # 512 does not fit bit<9>
    cases.append((wide_param, "INSERT", code_pb2.OUT_OF_RANGE, "port"))
    missing_param = l2_entry(ids, dst=b"\x09")
    del missing_param.action.action.params[:]
    cases.append((missing_param, "INSERT", code_pb2.INVALID_ARGUMENT, "port"))
    wrong_action = l2_entry(ids, dst=b"\x0a")
    wrong_action.action.action.action_id = ids["Ing.route"]
    cases.append((wrong_action, "INSERT", code_pb2.INVALID_ARGUMENT, "Ing.l2"))
    no_key = TableEntry(table_id=ids["Ing.l2"])
    no_key.action.CopyFrom(l2_entry(ids).action)
    cases.append((no_key, "INSERT", code_pb2.INVALID_ARGUMENT, "hdr.eth.dst"))
    bad_prefix = route_entry(ids, b"\x0a\x01\x02\x03", 16)
    cases.append((bad_prefix, "INSERT", code_pb2.INVALID_ARGUMENT, "prefix"))
    priority_on_lpm = route_entry(ids, b"\x0a\x00\x00\x00", 8)
    priority_on_lpm.priority = 5
    cases.append((priority_on_lpm, "INSERT", code_pb2.INVALID_ARGUMENT, "priority"))
    wrong_kind = TableEntry(table_id=ids["Ing.routes"])
    wrong_kind.match.add(field_id=1).exact.value = b"\x01"
    wrong_kind.action.CopyFrom(route_entry(ids, b"\x0a", 8).action)
    cases.append((wrong_kind, "INSERT", code_pb2.INVALID_ARGUMENT, "lpm"))
    updates = [update(kind, table_entry=entry) for entry, kind, _, _ in cases]
    errors = failed_write(client, *updates)
    assert len(errors) == len(cases)
    for (index, code, message), (_, kind, want_code, word) in zip(errors, cases):
        assert code == want_code, f"update {index} ({kind}): {message}"
        assert word in message, f"update {index}: '{word}' not in '{message}'"


def test_batch_continues_after_an_error(fwd):
    client, ids = fwd
    errors = failed_write(client, update("INSERT", table_entry=l2_entry(ids, dst=b"\x01")),
                          update("DELETE", table_entry=l2_entry(ids, dst=b"\x05")),
                          update("INSERT", table_entry=l2_entry(ids, dst=b"\x03")))
    assert [code for _, code, _ in errors] == [code_pb2.OK, code_pb2.NOT_FOUND, code_pb2.OK]
    assert len(client.read(Entity(table_entry=TableEntry(table_id=ids["Ing.l2"])))) == 2


def test_unsupported_entities_are_unimplemented(fwd):
    client, _ = fwd
    with pytest.raises(grpc.RpcError) as info:
        client.read(Entity(direct_meter_entry=p4runtime_pb2.DirectMeterEntry()))
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    errors = failed_write(client, update("INSERT", action_profile_member=p4runtime_pb2.ActionProfileMember()))
    assert errors[0][1] == code_pb2.UNIMPLEMENTED


def test_insert_with_counter_data_and_idle_timeout_checks(fwd):
    client, ids = fwd
    entry = route_entry(ids, b"\x0a\x01\x00\x00", 16)
    entry.counter_data.packet_count, entry.counter_data.byte_count = 7, 700
    client.write(update("INSERT", table_entry=entry))
    direct = p4runtime_pb2.DirectCounterEntry()
    direct.table_entry.CopyFrom(route_entry(ids, b"\x0a\x01\x00\x00", 16))
    direct.table_entry.ClearField("action")
    (read,) = client.read(Entity(direct_counter_entry=direct))
    assert (read.direct_counter_entry.data.packet_count, read.direct_counter_entry.data.byte_count) == (7, 700)
    no_counter = l2_entry(ids)
    no_counter.counter_data.packet_count = 1
    timed = l2_entry(ids, dst=b"\x05")
    timed.idle_timeout_ns = 10**9
    errors = failed_write(client, update("INSERT", table_entry=no_counter),
                          update("INSERT", table_entry=timed))
    assert [e[1] for e in errors] == [code_pb2.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT]
    assert "direct counter" in errors[0][2] and "idle" in errors[1][2]
    assert client.read(Entity(table_entry=TableEntry(table_id=ids["Ing.l2"]))) == []
