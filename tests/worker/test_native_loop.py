"""The native worker loop (worker/native_loop.py, worker/native/wloop.c) against the Python
reference (worker/streaming.py): the same packets on the wire, the same sums, the same state
handed to the next call, errors raised the same way, and the choice of loop.

Every scenario of tests/worker/test_streaming.py and tests/security/test_forged_results.py runs
on both loops as well (loss, reordering, duplicates, dead peers, forged results, unconnected
sockets); this file checks what those cannot see.
"""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from testbed.fakeswitch import FakeSwitch
from testbed.loopback import loopback_reducers

from p4reduce.protocol import constants as C
from p4reduce.protocol import wire
from p4reduce.worker import native_loop
from p4reduce.worker import quantize as qz
from p4reduce.worker.communicator import Communicator
from p4reduce.worker.compressors import FixedPoint
from p4reduce.worker.job import JobParams
from p4reduce.worker.memory import ErrorFeedback
from p4reduce.worker.quantize import QuantizationError
from p4reduce.worker.reducer import AggregationError, FloatSource, IntSource, QuantizedSource
from p4reduce.worker.streaming import RetryPolicy, UdpReducer

RETRY = RetryPolicy(timeout=0.5, max_timeout=1.0, deadline=5.0)


class RecordingSwitch(FakeSwitch):
    """The fake switch, keeping every contribution it receives per source port."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.packets: dict[int, list[bytes]] = {}
        receive = self.model.receive

        def recording(ip, port, data):
            self.packets.setdefault(port, []).append(bytes(data))
            return receive(ip, port, data)
        self.model.receive = recording   # type: ignore[method-assign]


def _job(loop: str, tensors: list[np.ndarray], sparse: bool, slots: int, calls: int = 2, fused: bool = True,
         average: bool = False, in_place: bool = False, memory: bool = False, residuals: dict | None = None):
    """Run `calls` allreduces of `tensors` (one per rank) on `loop`; -> (results per call and rank,
    contributions per rank in the order sent, the reducers). `fused`: Communicator.fused_fixed_point;
    `in_place`: out= the input (torch.distributed's call); `memory`: error feedback (its residuals
    per call and rank into `residuals`)."""
    n = len(tensors)
    with RecordingSwitch() as sw:
        reds = loopback_reducers(sw, 5, n, slots, sparse=sparse, name="twin", retry=RETRY)
        for red in reds:
            red.loop = loop
        out: dict[tuple[int, int], np.ndarray] = {}
        errors: list[BaseException] = []

        def body(red):
            try:
                comm = Communicator(red, FixedPoint(), ErrorFeedback() if memory else None)
                comm.fused_fixed_point = fused
                for c in range(calls):
                    x = tensors[red.rank] * (c + 1)
                    out[c, red.rank] = comm.allreduce(x, average=average, out=x if in_place else None)
                    if residuals is not None and memory:
                        residuals[c, red.rank] = comm.memory.residuals[""].copy()  # type: ignore[union-attr]
            except BaseException as e:
                errors.append(e)
        threads = [threading.Thread(target=body, args=(red,)) for red in reds]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors
        sent = [sw.packets[red.local_port] for red in reds]
    for red in reds:
        red.close()
    return out, sent, reds


def _rounds_per_slot(packets: list[bytes]) -> dict[int, list[bytes]]:
    """Per slot, the rounds sent, in order: each packet with its RETX flag cleared, the copies of
    one round (consecutive on a slot, which has one round open at a time) counted once."""
    out: dict[int, list[bytes]] = {}
    for data in packets:
        f = wire.FLAGS_OFFSET
        first = data[:f] + bytes([data[f] & ~C.Flags.RETX]) + data[f + 1:]
        rounds = out.setdefault(wire.decode(data)[0].slot, [])
        if not rounds or rounds[-1] != first:
            rounds.append(first)
    return out


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_both_loops_send_the_same_packets_and_return_the_same_sums(dtype, sparse):
    """Two workers, 40 blocks on 8 slots, two calls: each worker's contributions, byte for byte
    (headers, versions, exponents, bitmaps, packed sub-blocks, flags), slot by slot in the same
    order, and the results are those of the Python loop."""
    rng = np.random.default_rng(11)
    size = 40 * C.LANES - 3
    tensors = []
    for r in range(2):
        if dtype == np.int32:
            x = rng.integers(-2**20, 2**20, size, dtype=np.int32)
        else:
            x = (rng.standard_normal(size) * 10.0 ** rng.integers(-3, 3, size)).astype(np.float32)
        x[C.LANES * 3:C.LANES * 12] = 0                         # zero everywhere
        x[C.LANES * 20 + r * C.SUBBLOCK: C.LANES * 20 + (r + 1) * C.SUBBLOCK] = 0   # one zero sub-block
        if r:
            x[C.LANES * 30:C.LANES * 33] = 0                    # zero on one worker only
        tensors.append(x)
    results, sent, reds = {}, {}, {}
    for loop in ("python", "native"):
        results[loop], sent[loop], reds[loop] = _job(loop, tensors, sparse, slots=8)
    for key, value in results["python"].items():
        assert np.array_equal(results["native"][key], value), key
    for r in range(2):
        # per slot, the same rounds in the same order (across slots the interleaving follows the
        # order results come back in, which the switch thread's timing may change); the copies
        # of a round counted once: on a loaded machine a timer may run out, or a send fail, in
        # either loop
        rounds = {loop: _rounds_per_slot(sent[loop][r]) for loop in sent}
        assert rounds["native"] == rounds["python"], f"rank {r}: the contributions differ"
        py, nat = reds["python"][r], reds["native"][r]
        n_rounds = sum(len(v) for v in rounds["python"].values())
        assert nat.stats.packets_sent - nat.stats.retransmissions == n_rounds
        assert py.stats.packets_sent - py.stats.retransmissions == n_rounds
        assert nat._last_ver == py._last_ver
        assert nat.rto_estimator.samples > 0
    if dtype == np.int32:
        want = tensors[0].astype(np.int64) + tensors[1]
        assert np.array_equal(results["native"][0, 0], want)


def _tensors(ranks: int, seed: int = 11) -> list[np.ndarray]:
    """float32 tensors of 40 blocks less 3 elements on `ranks` ranks: magnitudes over six decades,
    blocks zero everywhere, on one worker only, one zero sub-block per rank, and -0.0."""
    rng = np.random.default_rng(seed)
    size = 40 * C.LANES - 3
    tensors = []
    for r in range(ranks):
        x = (rng.standard_normal(size) * 10.0 ** rng.integers(-3, 3, size)).astype(np.float32)
        x[C.LANES * 3:C.LANES * 12] = 0
        x[C.LANES * 5:C.LANES * 6] = -0.0
        x[C.LANES * 20 + r * C.SUBBLOCK: C.LANES * 20 + (r + 1) * C.SUBBLOCK] = 0
        if r:
            x[C.LANES * 30:C.LANES * 33] = 0
        x[C.LANES * 36 + 7] = np.float32(2.0 ** -120)                 # below 2**EXP_MIN
        tensors.append(x)
    return tensors


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("average", [False, True], ids=["sum", "average"])
@pytest.mark.parametrize("memory", [False, True], ids=["plain", "error-feedback"])
def test_float_in_the_native_loop_is_the_python_loop_bit_for_bit(sparse, average, memory):
    """FixedPoint's allreduce with the conversion in the C loop (float32 read from the input,
    quantized, and each result dequantized, averaged, into the float32 output, in place) sends
    the same packets as the Python loop (quantize.py, dequantize_into) and returns the same bits;
    both return the bits of the generic compressor path (numpy, lanes through a callback), and
    error feedback's residuals are the same on every path."""
    tensors = _tensors(3)
    results, sent, reds, residuals = {}, {}, {}, {}
    for loop, fused in (("python", True), ("native", True), ("native", False)):
        residuals[loop, fused] = {}
        results[loop, fused], sent[loop, fused], reds[loop, fused] = _job(
            loop, tensors, sparse, slots=8, fused=fused, average=average, in_place=True, memory=memory,
            residuals=residuals[loop, fused])
    want = results["python", True]
    for path in results:
        for key, value in want.items():
            got = results[path][key]
            assert got.dtype == np.float32 and got.shape == value.shape
            assert np.array_equal(_bits(got), _bits(value)), (path, key)
            if memory:
                assert np.array_equal(_bits(residuals[path][key]), _bits(residuals["python", True][key])), (path, key)
    for r in range(3):
        rounds = {path: _rounds_per_slot(sent[path][r]) for path in sent}
        assert rounds["native", True] == rounds["python", True], f"rank {r}: the contributions differ"
        assert rounds["native", False] == rounds["python", True]
    n = np.float32(3)
    exact = (tensors[0].astype(np.float64) + tensors[1] + tensors[2]) / (3 if average else 1)
    bound = float(np.abs(exact).max()) * 2.0 ** -24 + 3 * 2.0 ** -(qz.headroom_bits(3) - 3)
    assert np.abs(results["native", True][0, 0] - exact).max() <= bound * (1 if average else n)


@pytest.mark.parametrize("loop", ["native", "python"])
def test_rounding_ties_and_the_extremes_of_the_range_are_the_references(loop):
    """One worker, values that land on .5 after scaling (ties go to even), on the range's edge
    (2**headroom), subnormal and tiny ones: the lanes sent and the result are those of
    quantize.quantize_blocks and dequantize (one worker: the sum is what it sent)."""
    k = qz.headroom_bits(1)
    e = 3                                               # the block's max below is 2**3: shift k - 3
    ties = (np.arange(-40, 40, dtype=np.float32) + np.float32(0.5)) * np.float32(2.0 ** (e - k))
    block = np.zeros(C.LANES, np.float32)
    block[:ties.size] = ties
    block[100], block[101], block[102] = 7.5, -7.75, np.float32(2.0 ** e) * np.float32(0.99999994)  # max < 2**e
    block[103], block[104] = np.float32(1e-45), -np.float32(3e-39)
    x = np.concatenate([block, block[::-1] * np.float32(2.0 ** -60), block[:77]])
    with FakeSwitch() as sw:
        (red,) = loopback_reducers(sw, 7, 1, 4, name="ties", retry=RETRY)
        red.loop = loop
        dest = np.empty_like(x)
        proposed = native_loop.propose(x, C.LANES) if loop == "native" else None
        src = FloatSource(x, C.LANES, 1, dest, proposed=proposed)
        exps = red.aggregate_float(src)
        red.close()
    want_lanes = qz.quantize(x, exps, 1, C.LANES)
    assert src.sent is not None and np.array_equal(src.sent.reshape(-1)[:x.size], want_lanes)
    assert np.array_equal(_bits(dest), _bits(qz.dequantize(want_lanes, exps, 1, C.LANES)))
    assert list(exps) == list(src.proposals) and exps[0] == e and exps[1] == e - 60


def test_the_c_proposals_are_numpys_with_the_same_errors():
    """native_loop.propose (one C pass) gives quantize.exponents_for(block_maxima(x)) and its
    non-zero blocks for every kind of value and size, and raises the same QuantizationError."""
    rng = np.random.default_rng(5)
    specials = np.array([0.0, -0.0, 1e-45, -1e-40, 2.0 ** -97, 2.0 ** -96, 0.75, 1.0, -1.0, 1.7e38, -2.0 ** 126],
                        np.float32)
    for size in (0, 1, 255, 256, 257, 40 * C.LANES - 3):
        x = (rng.standard_normal(size) * 10.0 ** rng.integers(-40, 36, size)).astype(np.float32)
        x[rng.random(size) < 0.3] = 0
        x[:min(size, specials.size)] = specials[:size]
        for lanes in (C.LANES, 32):
            props, nonzero = native_loop.propose(x, lanes)
            amax = qz.block_maxima(x, lanes)
            assert np.array_equal(props, qz.exponents_for(amax)) and np.array_equal(nonzero, amax > 0)
    x = np.ones(10 * C.LANES, np.float32)
    for bad in ([(300, np.inf), (2000, np.nan)], [(700, -np.inf)],
                [(300, np.float32(2.0 ** 127)), (900, np.float32(3.3e38)), (1900, -np.float32(3.3e38))]):
        y = x.copy()
        for at, v in bad:
            y[at] = v
        with pytest.raises(QuantizationError) as want:
            qz.exponents_for(qz.block_maxima(y, C.LANES))
        with pytest.raises(QuantizationError) as got:
            native_loop.propose(y, C.LANES)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("loop", ["native", "python"])
def test_an_agreed_exponent_below_a_workers_own_is_the_same_error(loop):
    """A worker whose values exceed the overflow-free range under the agreed exponent (here its
    proposals lowered by hand, so the switch's max is too small) fails with quantize's error on
    both loops, and the reducer's next call works."""
    x = np.linspace(-3, 3, 6 * C.LANES, dtype=np.float32)
    with FakeSwitch() as sw:
        (red,) = loopback_reducers(sw, 8, 1, 4, name="low", retry=RETRY)
        red.loop = loop
        proposed = native_loop.propose(x, C.LANES) if loop == "native" else None
        src = FloatSource(x, C.LANES, 1, np.empty_like(x), proposed=proposed)
        assert src.proposals is not None
        src.proposals = (src.proposals - 2).astype(np.int8)
        with pytest.raises(QuantizationError, match="agreed exponent is smaller than a worker's own"):
            red.aggregate_float(src)
        assert np.array_equal(red.sum_int32(np.arange(99, dtype=np.int32)), np.arange(99))
        red.close()


def test_stochastic_rounding_keeps_its_python_lanes_on_the_native_loop():
    """FixedPoint(stochastic=True): its lanes still come from the source (numpy's generator, one
    callback per batch), the results are dequantized in C: unbiased rounding within the bound."""
    x = np.random.default_rng(2).standard_normal(9 * C.LANES + 5).astype(np.float32)
    with FakeSwitch() as sw:
        reds = loopback_reducers(sw, 9, 2, 4, name="sr", retry=RETRY)
        outs: dict[int, np.ndarray] = {}

        def body(red):
            red.loop = "native"
            outs[red.rank] = Communicator(red, FixedPoint(stochastic=True, seed=red.rank)).allreduce(x, average=True)
        threads = [threading.Thread(target=body, args=(red,)) for red in reds]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for red in reds:
            red.close()
    assert np.array_equal(_bits(outs[0]), _bits(outs[1]))
    assert np.abs(outs[0] - x).max() <= 2.0 ** -(qz.headroom_bits(2) - 2)
    assert not np.array_equal(outs[0], x)


def test_the_native_loop_reads_exact_int32_lanes_in_place_and_others_through_the_source():
    """An exact int32 call that keeps no copy is read straight from the array (no callback);
    a source that keeps what it sent (error feedback's reference) gets every block through take()."""
    with FakeSwitch() as sw:
        (red,) = loopback_reducers(sw, 2, 1, 4, name="one", retry=RETRY)
        red.loop = "native"
        x = np.arange(10 * C.LANES, dtype=np.int32) - 77
        src = IntSource(x, C.LANES)
        sums, exps = red.aggregate(src)
        assert exps is None and np.array_equal(sums.reshape(-1), x)
        assert src.sent is not None and np.array_equal(src.sent.reshape(-1), x)   # keep_sent: every block taken
        q = QuantizedSource(np.linspace(-3, 3, 10 * C.LANES, dtype=np.float32), C.LANES, 1)
        sums, exps = red.aggregate(q)
        assert exps is not None and np.array_equal(q.sent, sums)   # one worker: the sum is what it sent
        red.close()


def test_an_error_in_the_source_reaches_the_caller_and_the_next_call_still_works():
    """The source's encode raising inside the C loop (here: a QuantizationError) is raised in the
    caller's thread, as the Python loop raises it; the reducer's state stays consistent, so the
    next call completes exactly."""
    class Failing(IntSource):
        calls = 0

        def encode(self, blocks, exponents):
            Failing.calls += 1
            if Failing.calls == 2:
                raise QuantizationError("block 7 cannot be quantized (test)")
            return super().encode(blocks, exponents)

    with FakeSwitch() as sw:
        (red,) = loopback_reducers(sw, 3, 1, 2, name="one", retry=RETRY)
        red.loop = "native"
        x = np.arange(12 * C.LANES, dtype=np.int32)
        with pytest.raises(QuantizationError, match="block 7"):
            red.aggregate(Failing(x, C.LANES))
        assert np.array_equal(red.sum_int32(x * 3), x * 3)
        red.close()


def test_the_switch_naming_an_impossible_next_block_is_the_same_error():
    """A result whose next offset is not a later block of its stream fails the call with the
    Python loop's message (job, slot, the offsets)."""
    sink_job = JobParams(4, 0, 1, 2, "127.0.0.1", 1, name="bad", wire_token=9, lanes=C.LANES, subblock=C.SUBBLOCK)
    import socket as _socket
    switch = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    switch.bind(("127.0.0.1", 0))
    sink_job.switch_port = switch.getsockname()[1]
    red = UdpReducer(sink_job, bind=("127.0.0.1", 0), retry=RETRY, loop="native")

    def answer():
        data, addr = switch.recvfrom(4096)
        h, lanes = wire.decode(data)
        bad = wire.Header(msg_type=C.MsgType.RESULT, job_id=4, rank=0, count=1, ver=h.ver, slot=h.slot,
                          offset=h.offset, next_offset=h.offset + 1, bitmap=h.bitmap, wire_token=9)
        switch.sendto(wire.encode(bad, lanes), addr)
    t = threading.Thread(target=answer)
    t.start()
    with pytest.raises(AggregationError, match=r"job bad \(id 4\) rank 0: slot 0: the switch named next offset 1 "
                                               r"after offset 0"):
        red.sum_int32(np.ones(4 * C.LANES, np.int32))
    t.join()
    red.close()
    switch.close()


def test_stats_are_live_while_a_native_call_runs():
    """red.stats reads the C loop's counters during the call (a monitor or a test can watch a
    long call), and they are the call's final ones afterwards."""
    with FakeSwitch() as sw:
        reds = loopback_reducers(sw, 6, 2, 4, name="live", retry=RETRY)
        for red in reds:
            red.loop = "native"
        x = np.ones(16 * C.LANES, np.int32)
        t = threading.Thread(target=reds[0].sum_int32, args=(x,))
        t.start()
        deadline = 50
        while reds[0].stats.packets_sent < 4 and deadline:   # rank 0 sent its first window, rank 1 not started
            deadline -= 1
            threading.Event().wait(0.05)
        assert reds[0].native_call is not None and reds[0].stats.packets_sent >= 4
        assert np.array_equal(reds[1].sum_int32(x), 2 * x)
        t.join(30)
        assert reds[0].native_call is None and reds[0].stats.results >= 16
        for red in reds:
            red.close()


def test_choosing_the_loop():
    """An argument wins over the environment; a bad name is an error naming where it came from."""
    job = JobParams(1, 0, 1, 4, "127.0.0.1", 9, lanes=C.LANES, subblock=C.SUBBLOCK)
    assert UdpReducer(job, bind=("127.0.0.1", 0), loop="python").loop == "python"
    assert native_loop.choose("native") == "native"
    with pytest.raises(ValueError, match="loop='fast': must be one of native, python"):
        native_loop.choose("fast")
    os.environ[native_loop.ENV] = "turbo"
    try:
        with pytest.raises(ValueError, match="P4REDUCE_WORKER_LOOP='turbo'"):
            native_loop.choose(None)
        assert native_loop.choose("python") == "python"
    finally:
        del os.environ[native_loop.ENV]


def test_without_the_extension_the_default_falls_back_and_native_by_name_is_a_clear_error():
    """An install made where no C compiler worked has no p4reduce.worker._wloop: the default loop
    is Python (said once), and asking for the native one by name says why it cannot run."""
    code = ("import sys, logging\nlogging.basicConfig(format='%(message)s')\n"
            "sys.modules['p4reduce.worker._wloop'] = None   # as if it had not been built\n"
            "from p4reduce.worker import native_loop as n\n"
            "print(n.choose(None)); print(n.choose(None))\n"
            "try:\n    n.choose('native')\nexcept ValueError as e:\n    print('error:', e)\n")
    env = dict(os.environ)
    env.pop(native_loop.ENV, None)
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[:2] == ["python", "python"]
    assert lines[2].startswith("error: loop=native: the native worker loop cannot run here: the extension "
                               "p4reduce.worker._wloop was not built when p4reduce was installed")
    said = [line for line in res.stderr.splitlines() if line.startswith("worker loop: python")]
    assert len(said) == 1, res.stderr


def test_an_extension_built_for_another_wire_format_is_refused(monkeypatch):
    """A tree whose protocol changed after the install: the module's constants differ from the
    protocol's, and the loop is not used with the wrong offsets."""
    real = native_loop._defines()
    monkeypatch.setattr(native_loop, "_defines", lambda: {**real, "OFF_RANK": real["OFF_RANK"] + 1})
    native_loop.library.cache_clear()
    try:
        with pytest.raises(native_loop.NativeLoopUnavailable, match="built for another wire format.*OFF_RANK"):
            native_loop.library()
    finally:
        monkeypatch.undo()
        native_loop.library.cache_clear()
    assert native_loop.library()


def test_the_generated_header_matches_the_protocol(tmp_path):
    """native/wloop_wire.h is what the protocol defines today; a changed constant makes it stale."""
    header = pathlib.Path(native_loop.__file__).with_name("native") / native_loop.HEADER
    assert header.read_text() == native_loop.wire_header()
    assert native_loop.main(["--check-header"]) == 0
    assert "#define OFF_RANK " in header.read_text() and "X(OFF_RANK)" in header.read_text()
    assert native_loop.wire_header() != header.read_text().replace("#define HEADER_BYTES 24", "#define HEADER_BYTES 25")


@pytest.mark.slow
@pytest.mark.parametrize("compiler", ["gcc", "none"])
def test_pip_builds_the_extension_or_says_in_one_line_that_it_did_not(tmp_path, compiler):
    """`pip wheel` of the project: with a compiler the wheel carries p4reduce/worker/_wloop*.so;
    with none (CC naming a missing program) the build still succeeds, says so in one line, and
    the wheel has no extension."""
    import shutil
    import zipfile
    repo = pathlib.Path(__file__).resolve().parents[2]
    src = tmp_path / "src"     # the checkout's files only: no build/ or in-place module from the venv's install
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=repo, capture_output=True,
                            text=True, check=True).stdout.split()
    for rel in listed:
        if (repo / rel).is_file() and not rel.startswith("tests/"):
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / rel, src / rel)
    env = dict(os.environ)
    if compiler == "none":
        env["CC"] = str(tmp_path / "no-such-cc")
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                          "-w", str(tmp_path / "wheel"), str(src)], env=env, capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    wheel = next((tmp_path / "wheel").glob("p4reduce-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    built = [n for n in names if n.startswith("p4reduce/worker/_wloop") and n.endswith(".so")]
    said = [line for line in (res.stdout + res.stderr).splitlines()
            if "p4reduce: the native worker loop was not built" in line]
    if compiler == "gcc":
        assert built and not said
    else:
        assert not built and len(said) == 1, res.stdout + res.stderr
    assert "p4reduce/p4src/p4reduce.p4" in names and "p4sim/compiler/p4.lark" in names


def test_ctrl_c_interrupts_a_native_call_within_a_slice(tmp_path):
    """A call waiting for a peer that never comes (deadline 60 s) is interrupted by SIGINT within
    a time slice of the C loop (native_loop.SLICE_S), as the Python loop's poll is."""
    # the handler set explicitly: a process started from a background job inherits SIGINT ignored
    code = ("import signal, socket, sys, numpy as np\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "from p4reduce.worker.job import JobParams\n"
            "from p4reduce.worker.streaming import RetryPolicy, UdpReducer\n"
            "peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); peer.bind(('127.0.0.1', 0))\n"
            "job = JobParams(1, 0, 2, 4, '127.0.0.1', peer.getsockname()[1], name='ctrlc', lanes=256, subblock=16)\n"
            "red = UdpReducer(job, bind=('127.0.0.1', 0), retry=RetryPolicy(deadline=60), loop='native')\n"
            "print('ready', flush=True)\n"
            "try:\n    red.sum_int32(np.ones(4096, np.int32))\n"
            "except KeyboardInterrupt:\n    print('interrupted', red.stats.packets_sent > 0, flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)
        assert time.monotonic() - t0 < 2 * native_loop.SLICE_S + 1.0
        assert out.strip() == "interrupted True"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("loop", ["native", "python"])
def test_a_tensor_beyond_32_bit_offsets_is_refused_before_anything_is_sent(loop):
    class Huge(IntSource):
        def __init__(self):
            self.n_blocks = (1 << 32) // C.LANES      # offsets up to 2**32: one past the wire's range
            self.proposals = None
            self.nonzero = np.ones(1, bool)

    red = UdpReducer(JobParams(1, 0, 2, 4, "127.0.0.1", 9, lanes=C.LANES, subblock=C.SUBBLOCK), bind=("127.0.0.1", 0),
                     loop=loop)
    with pytest.raises(ValueError, match="too large for the protocol's 32-bit offsets"):
        red.aggregate(Huge())
    assert red.stats.packets_sent == 0
    red.close()
