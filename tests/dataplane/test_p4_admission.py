"""Hostile and malformed packets change no state, produce nothing, and are counted by reason."""
import numpy as np
import pytest
from testbed.fabric import WorkerEnd

from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.protocol.addressing import SERVICE_IP as SWITCH_IP
from p4reduce.protocol.addressing import SERVICE_MAC as SWITCH_MAC
from p4reduce.protocol.constants import DropReason, Mode, MsgType
from p4reduce.protocol.frames import udp_frame
from p4reduce.protocol.wire import Header, decode, encode

WIRE_TOKENS = {1: 0x1111_2222, 2: 0x3333_4444}   # the wire tokens of two_jobs' jobs (0 for the others)


def contribution(layout, job, rank, slot=0, bitmap=None, block=None, wire_token=None):
    bitmap = layout.full_bitmap if bitmap is None else bitmap
    block = np.full(layout.lanes, 1000 + rank, np.int32) if block is None else block
    wire_token = WIRE_TOKENS.get(job, 0) if wire_token is None else wire_token
    return encode(Header(job_id=job, rank=rank, slot=slot, bitmap=bitmap, wire_token=wire_token), block, layout)


def patched(payload, at, data):
    return payload[:at] + data + payload[at + len(data):]


def state_snapshot(f, indices):
    regs = [N.SEEN, N.COUNT, N.ROUND_OFFSET, N.UNION_BITMAP, N.MIN_NEXT, N.MAX_EXP,
            N.lane_register(0, 0), N.lane_register(f.layout.num_subblocks - 1, f.layout.subblock - 1)]
    sw = f.sw
    return {(r, i): sw.register_read(r, i) for r in regs for i in indices}


@pytest.fixture
def two_jobs(fabric):
    fabric.add_job(1, 3, slot_base=0, slot_count=4, mode=Mode.DENSE, wire_token=WIRE_TOKENS[1])
    fabric.add_job(2, 2, slot_base=4, slot_count=4, mode=Mode.SPARSE, wire_token=WIRE_TOKENS[2])
    # a half-done round in each job, so that any wrongly admitted packet would change something
    fabric.send(1, 0, contribution(fabric.layout, 1, 0))
    fabric.send(2, 1, contribution(fabric.layout, 2, 1, bitmap=0b0001))
    return fabric


def hostile_frames(f):
    """(name, port, frame, reason) for every way a packet can be refused."""
    lay = f.layout
    w1 = f.ends[(1, 1)]

    def frame_from(end, payload, **kw):
        return udp_frame(end.mac, SWITCH_MAC, end.ip, SWITCH_IP, end.port, C.AGG_UDP_PORT, payload, **kw)

    def contribution_(job, rank, **kw):
        return contribution(lay, job, rank, **kw)

    good = contribution_(1, 1)
    short = good[:-lay.subblock * C.LANE_BYTES]             # one sub-block less than the bitmap says
    cases = [
        ("unknown source IP", 1, udp_frame("02:00:00:00:09:09", SWITCH_MAC, "10.9.9.9", SWITCH_IP, w1.port,
                                           C.AGG_UDP_PORT, good), DropReason.UNKNOWN_WORKER),
        ("known IP, other UDP port", 2, udp_frame(w1.mac, SWITCH_MAC, w1.ip, SWITCH_IP, w1.port + 1000,
                                                  C.AGG_UDP_PORT, good), DropReason.UNKNOWN_WORKER),
        ("unknown job", 2, frame_from(w1, contribution_(9, 1)), DropReason.UNKNOWN_JOB),
        ("worker's exact addresses from an unused port", 7, frame_from(w1, good), DropReason.SPOOFED_PORT),
        ("worker's exact addresses from another worker's port", 1, frame_from(w1, good),
         DropReason.SPOOFED_PORT),
        ("spoof from another port naming a bad rank", 3, frame_from(w1, contribution_(1, 2)),
         DropReason.SPOOFED_PORT),
        ("worker of job 1 naming job 2", 2, frame_from(w1, contribution_(2, 1, bitmap=1)), DropReason.UNKNOWN_WORKER),
        ("spoofed rank", 2, frame_from(w1, contribution_(1, 2)), DropReason.BAD_RANK),
        ("spoofed rank of a counted worker", 2, frame_from(w1, contribution_(1, 0)), DropReason.BAD_RANK),
        ("slot of job 2 via job 1", 2, frame_from(w1, contribution_(1, 1, slot=4)), DropReason.SLOT_RANGE),
        ("slot far out of range", 2, frame_from(w1, contribution_(1, 1, slot=0x7FFF)), DropReason.SLOT_RANGE),
        ("dense job, partial bitmap", 2, frame_from(w1, contribution_(1, 1, bitmap=lay.full_bitmap & ~1)),
         DropReason.BAD_BITMAP),
        ("truncated p4reduce header", 2, frame_from(w1, good[:12]), DropReason.TRUNCATED),
        ("bitmap promises more sub-blocks than sent", 2, frame_from(w1, short), DropReason.TRUNCATED),
        ("trailing bytes after the sub-blocks", 2, frame_from(w1, good + b"\0" * 8), DropReason.BAD_LENGTH),
        ("UDP length lies", 2, patched(frame_from(w1, good), 38, (8 + len(good) + 32).to_bytes(2, "big")), DropReason.BAD_LENGTH),
        ("frame longer than IPv4 length", 2, frame_from(w1, good) + b"\0" * 4, DropReason.BAD_LENGTH),
        ("bad IPv4 checksum", 2, patched(frame_from(w1, good), 24, b"\x12\x34"), DropReason.BAD_CHECKSUM),
        ("a result sent to the switch", 2, frame_from(w1, patched(good, 0, bytes([MsgType.RESULT]))), DropReason.BAD_TYPE),
        ("unknown message type", 2, frame_from(w1, patched(good, 0, b"\x07")), DropReason.BAD_TYPE),
        ("a member's contribution without a wire token", 2, frame_from(w1, contribution_(1, 1, wire_token=0)),
         DropReason.BAD_WIRE_TOKEN),
        ("a member's contribution with another job's wire token", 2,
         frame_from(w1, contribution_(1, 1, wire_token=WIRE_TOKENS[2])), DropReason.BAD_WIRE_TOKEN),
        ("a member's contribution, one wire token bit flipped", 2,
         frame_from(w1, contribution_(1, 1, wire_token=WIRE_TOKENS[1] ^ 0x8000_0000)), DropReason.BAD_WIRE_TOKEN),
    ]
    # sparse job: bitmap says 2 sub-blocks, one sent
    w2 = f.ends[(2, 0)]
    sparse = contribution_(2, 0, bitmap=lay.full_bitmap & 0b0011)
    cases.append(("sparse: bitmap/length mismatch", 1, frame_from(w2, sparse[:-lay.subblock * C.LANE_BYTES]),
                  DropReason.TRUNCATED))
    if lay.num_subblocks < 16:                              # a 16-bit bitmap has no bit beyond 16
        beyond = (1 << lay.num_subblocks) | lay.full_bitmap
        cases.append(("bitmap bit beyond NUM_SUBBLOCKS", 2,
                      frame_from(w1, patched(good, 18, beyond.to_bytes(2, "big"))), DropReason.BAD_BITMAP))
    return cases


def test_hostile_packets_change_nothing_and_are_counted(two_jobs):
    f = two_jobs
    indices = range(0, 16)
    before = state_snapshot(f, indices)
    want = {}
    for name, port, frame, reason in hostile_frames(f):
        assert f.inject(port, frame) == [], name
        want[reason] = want.get(reason, 0) + 1
        assert f.drops() == want, name
    assert state_snapshot(f, indices) == before
    f.assert_counters_match_model()


def test_rank_beyond_job_size(two_jobs):
    """A worker table entry with a rank >= num_workers (controller error) cannot reach the slots."""
    f = two_jobs
    end = WorkerEnd(1, 7, "10.1.9.9", 41000, "02:00:00:01:09:09", 3)
    f.add_worker(end)
    before = state_snapshot(f, range(8))
    assert f.send(1, 7, contribution(f.layout, 1, 7)) == []
    assert f.drops() == {DropReason.RANK_RANGE: 1}
    assert state_snapshot(f, range(8)) == before


def test_missing_worker_address_is_counted_in_egress(fabric):
    fabric.add_job(1, 2, slot_base=0, slot_count=1, wire_token=WIRE_TOKENS[1])
    fabric.sw.table_delete(N.WORKER_ADDRS, fabric.sw.table_find(
        N.WORKER_ADDRS, {"hdr.p4r.job_id": 1, "standard_metadata.egress_rid": 1}))
    fabric.check_model = False
    fabric.send(1, 0, contribution(fabric.layout, 1, 0))
    out = fabric.send(1, 1, contribution(fabric.layout, 1, 1))
    assert [r for _, r, _ in out] == [0]
    assert fabric.sw.counter_read(N.EGRESS_DROPS, DropReason.NO_WORKER_ADDR)[0] == 1


def test_counts_survive_a_good_round(two_jobs):
    """After the hostile packets the half-done rounds still complete with the right sums."""
    f = two_jobs
    for _name, port, frame, _reason in hostile_frames(f):
        f.inject(port, frame)
    f.send(1, 1, contribution(f.layout, 1, 1))
    out = f.send(1, 2, contribution(f.layout, 1, 2))
    assert len(out) == 3 and all((decode(p, f.layout)[1] == 3003).all() for _, _, p in out)
    assert {decode(p, f.layout)[0].wire_token for _, _, p in out} == {WIRE_TOKENS[1]}   # stamped on every result


def test_spoofed_port_counts_nothing_even_for_the_last_contribution(two_jobs):
    """The contribution that would complete job 1's round, forged with a worker's IP, UDP port and
    MAC from another port: dropped as SPOOFED_PORT, no result, registers unchanged; the real
    workers then complete the round with their own values only."""
    f = two_jobs
    f.send(1, 1, contribution(f.layout, 1, 1))          # 2 of 3 counted
    w2 = f.ends[(1, 2)]
    forged = udp_frame(w2.mac, SWITCH_MAC, w2.ip, SWITCH_IP, w2.port, C.AGG_UDP_PORT,
                       contribution(f.layout, 1, 2, block=np.full(f.layout.lanes, 10 ** 6, np.int32)))
    before = state_snapshot(f, range(16))
    for port in (1, 2, 4, 9):                           # every port but w2's (3)
        assert f.inject(port, forged) == []
    assert f.drops() == {DropReason.SPOOFED_PORT: 4}
    assert state_snapshot(f, range(16)) == before
    out = f.send(1, 2, contribution(f.layout, 1, 2))
    assert len(out) == 3 and all((decode(p, f.layout)[1] == 3003).all() for _, _, p in out)
    f.assert_counters_match_model()
