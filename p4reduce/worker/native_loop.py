"""The worker's aggregation loop in C (worker/native/wloop.c), behind UdpReducer.

Why: per packet, the Python loop of worker/streaming.py costs a worker about a third of its CPU
(measured with perf on a 16M-element allreduce of 4 workers), and on a machine where workers
and a software switch share the cores that CPU is the switch's and the peers'. wloop.c is the
same loop, event for event (scheduling of rounds, timers, fast retransmission, tail loss probes,
window, RTO estimate); the Python loop stays the reference, and the tests run both.

Built by `pip install` as the extension module p4reduce.worker._wloop (setup.py), and driven
here through ctypes. The header's field offsets and the protocol's constants are not written in
the C: native/wloop_wire.h is generated from protocol/wire.py and protocol/constants.py by
`python -m p4reduce.worker.native_loop --write-header` (a test fails when it is stale), and the
module carries the values it was built with, checked against the protocol's at load. The loop
runs without the GIL; lanes come from the source through one callback per batch of rounds, or
straight from an exact int32 source's array, or (aggregate_float) quantized in C from a float32
array whose results are dequantized in C into the float32 output.

Which loop a reducer runs: ``UdpReducer(loop=...)`` or the environment's P4REDUCE_WORKER_LOOP,
``native`` (the default when the extension was built) or ``python``.
"""
from __future__ import annotations

import ctypes
import functools
import logging
import os
import socket
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from p4reduce.protocol import constants as C
from p4reduce.protocol import wire

from . import quantize as qz
from .reducer import AggregationError, BlockSource, FloatSource, IntSource
from .streams import call_sums, check_offsets, next_nonzero

if TYPE_CHECKING:
    from .streaming import UdpReducer

log = logging.getLogger("p4reduce.worker")

LOOPS = ("native", "python")
SLICE_S = 0.2          # the C loop returns to Python this often (signals are handled in between)
STEP_AGAIN = 5
ENV = "P4REDUCE_WORKER_LOOP"

_i64, _f64, _i32, _u32 = ctypes.c_int64, ctypes.c_double, ctypes.c_int32, ctypes.c_uint32
ENCODE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                          ctypes.POINTER(ctypes.c_int8), ctypes.POINTER(ctypes.c_int32))

_STATS = ("packets_sent", "retransmissions", "fast_retransmissions", "tail_probes", "deferred", "results",
          "ignored", "forged", "send_errors", "rtt_samples", "wakeups")


class WlArgs(ctypes.Structure):
    """wl_args of wloop.c, field for field."""
    _fields_ = [(name, _i64) for name in _STATS] + [("bytes_sent", _i64)] + [  # type: ignore[assignment]
        ("est_min", _f64), ("est_max", _f64), ("est_backoff", _f64), ("est_granularity", _f64),
        ("srtt", _f64), ("rttvar", _f64), ("est_rto", _f64), ("est_samples", _i64),
        ("cwnd", _f64), ("ssthresh", _f64), ("decreased_at", _f64), ("newest_answered", _f64),
        ("win_minimum", _i64), ("win_maximum", _i64), ("decreases", _i64), ("losses", _i64), ("stalls", _i64),
        ("timeout", _f64), ("backoff", _f64), ("max_timeout", _f64), ("deadline", _f64), ("adaptive", _i32),
        ("fd", _i32), ("connected", _i32), ("job_id", _i32), ("rank", _i32), ("sparse", _i32),
        ("float_mode", _i32), ("slot_count", _i32), ("lanes", _i32), ("subblock", _i32),
        ("wire_token", _u32), ("dest_ip", _u32), ("dest_port", ctypes.c_uint16), ("n_blocks", _i64),
        ("last_ver", ctypes.POINTER(ctypes.c_uint8)), ("sums", ctypes.POINTER(ctypes.c_int32)),
        ("exps", ctypes.POINTER(ctypes.c_int8)), ("proposals", ctypes.POINTER(ctypes.c_int8)),
        ("first_nz", ctypes.POINTER(ctypes.c_int64)), ("after_nz", ctypes.POINTER(ctypes.c_int64)),
        ("direct", ctypes.POINTER(ctypes.c_int32)), ("encode", ENCODE),
        ("fail_slot", _i32), ("fail_ver", _i32), ("fail_retries", _i32), ("fail_block", _i64),
        ("fail_waited", _f64), ("bad_next", _i64), ("bad_offset", _i64),
        ("fsrc", ctypes.POINTER(ctypes.c_float)), ("fdst", ctypes.POINTER(ctypes.c_float)),
        ("sent", ctypes.POINTER(ctypes.c_int32)), ("nonzero", ctypes.POINTER(ctypes.c_uint8)), ("size", _i64),
        ("headroom", _i32), ("n_workers", _i32), ("average", _i32),
    ]


def read_stats(args: WlArgs, stats: Any) -> None:
    """Copy the counters of a native call (running or done) into a StreamStats."""
    for name in _STATS:
        setattr(stats, name, int(getattr(args, name)))


def _defines() -> dict[str, int]:
    """The wire format and constants the C needs, from the one place they are defined."""
    fields: dict[str, Any] = dict(wire.HEADER_DTYPE.fields or {})
    out = {f"OFF_{name.upper()}": int(spec[1]) for name, spec in fields.items()}
    out.update(HEADER_BYTES=C.HEADER_BYTES, FRAME_HEADER_BYTES=C.FRAME_HEADER_BYTES, SLOT_BITS=wire.SLOT_BITS,
               MSG_CONTRIB=int(C.MsgType.CONTRIB), MSG_RESULT=int(C.MsgType.RESULT),
               FLAG_EOT=int(C.Flags.EOT), FLAG_RETX=int(C.Flags.RETX), NEXT_NONE=C.NEXT_NONE,
               EXP_BIAS=C.EXP_BIAS, EXP_MIN=qz.EXP_MIN, EXP_MAX=qz.EXP_MAX)
    return out


HEADER = "wloop_wire.h"
WRITE_HEADER = "python -m p4reduce.worker.native_loop --write-header"


def wire_header() -> str:
    """native/wloop_wire.h as the protocol defines it today: one #define per value, and the list
    of their names (WL_WIRE_CONSTANTS) the extension module exposes for the load-time check."""
    values = _defines()
    lines = ["/* Generated from protocol/wire.py and protocol/constants.py: do not edit.",
             f" * Regenerate with `{WRITE_HEADER}`. */",
             "#ifndef WLOOP_WIRE_H", "#define WLOOP_WIRE_H"]
    lines += [f"#define {name} {value if value >= 0 else f'({value})'}" for name, value in sorted(values.items())]
    lines += ["#define WL_WIRE_CONSTANTS(X) \\"]
    lines += [f"    X({name}) \\" for name in sorted(values)]
    lines += ["", "#endif", ""]
    return "\n".join(lines)


class NativeLoopUnavailable(RuntimeError):
    """The extension module is not there (built without a C compiler) or was built for another
    wire format than the protocol's (an editable tree changed since its install)."""


@functools.lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    """The extension module's loop, loaded through ctypes; NativeLoopUnavailable when it cannot be."""
    try:
        import p4reduce.worker._wloop as _wloop
    except ImportError as exc:
        raise NativeLoopUnavailable(
            f"the extension p4reduce.worker._wloop was not built when p4reduce was installed ({exc}); "
            "install again where a C compiler is (pip install .)") from None
    want = _defines()
    built = {name: getattr(_wloop, name, None) for name in want}
    if built != want:
        wrong = sorted(name for name in want if built[name] != want[name])
        raise NativeLoopUnavailable(
            f"the extension p4reduce.worker._wloop was built for another wire format ({', '.join(wrong)} differ "
            "from the protocol's): install again (pip install .)")
    lib = ctypes.CDLL(_wloop.__file__)
    lib.wl_open.argtypes = [ctypes.POINTER(WlArgs)]
    lib.wl_open.restype = ctypes.c_void_p
    lib.wl_step.argtypes = [ctypes.c_void_p, ctypes.c_double]
    lib.wl_step.restype = ctypes.c_int
    lib.wl_close.argtypes = [ctypes.c_void_p]
    lib.wl_close.restype = None
    lib.wl_propose.argtypes = [ctypes.c_void_p, _i64, _i32, ctypes.c_void_p, ctypes.c_void_p,
                               ctypes.POINTER(_i64), ctypes.POINTER(ctypes.c_float)]
    lib.wl_propose.restype = ctypes.c_int
    return lib


def propose(x: np.ndarray, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """(exponent proposals int8, non-zero bool) per block of flat float32 `x`, in one pass in C:
    what quantize.exponents_for(quantize.block_maxima(x, lanes)) and its `> 0` give, with the
    same QuantizationError for NaN, inf or |x| >= 2**EXP_MAX."""
    x = np.ascontiguousarray(x, np.float32).reshape(-1)
    nb = -(-x.size // lanes)
    props = np.empty(nb, np.int8)
    nonzero = np.empty(nb, np.bool_)
    bad, amax = _i64(), ctypes.c_float()
    rc = library().wl_propose(x.ctypes.data, x.size, lanes, props.ctypes.data, nonzero.ctypes.data,
                              ctypes.byref(bad), ctypes.byref(amax))
    if rc == 1:
        raise qz.nonfinite_error(bad.value, lanes)
    if rc == 2:
        raise qz.too_large_error(bad.value, float(np.float32(amax.value)))
    return props, nonzero


def choose(loop: str | None) -> str:
    """The loop a reducer runs: `loop`, else $P4REDUCE_WORKER_LOOP, else native when it builds.
    A loop asked for by name that cannot run is an error; the default falls back to Python."""
    asked = loop or os.environ.get(ENV) or ""
    source = "loop" if loop else ENV
    if asked and asked not in LOOPS:
        raise ValueError(f"{source}={asked!r}: must be one of {', '.join(LOOPS)}")
    if asked == "python":
        return "python"
    try:
        library()
    except (NativeLoopUnavailable, OSError) as exc:
        if asked == "native":
            raise ValueError(f"{source}=native: the native worker loop cannot run here: {exc}") from None
        _say_python_once(str(exc))
        return "python"
    return "native"


@functools.lru_cache(maxsize=1)
def _say_python_once(why: str) -> None:
    log.warning("worker loop: python (%s)", why)


def _net32(ip: str) -> int:
    return int.from_bytes(socket.inet_aton(socket.gethostbyname(ip)), sys.byteorder)


def _net16(port: int) -> int:
    return int.from_bytes(int(port).to_bytes(2, "big"), sys.byteorder)


def _ptr(arr: np.ndarray | None, ctype: Any) -> Any:
    return arr.ctypes.data_as(ctypes.POINTER(ctype)) if arr is not None else ctypes.POINTER(ctype)()


def _hand_back(red: UdpReducer, args: WlArgs, last_ver: np.ndarray) -> None:
    """The state a call leaves, whatever ended it: the next call starts from it, as in the
    Python loop (counters, bytes, RTO estimate, window, slot versions)."""
    read_stats(args, red._stats)
    red.bytes_sent += int(args.bytes_sent)
    red.rto_estimator.restore(None if args.srtt < 0 else args.srtt, None if args.rttvar < 0 else args.rttvar,
                              int(args.est_samples), args.est_rto)
    win = red.window
    win.cwnd, win.ssthresh = args.cwnd, args.ssthresh
    win.decreases, win.losses, win.stalls = int(args.decreases), int(args.losses), int(args.stalls)
    win.restore(args.decreased_at, args.newest_answered)
    red._last_ver[:] = last_ver.tolist()


def aggregate_float(red: UdpReducer, source: FloatSource) -> np.ndarray:
    """UdpReducer.aggregate_float on the native loop: the float32 input quantized (round to
    nearest; stochastic rounding through the source) and the results dequantized into
    source.dest by the C loop, no int32 sums; returns the agreed exponents."""
    exps = aggregate(red, source, fused=source)[1]
    assert exps is not None
    return exps


def aggregate(red: UdpReducer, source: BlockSource, out: np.ndarray | None = None,
              fused: FloatSource | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """UdpReducer.aggregate on the native loop: same arguments, results, state and errors.
    `fused` (aggregate_float): the results go to its float32 dest, the returned sums are empty."""
    job, L = red.job, red.lanes
    nb = source.n_blocks
    check_offsets(nb, L)
    float_mode = source.proposals is not None
    sums = call_sums(source, L, job.sparse, out) if fused is None else np.empty((0, L), np.int32)
    exps = np.full(nb, qz.EXP_MIN, np.int8) if float_mode else None
    if nb == 0:
        return sums, exps
    fsrc = sent = nonzero = None
    if fused is not None:
        if fused.rng is None:            # round to nearest: quantized in C, no callback
            fsrc = fused.x
            if fused.keep_sent:
                sent = fused.sent = np.zeros((nb, L), np.int32)
        if job.sparse:
            nonzero = np.ascontiguousarray(fused.nonzero, np.bool_).view(np.uint8)
    S = min(job.slot_count, nb)
    first = after = proposals = direct = None
    if job.sparse:
        f, a = next_nonzero(np.asarray(source.nonzero, bool), S)
        first, after = np.ascontiguousarray(f, np.int64), np.ascontiguousarray(a, np.int64)
    if source.proposals is not None:
        proposals = np.ascontiguousarray(source.proposals, np.int8)
    if type(source) is IntSource and not source.keep_sent:
        direct = np.ascontiguousarray(source.blocks, np.int32)   # lanes read in place: no callback
    failure: list[BaseException] = []

    def encode(n: int, blocks_p: Any, exps_p: Any, out_p: Any) -> int:
        try:
            blocks = np.ctypeslib.as_array(blocks_p, (n,)).copy()
            agreed = np.ctypeslib.as_array(exps_p, (n,)).copy() if exps_p else None
            lanes = source.take(blocks, agreed, L)
            np.ctypeslib.as_array(out_p, (n * L,)).reshape(n, L)[...] = lanes
            return 0
        except BaseException as exc:   # raised again in the caller's thread below
            failure.append(exc)
            return -1

    callback = ENCODE(encode)
    last_ver = np.asarray(red._last_ver, np.uint8)
    est, win, retry, st = red.rto_estimator, red.window, red.retry, red._stats
    srtt, rttvar, samples, rto = est.state()
    decreased_at, newest = win.state()
    args = WlArgs(
        **{name: getattr(st, name) for name in _STATS}, bytes_sent=0,
        est_min=est.min_rto, est_max=est.max_rto, est_backoff=est.backoff, est_granularity=est.granularity,
        srtt=-1.0 if srtt is None else srtt, rttvar=-1.0 if rttvar is None else rttvar, est_rto=rto,
        est_samples=samples, cwnd=win.cwnd, ssthresh=win.ssthresh, decreased_at=decreased_at,
        newest_answered=newest, win_minimum=win.minimum, win_maximum=-1 if win.maximum is None else win.maximum,
        decreases=win.decreases, losses=win.losses, stalls=win.stalls,
        timeout=retry.timeout, backoff=retry.backoff, max_timeout=retry.max_timeout, deadline=retry.deadline,
        adaptive=int(retry.adaptive), fd=red.sock.fileno(), connected=int(red._connected), job_id=job.job_id,
        rank=job.rank, sparse=int(job.sparse), float_mode=int(float_mode), slot_count=job.slot_count,
        lanes=L, subblock=red.layout.subblock, wire_token=job.wire_token,
        dest_ip=0 if red._connected else _net32(job.switch_ip), dest_port=_net16(job.switch_port), n_blocks=nb,
        last_ver=_ptr(last_ver, ctypes.c_uint8), sums=_ptr(sums, ctypes.c_int32), exps=_ptr(exps, ctypes.c_int8),
        proposals=_ptr(proposals, ctypes.c_int8), first_nz=_ptr(first, ctypes.c_int64),
        after_nz=_ptr(after, ctypes.c_int64), direct=_ptr(direct, ctypes.c_int32), encode=callback,
        fsrc=_ptr(fsrc, ctypes.c_float), fdst=_ptr(None if fused is None else fused.dest, ctypes.c_float),
        sent=_ptr(sent, ctypes.c_int32), nonzero=_ptr(nonzero, ctypes.c_uint8),
        size=0 if fused is None else fused.x.size, headroom=qz.headroom_bits(job.n_workers),
        n_workers=job.n_workers, average=int(fused is not None and fused.average))
    lib = library()
    handle = lib.wl_open(ctypes.byref(args))
    if not handle:
        raise MemoryError("the native worker loop cannot allocate its buffers")
    red.native_call = args      # red.stats reads the live counters meanwhile
    try:
        # in slices, so that Python handles signals (Ctrl-C) between them
        while (rc := lib.wl_step(handle, SLICE_S)) == STEP_AGAIN:
            pass
    finally:
        red.native_call = None
        lib.wl_close(handle)
        _hand_back(red, args, last_ver)
    if rc == 1:
        red._fail(args.fail_slot, int(args.fail_block), args.fail_ver, args.fail_retries, args.fail_waited)
    if rc == 2:
        raise AggregationError(
            f"{job.describe()}: slot {args.fail_slot}: the switch named next offset {args.bad_next} after offset "
            f"{args.bad_offset}, which is not a later block of this stream (tensor of {nb} blocks, {S} streams): "
            "workers disagree on the tensor size or the switch is misconfigured")
    if rc == 3:
        raise failure[0] if failure else AggregationError("the native loop's encode callback failed")
    if rc == 4:
        raise MemoryError("the native worker loop ran out of memory")
    if rc == 6:
        raise qz.overflow_error()
    return sums, exps


def main(argv: list[str] | None = None) -> int:
    """`--write-header`: regenerate native/wloop_wire.h; `--check-header`: exit 1 if it is stale."""
    import argparse
    import pathlib
    ap = argparse.ArgumentParser(prog="python -m p4reduce.worker.native_loop", description=main.__doc__)
    ap.add_argument("--write-header", action="store_true")
    ap.add_argument("--check-header", action="store_true")
    args = ap.parse_args(argv)
    path = pathlib.Path(__file__).with_name("native") / HEADER
    if args.write_header:
        path.write_text(wire_header())
        print(f"wrote {path}")
    elif args.check_header:
        if path.read_text() != wire_header():
            print(f"{path} is stale: run {WRITE_HEADER}", file=sys.stderr)
            return 1
    else:
        ap.error("say --write-header or --check-header")
    return 0


if __name__ == "__main__":
    sys.exit(main())
