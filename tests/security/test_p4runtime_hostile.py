"""Hostile P4Runtime clients against p4sim's server with the p4reduce program: a client inventing
a role, a configured role writing outside its objects, idle streams trying to starve unary RPCs,
a pipeline whose P4Info is not its JSON's, and a failed batch too large to report whole."""
import threading
import time

import grpc
import pytest
from google.protobuf import text_format
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4reduce.p4src.build import compile_program
from p4reduce.protocol import p4names
from p4sim.runtime import P4RuntimeServer
from p4sim.runtime.roles import Role, Roles
from tests.p4sim.runtime.p4rt_client import RawClient, update, write_errors

DEVICE = 1
OPS_TABLE = p4names.L2_FORWARD


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    built = compile_program(tmp_path_factory.mktemp("p4reduce"))
    info = p4info_pb2.P4Info()
    text_format.Merge(built.p4info_path.read_text(), info)
    return info, built.json_path.read_bytes()


@pytest.fixture
def switch(program):
    """A p4sim P4Runtime server running p4reduce, with role 'ops' confined to l2_forward and
    the multicast groups; the controller (default role, election id 10) is primary."""
    server = P4RuntimeServer("127.0.0.1:0", DEVICE, roles=Roles([Role("ops", frozenset({OPS_TABLE, "multicast"}))]))
    port = server.start()
    address = f"127.0.0.1:{port}"
    clients = []

    def client(**kwargs):
        c = RawClient(address, device_id=DEVICE, **kwargs)
        clients.append(c)
        return c

    controller = client(election_id=10)
    controller.set_pipeline(*program)
    yield server, address, controller, client
    for c in clients:
        c.close()
    server.stop(0.2)


def _ids(p4info, table, action):
    t = next(x for x in p4info.tables if x.preamble.name == table)
    a = next(x for x in p4info.actions if x.preamble.name == action)
    return t, a


def l2_entry(p4info, mac: int, port: int, table=OPS_TABLE):
    t, a = _ids(p4info, table, p4names.FORWARD)
    entry = p4runtime_pb2.TableEntry(table_id=t.preamble.id)
    entry.match.add(field_id=t.match_fields[0].id).exact.value = mac.to_bytes(6, "big")
    entry.action.action.action_id = a.preamble.id
    entry.action.action.params.add(param_id=a.params[0].id, value=port.to_bytes(2, "big"))
    return entry


def route_entry(p4info, ip: int, port: int):
    t, a = _ids(p4info, p4names.IPV4_ROUTES, p4names.FORWARD)
    entry = p4runtime_pb2.TableEntry(table_id=t.preamble.id)
    lpm = entry.match.add(field_id=t.match_fields[0].id).lpm
    lpm.value, lpm.prefix_len = ip.to_bytes(4, "big"), 32
    entry.action.action.action_id = a.preamble.id
    entry.action.action.params.add(param_id=a.params[0].id, value=port.to_bytes(2, "big"))
    return entry


def table_entries(client, p4info, table):
    t, _ = _ids(p4info, table, p4names.FORWARD)
    return [e.table_entry for e in client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=t.preamble.id)))]


def test_an_unconfigured_role_is_refused_and_changes_nothing(switch, program):
    """Before: a second client arbitrating as role 'rogue' became that role's primary and deleted
    the controller's entries."""
    _, address, controller, client = switch
    p4info = program[0]
    controller.write(update("INSERT", table_entry=route_entry(p4info, 0x0A000001, 1)))
    rogue = client(election_id=99, role="rogue", arbitrate=False)
    rogue.open_stream()
    answer = rogue.arbitrate(99)
    assert isinstance(answer, grpc.RpcError) and answer.code() == grpc.StatusCode.NOT_FOUND
    assert "role 'rogue' is not configured" in answer.details()
    with pytest.raises(grpc.RpcError) as e:
        rogue.write(update("DELETE", table_entry=route_entry(p4info, 0x0A000001, 1)))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    assert len(table_entries(controller, p4info, p4names.IPV4_ROUTES)) == 1


def test_a_configured_role_is_confined_to_its_objects(switch, program):
    server, _, controller, client = switch
    p4info, device_config = program
    ops = client(election_id=5, role="ops")
    ops.write(update("INSERT", table_entry=l2_entry(p4info, 0x000000000001, 2)))      # its own table
    group = p4runtime_pb2.Entity()
    group.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 77
    ops.write(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT, entity=group))   # and multicast
    controller.write(update("INSERT", table_entry=route_entry(p4info, 0x0A000002, 3)))
    for forbidden in (update("DELETE", table_entry=route_entry(p4info, 0x0A000002, 3)),
                      update("INSERT", table_entry=route_entry(p4info, 0x0A000009, 3))):
        with pytest.raises(grpc.RpcError) as e:
            ops.write(forbidden)
        assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert f"{p4names.IPV4_ROUTES} is not an object of role 'ops'" in e.value.details()
    # a batch with one update outside the role changes nothing at all
    with pytest.raises(grpc.RpcError):
        ops.write(update("INSERT", table_entry=l2_entry(p4info, 0x000000000002, 2)),
                  update("INSERT", table_entry=route_entry(p4info, 0x0A000010, 3)))
    assert len(table_entries(controller, p4info, OPS_TABLE)) == 1
    assert len(table_entries(controller, p4info, p4names.IPV4_ROUTES)) == 1
    with pytest.raises(grpc.RpcError) as e:
        ops.set_pipeline(p4info, device_config)
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # the role's primary and the controller do not disturb each other's arbitration
    assert server.arbitration.primaries("")[0].election_id == 10
    assert server.arbitration.primaries("ops")[0].election_id == 5


def test_a_role_config_from_the_client_is_refused(switch):
    _, address, _, _ = switch
    channel = grpc.insecure_channel(address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    request = p4runtime_pb2.StreamMessageRequest()
    request.arbitration.device_id = DEVICE
    request.arbitration.election_id.low = 3
    request.arbitration.role.name = "ops"
    request.arbitration.role.config.Pack(p4info_pb2.P4Info())
    with pytest.raises(grpc.RpcError) as e:
        list(stub.StreamChannel(iter([request]), timeout=10))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "role.config" in e.value.details()
    channel.close()


def test_idle_streams_cannot_starve_unary_rpcs(switch, program):
    """32 idle StreamChannels from one client (the controller's own stream is the 33rd): past the
    per-client bound each new one takes the place of the oldest idle one, which ends at once with
    RESOURCE_EXHAUSTED (the controller's arbitrated stream keeps its place); the primary's Write
    still answers within its deadline (before: the idle streams held all 32 server threads and it
    timed out)."""
    _, address, controller, _ = switch
    channel = grpc.insecure_channel(address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    stop = threading.Event()

    def idle_requests():           # an idle client: sends nothing until the test ends
        stop.wait(60)
        return
        yield

    idle = [stub.StreamChannel(idle_requests()) for _ in range(32)]
    try:
        deadline = time.monotonic() + 10
        while sum(c.done() for c in idle) < 25 and time.monotonic() < deadline:
            time.sleep(0.05)
        refused = [c for c in idle if c.done()]
        assert len(refused) == 25 and all(c.code() == grpc.StatusCode.RESOURCE_EXHAUSTED for c in refused)
        assert "had not sent a MasterArbitrationUpdate and its place was needed" in refused[0].details()
        request = p4runtime_pb2.WriteRequest(device_id=DEVICE)
        request.election_id.low = 10
        request.updates.append(update("INSERT", table_entry=route_entry(program[0], 0x0A000003, 1)))
        controller.stub.Write(request, timeout=5)
        assert len(table_entries(controller, program[0], p4names.IPV4_ROUTES)) == 1
    finally:
        stop.set()
        for call in idle:
            call.cancel()
        channel.close()
    # the bound counts open streams: a new one is accepted (in place of an idle one, or in a free place)
    deadline = time.monotonic() + 10
    while True:
        fresh = RawClient(address, device_id=DEVICE, arbitrate=False)
        fresh.open_stream()
        answer = fresh.arbitrate(3)
        fresh.close()
        if not isinstance(answer, grpc.RpcError):
            break
        assert answer.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and time.monotonic() < deadline
        time.sleep(0.1)
    assert answer.arbitration.status.code == code_pb2.ALREADY_EXISTS      # a backup: 10 is primary


@pytest.mark.parametrize("break_p4info, words", [
    (lambda p: p.Clear(), "table"),                                                  # empty P4Info
    (lambda p: p.registers[0].ClearField("size") or setattr(p.registers[0], "size", 3), "size 3"),
    (lambda p: setattr(next(a for a in p.actions if a.params).params[0], "bitwidth", 7), "bits wide"),
    (lambda p: p.tables[0].match_fields.pop(), "match fields"),
    (lambda p: setattr(p.tables[0].match_fields[0], "bitwidth", 13), "bits wide"),
    (lambda p: p.registers.pop(), "register array"),
    (lambda p: p.counters.pop(), "counter array"),
])
def test_a_p4info_that_does_not_match_its_json_is_refused(switch, program, break_p4info, words):
    _, _, controller, _ = switch
    p4info = p4info_pb2.P4Info()
    p4info.CopyFrom(program[0])
    break_p4info(p4info)
    with pytest.raises(grpc.RpcError) as e:
        controller.set_pipeline(p4info, program[1])
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and words in e.value.details(), e.value.details()
    # the running pipeline is untouched
    controller.write(update("INSERT", table_entry=route_entry(program[0], 0x0A000004, 1)))


def test_a_large_failed_batch_is_reported_within_what_a_default_client_reads(switch, program):
    """5000 failing updates: before, 462 KB of per-update errors in trailing metadata that a
    default client cannot read (it saw an INTERNAL metadata error instead of the write's)."""
    _, _, controller, _ = switch
    p4info = program[0]
    good = [update("INSERT", table_entry=route_entry(p4info, 0x0B000000 + i, 1)) for i in range(3)]
    bad = [update("MODIFY", table_entry=route_entry(p4info, 0x0C000000 + i, 1)) for i in range(5000)]
    with pytest.raises(grpc.RpcError) as e:
        controller.write(*good, *bad)
    assert e.value.code() == grpc.StatusCode.UNKNOWN, (e.value.code(), e.value.details()[:200])
    errors = write_errors(e.value)
    assert 3 < len(errors) < 5003
    assert [c for _, c, _ in errors[:3]] == [code_pb2.OK] * 3
    assert all(c == code_pb2.NOT_FOUND for _, c, _ in errors[3:])
    assert errors == [(i, c, m) for i, (_, c, m) in enumerate(errors)]          # in update order
    status = status_pb2.Status()
    status.ParseFromString(dict(e.value.trailing_metadata())["grpc-status-details-bin"])
    assert f"5000 of 5003 updates failed; details list updates 0..{len(errors) - 1}" in status.message
    assert f"{5003 - len(errors)} more are not listed" in status.message
    assert len(table_entries(controller, p4info, p4names.IPV4_ROUTES)) == 3


@pytest.mark.parametrize("role, words", [("ops", "NAME=OBJECT"), ("=t", "NAME=OBJECT"), ("ops=", "names no object"),
                                         ("ops=a b", "not a P4Info object name")])
def test_p4sim_switch_refuses_a_bad_role_by_name(role, words):
    from p4sim.simple_switch import UsageError, parse_args
    with pytest.raises(UsageError, match=words):
        parse_args(["--no-p4", "--", "--role", role])
    _, target = parse_args(["--no-p4", "--", "--role", f"ops={OPS_TABLE},multicast"])
    assert target.roles.by_name["ops"].objects == {OPS_TABLE, "multicast"}
