"""All-reduce through the compiled program on p4sim, in lockstep with the reference model:
exact integer sums, dense and sparse, 2 to 32 workers, under loss, duplication and reordering."""
import numpy as np
import pytest
from testbed.lossy_net import LossyNetwork
from testbed.reference_worker import JobRun

from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.protocol.constants import AggEvent, DropReason, Flags, Mode, MsgType
from p4reduce.protocol.wire import Header, decode, encode


def sparse_tensor(rng, length, density, subblock, lo=-10**6, hi=10**6):
    """int32 tensor whose sub-blocks are non-zero with probability `density`."""
    sb = -(-length // subblock)
    x = rng.integers(lo, hi, sb * subblock)
    x.reshape(sb, subblock)[rng.random(sb) >= density] = 0
    return x[:length].astype(np.int32)


def numpy_sum(tensors):
    return np.sum(np.stack(tensors).astype(np.int64), axis=0)


@pytest.mark.parametrize("n", [2, 4, 8, 32])
@pytest.mark.parametrize("mode,density", [(Mode.DENSE, 1.0), (Mode.DENSE, 0.2),
                                          (Mode.SPARSE, 0.1), (Mode.SPARSE, 0.6)])
def test_allreduce_equals_numpy_sum_under_loss(fabric, n, mode, density):
    lay = fabric.layout
    rng = np.random.default_rng(1000 * n + int(100 * density) + int(mode))
    blocks = int(rng.integers(7, 16)) if n < 32 else 5         # whatever the layout's block size
    length = blocks * lay.lanes - int(rng.integers(0, lay.lanes))
    tensors = [sparse_tensor(rng, length, density, lay.subblock) for _ in range(n)]
    fabric.add_job(5, n, slot_base=100, slot_count=3, mode=mode)
    run = JobRun(tensors, 5, 3, mode, layout=lay)
    net = LossyNetwork(fabric.send, seed=n, loss=0.05, dup=0.03, spurious_timeout=0.01)
    net.run({5: run})
    want = numpy_sum(tensors)
    for r in range(n):
        np.testing.assert_array_equal(run.results()[r], want)
    assert net.stats["lost"] > 0 or n == 2
    fabric.assert_counters_match_model()
    assert set(fabric.drops()) <= {DropReason.DUPLICATE_PENDING}


def test_sparse_skips_zero_blocks(fabric):
    lanes = fabric.layout.lanes
    n, length = 4, lanes * 40
    tensors = [np.zeros(length, np.int32) for _ in range(n)]
    tensors[1][lanes * 21 + lanes // 3] = -5
    tensors[3][lanes * 37] = 11
    fabric.add_job(2, n, slot_base=0, slot_count=4, mode=Mode.SPARSE)
    run = JobRun(tensors, 2, 4, Mode.SPARSE, layout=fabric.layout)
    LossyNetwork(fabric.send, seed=1).run({2: run})
    np.testing.assert_array_equal(run.results()[0], numpy_sum(tensors))
    # 4 streams start at blocks 0..3; then stream 1 jumps to block 21 and stream 1 to block 37
    assert fabric.events()[AggEvent.RESULT_MULTICAST] == 6
    fabric.assert_counters_match_model()


def packet(layout, rank, job=1, slot=0, ver=0, offset=0, nxt=C.NEXT_NONE, exp=C.EXP_BIAS, block=None,
           bitmap=None, flags=0):
    """A contribution; `block` is a scalar (every lane) or the block's lanes."""
    block = np.broadcast_to(np.asarray(rank + 1 if block is None else block, np.int32), (layout.lanes,))
    bitmap = layout.full_bitmap if bitmap is None else bitmap
    return encode(Header(job_id=job, rank=rank, slot=slot, ver=ver, offset=offset, next_offset=nxt,
                         exponent=exp, bitmap=bitmap, flags=flags), block, layout)


def test_result_header_fields_and_frame(fabric):
    lay = fabric.layout
    fabric.add_job(1, 3, slot_base=7, slot_count=2)
    fabric.send(1, 0, packet(lay, 0, slot=1, ver=1, offset=64, nxt=192, exp=140))
    fabric.send(1, 2, packet(lay, 2, slot=1, ver=1, offset=64, nxt=128, exp=129))
    out = fabric.send(1, 1, packet(lay, 1, slot=1, ver=1, offset=64, nxt=C.NEXT_NONE, exp=200))
    assert sorted(r for _, r, _ in out) == [0, 1, 2]
    for _, rank, payload in out:
        h, lanes = decode(payload, lay)
        assert (h.msg_type, h.flags, h.job_id, h.rank, h.count, h.ver, h.slot, h.offset, h.next_offset,
                h.exponent, h.bitmap) == (MsgType.RESULT, 0, 1, rank, 3, 1, 1, 64, 128, 200, lay.full_bitmap)
        assert (lanes == 6).all()
    # registers: absolute slot 8, copy 1
    i = N.register_index(7, 1, 1)
    assert fabric.sw.register_read(N.COUNT, i) == 0 and fabric.sw.register_read(N.SEEN, i) == 0b111
    assert fabric.sw.register_read(N.lane_register(0, 0), i) == 6


def test_first_write_then_add_without_clears(fabric):
    lay = fabric.layout
    fabric.add_job(1, 2, slot_base=0, slot_count=1)
    for ver, values in [(0, (5, 7)), (1, (1, 1)), (0, (-100, 3)), (1, (2**30, 2**30 - 1))]:
        fabric.send(1, 0, packet(lay, 0, ver=ver, block=np.full(lay.lanes, values[0])))
        out = fabric.send(1, 1, packet(lay, 1, ver=ver, block=np.full(lay.lanes, values[1])))
        assert (decode(out[0][2], lay)[1] == sum(values)).all()


def test_saturating_lanes(fabric):
    lay = fabric.layout
    fabric.add_job(1, 3, slot_base=0, slot_count=1)
    high = np.full(lay.lanes, C.LANE_MAX - 10, np.int32)
    high[::2] = 5
    fabric.send(1, 0, packet(lay, 0, block=high))
    fabric.send(1, 1, packet(lay, 1, block=np.full(lay.lanes, 8)))
    out = fabric.send(1, 2, packet(lay, 2, block=np.full(lay.lanes, 8)))
    got = decode(out[0][2], lay)[1]
    assert (got[1::2] == C.LANE_MAX).all() and (got[::2] == 21).all()
    low = np.full(lay.lanes, C.LANE_MIN + 1, np.int32)
    for r in range(3):
        out = fabric.send(1, r, packet(lay, r, ver=1, block=low))
    assert (decode(out[0][2], lay)[1] == C.LANE_MIN).all()


@pytest.mark.parametrize("lost", range(6))
def test_loss_of_any_packet_then_retransmission(fabric, lost):
    """Round of 3 workers: packets 0-2 are contributions, 3-5 the results; lose one, recover."""
    lay = fabric.layout
    fabric.add_job(1, 3, slot_base=0, slot_count=1)
    contribs = [packet(lay, r, block=np.full(lay.lanes, 10 ** r)) for r in range(3)]
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
        assert (decode(p, lay)[1] == 111).all()
    # lost contribution r: retransmissions before r's find the round open (dropped), r's completes
    # it (multicast to all, so later workers stop waiting). Lost result: one unicast resend.
    pending = lost if lost < 3 else 0
    assert fabric.drops() == ({DropReason.DUPLICATE_PENDING: pending} if pending else {})
    events = fabric.events()
    assert events[AggEvent.RESULT_MULTICAST] == 1
    assert events[AggEvent.RESULT_UNICAST] == (0 if lost < 3 else 1)
    fabric.assert_counters_match_model()


def test_duplicates_and_stale_shadow_copy(fabric):
    lay = fabric.layout
    fabric.add_job(1, 2, slot_base=0, slot_count=1)
    fabric.send(1, 0, packet(lay, 0, ver=0, offset=0))
    assert fabric.send(1, 0, packet(lay, 0, ver=0, offset=0)) == []          # duplicate, round open
    out = fabric.send(1, 1, packet(lay, 1, ver=0, offset=0))
    assert len(out) == 2
    # worker 0 moves to copy 1 (next block); worker 1 lost its result and retransmits on copy 0
    assert fabric.send(1, 0, packet(lay, 0, ver=1, offset=32)) == []
    stale = fabric.send(1, 1, packet(lay, 1, ver=0, offset=0))
    assert len(stale) == 1 and stale[0][1] == 1
    h, lanes = decode(stale[0][2], lay)
    assert h.flags == Flags.RETX | Flags.EOT and h.offset == 0 and h.ver == 0 and (lanes == 3).all()
    # copy 0 was released by worker 0: its bit is clear there, worker 1's is still set
    assert fabric.sw.register_read(N.SEEN, 0) == 0b10
    out = fabric.send(1, 1, packet(lay, 1, ver=1, offset=32))
    assert len(out) == 2 and decode(out[0][2], lay)[0].offset == 32
    # a contribution whose offset is not the round's is refused
    fabric.send(1, 0, packet(lay, 0, ver=0, offset=64))
    assert fabric.send(1, 1, packet(lay, 1, ver=0, offset=96)) == []
    assert fabric.drops()[DropReason.OFFSET_MISMATCH] == 1


def test_two_jobs_in_disjoint_slot_ranges(fabric):
    lay = fabric.layout
    rng = np.random.default_rng(9)
    fabric.add_job(1, 4, slot_base=0, slot_count=2, mode=Mode.DENSE, ports=[1, 2, 3, 4])
    fabric.add_job(2, 3, slot_base=2, slot_count=3, mode=Mode.SPARSE, ports=[2, 3, 5])
    t1 = [sparse_tensor(rng, 9 * lay.lanes + 5, 1.0, lay.subblock) for _ in range(4)]
    t2 = [sparse_tensor(rng, 15 * lay.lanes + 3, 0.3, lay.subblock) for _ in range(3)]
    runs = {1: JobRun(t1, 1, 2, Mode.DENSE, layout=lay), 2: JobRun(t2, 2, 3, Mode.SPARSE, layout=lay)}
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
    lay = fabric.layout
    fabric.add_job(1, 2, slot_base=0, slot_count=1)
    old = packet(lay, 0, ver=0, offset=0, block=np.full(lay.lanes, 99))
    fabric.send(1, 0, old)
    fabric.send(1, 1, packet(lay, 1, ver=0, offset=0))
    fabric.send(1, 0, packet(lay, 0, ver=1, offset=32))                  # round 1 open on copy 1
    before = [fabric.sw.register_read(r, 0) for r in (N.SEEN, N.COUNT, N.lane_register(0, 0))]
    assert fabric.send(1, 0, old) == []
    assert fabric.drops() == {DropReason.STALE_COPY: 1}
    assert [fabric.sw.register_read(r, 0) for r in (N.SEEN, N.COUNT, N.lane_register(0, 0))] == before
    out = fabric.send(1, 1, packet(lay, 1, ver=1, offset=32))
    assert len(out) == 2 and (decode(out[0][2], lay)[1] == 3).all()


def test_scapy_reads_the_switch_output(fabric):
    """What the P4 program emits dissects with protocol.scapy_layer as it decodes with the codec."""
    from scapy.all import Ether

    from p4reduce.protocol import scapy_layer
    from p4reduce.protocol.scapy_layer import P4Reduce
    lay = fabric.layout
    k = min(2, lay.num_subblocks - 1)                       # the one sub-block sent
    lanes_k = slice(lay.subblock * k, lay.subblock * (k + 1))
    fabric.add_job(1, 2, slot_base=0, slot_count=1, mode=Mode.SPARSE)
    b = np.zeros(lay.lanes, np.int32); b[lanes_k] = -42
    fabric.send(1, 0, packet(lay, 0, block=b, bitmap=1 << k, nxt=320, exp=150))
    frames = fabric.inject(*fabric.frame(1, 1, packet(lay, 1, block=0, bitmap=0, nxt=96)))
    assert len(frames) == 2
    scapy_layer.set_subblock(lay.subblock)
    try:
        for _port, frame in frames:
            pkt = Ether(frame)
            assert pkt.haslayer(P4Reduce)
            p = pkt[P4Reduce]
            h, lanes = decode(bytes(p), lay)
            assert (p.msg_type, p.bitmap, p.next_offset, p.exponent, p.count) == (MsgType.RESULT, 1 << k, 96, 150, 2)
            np.testing.assert_array_equal(p.lanes(lay.num_subblocks), lanes)
            assert (lanes[lanes_k] == -42).all() and p.rank == h.rank
            again = pkt.copy()
            del again["IP"].chksum, again["IP"].len, again["UDP"].len
            rebuilt = Ether(bytes(again))          # scapy recomputes checksum and lengths
            assert (rebuilt["IP"].chksum, rebuilt["IP"].len, rebuilt["UDP"].len) == \
                (pkt["IP"].chksum, pkt["IP"].len, pkt["UDP"].len)
    finally:
        scapy_layer.set_subblock(C.SUBBLOCK)
