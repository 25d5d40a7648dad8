"""Reads of large register and counter arrays: written straight to wire bytes (runtime/wire.py)
and streamed block by block, each block copied from the engine under its lock (consistent per
cell, as on BMv2), so writes and packets go on while a read streams."""
import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4sim.compiler import compile_file
from p4sim.runtime import read_response_bytes as wire

from .p4rt_client import update

CELLS = 1 << 17  # 2.5 MB of responses: far more than a 64 KB receive window lets the server run ahead

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> idx; bit<32> val; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(@CELLS@) cells;
    counter(@CELLS@, CounterType.packets_and_bytes) hits;
    apply { cells.write(hdr.h.idx, hdr.h.val); hits.count(hdr.h.idx); sm.egress_spec = 1; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
""".replace("@CELLS@", str(CELLS))


@pytest.fixture(scope="module")
def big_program(tmp_path_factory):
    path = tmp_path_factory.mktemp("bulk") / "bulk.p4"
    path.write_text(PROGRAM)
    result = compile_file(str(path))
    import json
    return result.p4info, json.dumps(result.bmv2).encode()


def packet(idx, val):
    return idx.to_bytes(4, "big") + val.to_bytes(4, "big")


def test_wire_bytes_are_what_protobuf_would_write():
    values = [0, 1, 255, 256, (1 << 32) - 1, 1 << 127, (1 << 128) - 1]
    for start in (0, 1, 127, 128, 16383, 16384, 1 << 30):
        want = p4runtime_pb2.ReadResponse()
        for i, v in enumerate(values, start):
            e = want.entities.add().register_entry
            e.register_id = 369223456
            e.index.index = i
            e.data.bitstring = v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big")
        assert wire.register_entities(369223456, start, values) == want.SerializeToString()
    cells = [(0, 0), (1, 64), (3, 0), (0, 99), (1 << 40, 1 << 50)]
    for start in (0, 5, 300):
        want = p4runtime_pb2.ReadResponse()
        for i, (packets, octets) in enumerate(cells, start):
            e = want.entities.add().counter_entry
            e.counter_id = 302
            e.index.index = i
            e.data.packet_count, e.data.byte_count = packets, octets
        assert wire.counter_entities(302, start, cells) == want.SerializeToString()


def test_a_large_read_streams_while_writes_and_packets_go_on(harness, big_program):
    p4info, config = big_program
    client = harness.client()
    client.set_pipeline(p4info, config)
    reg = p4info.registers[0].preamble.id
    ctr = p4info.counters[0].preamble.id
    harness.inject(1, packet(CELLS - 1, 5))
    harness.inject(1, packet(7, 9))
    # a client with a small receive window that stops reading after the first response
    channel = grpc.insecure_channel(harness.address, options=[("grpc.http2.bdp_probe", 0)])
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    request = p4runtime_pb2.ReadRequest(device_id=client.device_id)
    request.entities.add().register_entry.register_id = reg
    stream = stub.Read(request)
    first = next(stream)
    assert [e.register_entry.index.index for e in first.entities[:3]] == [0, 1, 2]
    assert first.entities[7].register_entry.data.bitstring == b"\x09"
    # the read is not finished (and cannot be: this client is not reading) and yet a write
    # completes and a packet changes a register cell
    entry = p4runtime_pb2.RegisterEntry(register_id=reg)
    entry.index.index = CELLS - 1
    entry.data.bitstring = b"\x4d"
    client.stub.Write(p4runtime_pb2.WriteRequest(device_id=client.device_id, election_id=first_election(client),
                                                 updates=[update("MODIFY", register_entry=entry)]), timeout=30)
    assert harness.inject(1, packet(CELLS - 2, 88)) == [(1, packet(CELLS - 2, 88))]
    # the rest of the read is copied as it streams: it shows both changes
    cells = {e.register_entry.index.index: e.register_entry.data.bitstring
             for response in stream for e in response.entities}
    cells.update({e.register_entry.index.index: e.register_entry.data.bitstring for e in first.entities})
    assert len(cells) == CELLS and cells[7] == b"\x09"
    if hasattr(harness.server.device.engine, "register_read_range"):
        # the native engine copies block by block: the blocks read after the pause are new
        assert (cells[CELLS - 2], cells[CELLS - 1]) == (bytes([88]), b"\x4d")
    else:
        # the Python engine copies the whole array at the first block: one consistent snapshot
        assert (cells[CELLS - 2], cells[CELLS - 1]) == (b"\x00", b"\x05")
    [count] = client.read(p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry(
        counter_id=ctr, index=p4runtime_pb2.Index(index=7))))
    assert (count.counter_entry.data.packet_count, count.counter_entry.data.byte_count) == (1, 8)
    channel.close()


def first_election(client):
    election = p4runtime_pb2.Uint128(high=client.election_id >> 64, low=client.election_id & ((1 << 64) - 1))
    return election
