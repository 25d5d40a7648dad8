"""All-reduce through the compiled program on p4sim, in lockstep with the reference model:
exact integer sums, dense and sparse, 2 to 32 workers, under loss, duplication and reordering."""
import numpy as np
import pytest

from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.protocol.constants import AggEvent, DropReason, Flags, Mode, MsgType
from p4reduce.protocol.wire import Header, decode, encode
from testbed.lossy_net import LossyNetwork
from testbed.reference_worker import JobRun


def sparse_tensor(rng, length, density, lo=-10**6, hi=10**6):
    """int32 tensor whose sub-blocks are non-zero with probability `density`."""
    sb = -(-length // C.SUBBLOCK)
    x = rng.integers(lo, hi, sb * C.SUBBLOCK)
    x.reshape(sb, C.SUBBLOCK)[rng.random(sb) >= density] = 0
    return x[:length].astype(np.int32)


def numpy_sum(tensors):
    return np.sum(np.stack(tensors).astype(np.int64), axis=0)


@pytest.mark.parametrize("n", [2, 4, 8, 32])
@pytest.mark.parametrize("mode,density", [(Mode.DENSE, 1.0), (Mode.DENSE, 0.2),
                                          (Mode.SPARSE, 0.1), (Mode.SPARSE, 0.6)])
def test_allreduce_equals_numpy_sum_under_loss(fabric, n, mode, density):
    rng = np.random.default_rng(1000 * n + int(100 * density) + int(mode))
    length = int(rng.integers(200, 500)) if n < 32 else 150
    tensors = [sparse_tensor(rng, length, density) for _ in range(n)]
    fabric.add_job(5, n, slot_base=100, slot_count=3, mode=mode)
    run = JobRun(tensors, 5, 3, mode)
    net = LossyNetwork(fabric.send, seed=n, loss=0.05, dup=0.03, spurious_timeout=0.01)
    net.run({5: run})
    want = numpy_sum(tensors)
    for r in range(n):
        np.testing.assert_array_equal(run.results()[r], want)
    assert net.stats["lost"] > 0 or n == 2
    fabric.assert_counters_match_model()
    assert set(fabric.drops()) <= {DropReason.DUPLICATE_PENDING}


def test_sparse_skips_zero_blocks(fabric):
    n, length = 4, 32 * 40
    tensors = [np.zeros(length, np.int32) for _ in range(n)]
    tensors[1][32 * 21 + 9] = -5
    tensors[3][32 * 37] = 11
    fabric.add_job(2, n, slot_base=0, slot_count=4, mode=Mode.SPARSE)
    run = JobRun(tensors, 2, 4, Mode.SPARSE)
    LossyNetwork(fabric.send, seed=1).run({2: run})
    np.testing.assert_array_equal(run.results()[0], numpy_sum(tensors))
    # 4 streams start at blocks 0..3; then stream 1 jumps to block 21 and stream 1 to block 37
    assert fabric.events()[AggEvent.RESULT_MULTICAST] == 6
    fabric.assert_counters_match_model()


def packet(rank, job=1, slot=0, ver=0, offset=0, nxt=C.NEXT_NONE, exp=C.EXP_BIAS, block=None,
           bitmap=None, flags=0):
    block = np.full(C.LANES, rank + 1, np.int32) if block is None else np.asarray(block, np.int32)
    bitmap = C.full_bitmap() if bitmap is None else bitmap
    return encode(Header(job_id=job, rank=rank, slot=slot, ver=ver, offset=offset, next_offset=nxt,
                         exponent=exp, bitmap=bitmap, flags=flags), block)


def test_result_header_fields_and_frame(fabric):
    fabric.add_job(1, 3, slot_base=7, slot_count=2)
    fabric.send(1, 0, packet(0, slot=1, ver=1, offset=64, nxt=192, exp=140))
    fabric.send(1, 2, packet(2, slot=1, ver=1, offset=64, nxt=128, exp=129))
    out = fabric.send(1, 1, packet(1, slot=1, ver=1, offset=64, nxt=C.NEXT_NONE, exp=200))
    assert sorted(r for _, r, _ in out) == [0, 1, 2]
    for _, rank, payload in out:
        h, lanes = decode(payload)
        assert (h.msg_type, h.flags, h.job_id, h.rank, h.count, h.ver, h.slot, h.offset, h.next_offset,
                h.exponent, h.bitmap) == (MsgType.RESULT, 0, 1, rank, 3, 1, 1, 64, 128, 200, 0xF)
        assert (lanes == 6).all()
    # registers: absolute slot 8, copy 1
    i = N.register_index(7, 1, 1)
    assert fabric.sw.register_read(N.COUNT, i) == 0 and fabric.sw.register_read(N.SEEN, i) == 0b111
    assert fabric.sw.register_read(N.lane_register(0, 0), i) == 6


def test_first_write_then_add_without_clears(fabric):
    fabric.add_job(1, 2, slot_base=0, slot_count=1)
    for ver, values in [(0, (5, 7)), (1, (1, 1)), (0, (-100, 3)), (1, (2**30, 2**30 - 1))]:
        fabric.send(1, 0, packet(0, ver=ver, block=np.full(C.LANES, values[0])))
        out = fabric.send(1, 1, packet(1, ver=ver, block=np.full(C.LANES, values[1])))
        assert (decode(out[0][2])[1] == sum(values)).all()


def test_saturating_lanes(fabric):
    fabric.add_job(1, 3, slot_base=0, slot_count=1)
    high = np.full(C.LANES, C.LANE_MAX - 10, np.int32)
    high[::2] = 5
    fabric.send(1, 0, packet(0, block=high))
    fabric.send(1, 1, packet(1, block=np.full(C.LANES, 8)))
    out = fabric.send(1, 2, packet(2, block=np.full(C.LANES, 8)))
    got = decode(out[0][2])[1]
    assert (got[1::2] == C.LANE_MAX).all() and (got[::2] == 21).all()
    low = np.full(C.LANES, C.LANE_MIN + 1, np.int32)
    for r in range(3):
        out = fabric.send(1, r, packet(r, ver=1, block=low))
    assert (decode(out[0][2])[1] == C.LANE_MIN).all()


@pytest.mark.parametrize("lost", range(6))
def test_loss_of_any_packet_then_retransmission(fabric, lost):
    """Round of 3 workers: packets 0-2 are contributions, 3-5 the results; lose one, recover."""
    fabric.add_job(1, 3, slot_base=0, slot_count=1)
    contribs = [packet(r, block=np.full(C.LANES, 10 ** r)) for r in range(3)]
    delivered = {}
    for r in range(3):
        if lost == r:
            continue
        for _, rank, p in fabric.send(1, r, contribs[r]):
            delivered[rank] = p
    if lost < 3:
        assert delivered == {}
    else:
        del delivered[lost - 3]
    # every worker without a result retransmits (flag RETX)
    for r in range(3):
        if r not in delivered:
            retx = bytearray(contribs[r]); retx[1] |= Flags.RETX
            for _, rank, p in fabric.send(1, r, bytes(retx)):
                delivered.setdefault(rank, p)
    assert sorted(delivered) == [0, 1, 2]
    for p in delivered.values():
        assert (decode(p)[1] == 111).all()
    # lost contribution r: retransmissions before r's find the round open (dropped), r's completes
    # it (multicast to all, so later workers stop waiting). Lost result: one unicast resend.
    pending = lost if lost < 3 else 0
    assert fabric.drops() == ({DropReason.DUPLICATE_PENDING: pending} if pending else {})
    events = fabric.events()
    assert events[AggEvent.RESULT_MULTICAST] == 1
    assert events[AggEvent.RESULT_UNICAST] == (0 if lost < 3 else 1)
    fabric.assert_counters_match_model()


def test_duplicates_and_stale_shadow_copy(fabric):
    fabric.add_job(1, 2, slot_base=0, slot_count=1)
    fabric.send(1, 0, packet(0, ver=0, offset=0))
    assert fabric.send(1, 0, packet(0, ver=0, offset=0)) == []          # duplicate, round open
    out = fabric.send(1, 1, packet(1, ver=0, offset=0))
    assert len(out) == 2
    # worker 0 moves to copy 1 (next block); worker 1 lost its result and retransmits on copy 0
    assert fabric.send(1, 0, packet(0, ver=1, offset=32)) == []
    stale = fabric.send(1, 1, packet(1, ver=0, offset=0))
    assert len(stale) == 1 and stale[0][1] == 1
    h, lanes = decode(stale[0][2])
    assert h.flags == Flags.RETX | Flags.EOT and h.offset == 0 and h.ver == 0 and (lanes == 3).all()
    # copy 0 was released by worker 0: its bit is clear there, worker 1's is still set
    assert fabric.sw.register_read(N.SEEN, 0) == 0b10
    out = fabric.send(1, 1, packet(1, ver=1, offset=32))
    assert len(out) == 2 and decode(out[0][2])[0].offset == 32
    # a contribution whose offset is not the round's is refused
    fabric.send(1, 0, packet(0, ver=0, offset=64))
    assert fabric.send(1, 1, packet(1, ver=0, offset=96)) == []
    assert fabric.drops()[DropReason.OFFSET_MISMATCH] == 1


def test_two_jobs_in_disjoint_slot_ranges(fabric):
    rng = np.random.default_rng(9)
    fabric.add_job(1, 4, slot_base=0, slot_count=2, mode=Mode.DENSE, ports=[1, 2, 3, 4])
    fabric.add_job(2, 3, slot_base=2, slot_count=3, mode=Mode.SPARSE, ports=[2, 3, 5])
    t1 = [sparse_tensor(rng, 300, 1.0) for _ in range(4)]
    t2 = [sparse_tensor(rng, 500, 0.3) for _ in range(3)]
    runs = {1: JobRun(t1, 1, 2, Mode.DENSE), 2: JobRun(t2, 2, 3, Mode.SPARSE)}
    LossyNetwork(fabric.send, seed=3, loss=0.05, dup=0.05).run(runs)
    assert (runs[1].results() == numpy_sum(t1)).all()
    assert (runs[2].results() == numpy_sum(t2)).all()
    # job 1 only ever touched absolute slots 0-1, job 2 slots 2-4
    used = [i for i in range(0, 20) if fabric.sw.register_read(N.SEEN, i)]
    assert set(used) <= set(range(0, 10)) and {0, 1, 2, 3} & set(used) and {4, 5, 6, 7, 8, 9} & set(used)
    fabric.assert_counters_match_model()


def test_late_copy_of_an_old_round_cannot_start_a_round(fabric):
    """Worker 0's round-0 packet duplicated in the network arrives after worker 0 moved on to copy 1
    (its bit in copy 0 is released): while round 1 is open it is refused as STALE_COPY."""
    fabric.add_job(1, 2, slot_base=0, slot_count=1)
    old = packet(0, ver=0, offset=0, block=np.full(C.LANES, 99))
    fabric.send(1, 0, old)
    fabric.send(1, 1, packet(1, ver=0, offset=0))
    fabric.send(1, 0, packet(0, ver=1, offset=32))                  # round 1 open on copy 1
    before = [fabric.sw.register_read(r, 0) for r in (N.SEEN, N.COUNT, N.lane_register(0, 0))]
    assert fabric.send(1, 0, old) == []
    assert fabric.drops() == {DropReason.STALE_COPY: 1}
    assert [fabric.sw.register_read(r, 0) for r in (N.SEEN, N.COUNT, N.lane_register(0, 0))] == before
    out = fabric.send(1, 1, packet(1, ver=1, offset=32))
    assert len(out) == 2 and (decode(out[0][2])[1] == 3).all()


def test_scapy_reads_the_switch_output(fabric):
    """What the P4 program emits dissects with protocol.scapy_layer as it decodes with the codec."""
    from scapy.all import Ether

    from p4reduce.protocol.scapy_layer import P4Reduce
    fabric.add_job(1, 2, slot_base=0, slot_count=1, mode=Mode.SPARSE)
    b = np.zeros(C.LANES, np.int32); b[C.SUBBLOCK * 2:C.SUBBLOCK * 3] = -42
    fabric.send(1, 0, packet(0, block=b, bitmap=0b0100, nxt=320, exp=150))
    frames = fabric.inject(*fabric.frame(1, 1, packet(1, block=np.zeros(C.LANES), bitmap=0, nxt=96)))
    assert len(frames) == 2
    for _port, frame in frames:
        pkt = Ether(frame)
        assert pkt.haslayer(P4Reduce)
        p = pkt[P4Reduce]
        h, lanes = decode(bytes(p))
        assert (p.msg_type, p.bitmap, p.next_offset, p.exponent, p.count) == (MsgType.RESULT, 0b0100, 96, 150, 2)
        np.testing.assert_array_equal(p.lanes(), lanes)
        assert (lanes[C.SUBBLOCK * 2:C.SUBBLOCK * 3] == -42).all() and p.rank == h.rank
        again = pkt.copy()
        del again["IP"].chksum, again["IP"].len, again["UDP"].len
        rebuilt = Ether(bytes(again))          # scapy recomputes checksum and lengths
        assert (rebuilt["IP"].chksum, rebuilt["IP"].len, rebuilt["UDP"].len) == \
            (pkt["IP"].chksum, pkt["IP"].len, pkt["UDP"].len)
