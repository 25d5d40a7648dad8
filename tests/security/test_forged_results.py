"""Forged results and contributions without the wire token against a running job, through the real P4 program
(p4src/p4reduce.p4 on p4sim's engine behind UDP on loopback, testbed/p4sim_udp.py).

A two-rank job whose rank 1 is held back (this test calls its allreduce only once the attack is
over), so rank 0's rounds are known to be open and cannot complete while forged packets arrive:
  * results as from the switch's own address and port (what an on-path host, or one on a segment
    without the source guard, could send) without the job's wire token, or with a wrong one: rank 0
    ignores and counts them;
  * results with the right wire token from a member's own address: the worker's socket never reads
    them when it is connected to the switch; when it could not connect, it checks each datagram's
    source, ignores and counts them;
  * a contribution from the job's own member with a wrong wire token: the switch drops it as BAD_WIRE_TOKEN,
    so the member's real contribution still counts.
Every sum stays bit-exact; on both worker loops (native and Python).
"""
from __future__ import annotations

import errno
import socket
import threading
import time

import numpy as np
import pytest
from testbed.p4sim_udp import P4SimUdpSwitch

from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names as N
from p4reduce.protocol.wire import Header, encode
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.job import JobParams
from p4reduce.worker.streaming import RetryPolicy, UdpReducer

pytestmark = pytest.mark.usefixtures("both_worker_loops")   # the C worker loop and the Python one

JOB, WIRE_TOKEN, SLOTS = 6, 0x7E57_0A11, 4
ELEMENTS = SLOTS * C.LANES           # one round per slot: rank 0's first rounds are its only ones
FORGED_LANES = np.full(C.LANES, 1 << 24, np.int32)


class NoRouteSocket(socket.socket):
    """A UDP socket whose connect fails, as when the worker starts before its route exists."""

    def connect(self, address):
        raise OSError(errno.ENETUNREACH, "Network is unreachable")


def forged_result(slot: int, wire_token: int) -> bytes:
    """The result rank 0 waits for on `slot` (its first round: version 0, offset slot * LANES),
    with made-up sums."""
    return encode(Header(msg_type=C.MsgType.RESULT, job_id=JOB, rank=0, count=2, ver=0, slot=slot,
                         offset=slot * C.LANES, next_offset=C.NEXT_NONE, flags=C.Flags.EOT,
                         bitmap=C.full_bitmap(), wire_token=wire_token), FORGED_LANES)


def wait_for(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


@pytest.fixture
def held_job(p4reduce_json):
    """(switch, rank 0 factory): the job on the switch; build rank 0 and rank 1 with `make`."""
    sw = P4SimUdpSwitch(p4reduce_json)
    sw.add_job(JOB, 2, SLOTS, wire_token=WIRE_TOKEN)
    made: list[UdpReducer] = []

    def make(rank: int, sock: socket.socket | None = None) -> UdpReducer:
        if sock is not None:
            sock.bind(("127.0.0.1", 0))
        params = JobParams(JOB, rank, 2, SLOTS, "127.0.0.1", sw.addr[1], name="forged", wire_token=WIRE_TOKEN,
                           lanes=sw.layout.lanes, subblock=sw.layout.subblock)
        red = UdpReducer(params, sock=sock, bind=("127.0.0.1", 0), retry=RetryPolicy(timeout=0.05, deadline=60))
        sw.add_worker(JOB, rank, "127.0.0.1", red.local_port)
        made.append(red)
        return red

    sw.start()
    yield sw, make
    sw.stop()
    for red in made:
        red.close()
        red.sock.close()


def run_attacked(sw, rank0: UdpReducer, rank1: UdpReducer, attack) -> list[np.ndarray]:
    """rank 0 allreduces in a thread; once the switch holds its contributions for every slot (its
    rounds are open), `attack()` runs; then rank 1 joins in. Returns both ranks' sums."""
    tensors = [np.arange(ELEMENTS, dtype=np.int32) * (r + 1) - 7 for r in range(2)]
    out: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def rank0_body():
        try:
            out[0] = Communicator(rank0).allreduce(tensors[0])
        except BaseException as e:  # reported below
            errors.append(e)

    absorbed = sw.counter(N.AGG_EVENTS, C.AggEvent.ABSORBED)
    t = threading.Thread(target=rank0_body)
    t.start()
    wait_for(lambda: sw.counter(N.AGG_EVENTS, C.AggEvent.ABSORBED) >= absorbed + SLOTS or errors,
             "rank 0's contributions for every slot reached the switch")
    attack()
    assert 0 not in out and not errors, errors   # nothing could complete without rank 1
    out[1] = Communicator(rank1).allreduce(tensors[1])
    t.join(60)
    assert not errors, errors
    want = tensors[0].astype(np.int64) + tensors[1]
    for r in (0, 1):
        np.testing.assert_array_equal(out[r], want)
    return [out[0], out[1]]


def test_results_without_the_wire_token_are_ignored_and_counted(held_job):
    """A non-member that can put the switch's address on its datagrams but does not know the
    wire token: results with no wire token, a wrong one and another job's are all ignored."""
    sw, make = held_job
    rank0, rank1 = make(0), make(1)
    forged = [forged_result(s, wire_token) for s in range(SLOTS) for wire_token in (0, WIRE_TOKEN ^ 1, 0x1111_2222)]

    def attack():
        for payload in forged:
            sw.sock.sendto(payload, ("127.0.0.1", rank0.local_port))   # from the switch's address and port
        wait_for(lambda: rank0.stats.results + rank0.stats.ignored >= len(forged), "rank 0 read every forged result")

    run_attacked(sw, rank0, rank1, attack)
    assert rank0.stats.forged == len(forged) and rank1.stats.forged == 0


def test_a_members_forged_results_with_the_wire_token_never_reach_a_connected_worker(held_job):
    """A member knows the wire token but cannot send from the switch's address: its results, aimed at
    rank 0's open rounds, are not read (the kernel filters the connected socket)."""
    sw, make = held_job
    rank0, rank1 = make(0), make(1)
    member = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    member.bind(("127.0.0.1", 0))

    def attack():   # loopback delivers (or refuses) each datagram within sendto
        for s in range(SLOTS):
            member.sendto(forged_result(s, WIRE_TOKEN), ("127.0.0.1", rank0.local_port))

    try:
        run_attacked(sw, rank0, rank1, attack)
    finally:
        member.close()
    assert rank0.stats.forged == 0      # never read: not from the switch


def test_a_worker_that_could_not_connect_checks_the_source_of_every_result(held_job):
    sw, make = held_job
    rank0 = make(0, sock=NoRouteSocket(socket.AF_INET, socket.SOCK_DGRAM))
    rank1 = make(1)
    member = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    member.bind(("127.0.0.1", 0))

    def attack():
        for s in range(SLOTS):
            member.sendto(forged_result(s, WIRE_TOKEN), ("127.0.0.1", rank0.local_port))   # right wire token
            sw.sock.sendto(forged_result(s, 0), ("127.0.0.1", rank0.local_port))      # right source
        wait_for(lambda: rank0.stats.results + rank0.stats.ignored >= 2 * SLOTS, "rank 0 read every forged result")

    try:
        run_attacked(sw, rank0, rank1, attack)
    finally:
        member.close()
    assert rank0.stats.forged == 2 * SLOTS


def test_a_contribution_with_a_wrong_wire_token_is_dropped_by_the_switch_and_counted(held_job):
    """Rank 1's own address and port, its rank, slot 0's open round, but not the job's wire token: the
    switch counts it as BAD_WIRE_TOKEN and adds nothing, so rank 1's real contribution completes the
    round with the right sums."""
    sw, make = held_job
    rank0, rank1 = make(0), make(1)
    wrong = [encode(Header(job_id=JOB, rank=1, ver=0, slot=s, offset=s * C.LANES, next_offset=C.NEXT_NONE,
                           flags=C.Flags.EOT, bitmap=C.full_bitmap(), wire_token=wire_token), FORGED_LANES)
             for s in range(SLOTS) for wire_token in (0, WIRE_TOKEN ^ 0x8000_0000)]

    def attack():
        for payload in wrong:
            rank1.sock.send(payload)
        wait_for(lambda: sw.counter(N.DROP_REASONS, C.DropReason.BAD_WIRE_TOKEN) == len(wrong),
                 "the switch dropped every contribution without the wire token")

    run_attacked(sw, rank0, rank1, attack)
    assert sw.counter(N.DROP_REASONS, C.DropReason.BAD_WIRE_TOKEN) == len(wrong)
