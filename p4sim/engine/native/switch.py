"""The native switch: the engine's in-process API (docs/architecture.md contract 2) over a
program compiled to C.

Bookkeeping that the control plane reads back (handles, normalised match keys, defaults,
replication groups, meter configurations, value sets) stays in the Python objects the Python
engine uses (tables.Table, ...); every change is mirrored into the C runtime, where packets
look it up.  Registers, counters and direct counters live only in C, where packets update them.

Locking: `lock` is the Python RLock *and* the C switch mutex; control methods hold both, so a
write is atomic with respect to packets.  Packets (process, process_batch, the native port
loop) take only the C mutex, per batch.  Bulk register and counter reads copy in chunks, each
under the C mutex, so they never hold packets back for long (consistent per cell, as BMv2).
"""
from __future__ import annotations

import array
import ctypes
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

from ..control import ControlAPI, Value, check_frame, check_ingress_port
from ..errors import EngineError, ResourceExhaustedError
from ..meters import MeterArray
from ..program import Program, TableInfo
from ..program_loader import build_program, load_json
from ..tables import Table, TableEntry
from ..values import parse_value
from . import binding, toolchain
from .cgen import ProgramC
from .cpipeline import TableSpec
from .errors import NativeBuildError

log = logging.getLogger("p4sim.engine")

LOG_INTERVAL = 1.0          # seconds between two log lines about dropped loops (as the Python engine)
MAX_PASSES = 64             # TM_MAX_PASSES of runtime/p4sim_tm.h, the Python engine's bound
EV_PARSER_LOOP, EV_PASS_LIMIT, EV_ACTION_LOOP = 1, 2, 3  # RT_EV_* of runtime/p4sim_rt.h
READ_CHUNK = 16384          # register/counter cells copied per lock hold
ARENA_FIXED = 8 << 20       # bytes for recirculated packets per received frame
U64 = (1 << 64) - 1

U64Array: TypeAlias = "ctypes.Array[ctypes.c_uint64]"
U16Array: TypeAlias = "ctypes.Array[ctypes.c_uint16]"
Frame: TypeAlias = bytes | bytearray | memoryview


class NativeInternalError(Exception):
    """A packet hit an internal error in the native code (the message says which)."""


def _words(value: int, n: int) -> list[int]:
    return [(value >> (64 * i)) & U64 for i in range(n)]


def _u64s(values: list[int]) -> U64Array:
    return (ctypes.c_uint64 * max(1, len(values)))(*values)


class NativeLock:
    """Python RLock + the C switch mutex, always taken in that order."""

    def __init__(self, lib: ctypes.CDLL, handle: int) -> None:
        self._py = threading.RLock()
        self._lib = lib
        self._handle = handle

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self._py.acquire(blocking, timeout):
            return False
        self._lib.rt_lock(self._handle)
        return True

    def release(self) -> None:
        self._lib.rt_unlock(self._handle)
        self._py.release()

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()


class NativeTable(Table):
    """A tables.Table whose changes are mirrored into the C table."""

    def __init__(self, info: TableInfo, prog: Program, switch: NativeSwitch, spec: TableSpec) -> None:
        super().__init__(info, prog)
        self._sw = switch
        self.spec = spec
        self.c_entries: dict[int, int] = {}    # handle -> the C entry's address

    def _args(self, action_id: int | None, data: Iterable[int]) -> U64Array:
        words = []
        if action_id is not None:
            slots, _ = self._sw._params[action_id]
            for slot, value in zip(slots, data):
                words += _words(value, max(1, slot.limbs))
        words += [0] * (self.spec.argw - len(words))
        return _u64s(words)

    def _key_words(self, match: tuple[Any, ...]) -> tuple[U64Array, U64Array, U64Array, U64Array, int]:
        """(value words, mask words, range lows, range highs, prefix length) of a normalized match."""
        spec = self.spec
        value = mask = plen = 0
        rlo = [0] * spec.nranges
        rhi = [0] * spec.nranges
        for slot, m in zip(spec.keys, match):
            full = (1 << slot.width) - 1
            mt = slot.match_type
            if mt in ("exact", "valid"):
                value |= m << slot.shift
                mask |= full << slot.shift
            elif mt == "lpm":
                v, p = m
                pm = full ^ ((1 << (slot.width - p)) - 1)
                value |= (v & pm) << slot.shift
                mask |= pm << slot.shift
                plen += p
            elif mt in ("ternary", "optional"):
                v, mm = m
                value |= (v & mm) << slot.shift
                mask |= mm << slot.shift
            elif mt == "range":
                rlo[slot.range_index], rhi[slot.range_index] = m
        return _u64s(_words(value, spec.kw)), _u64s(_words(mask, spec.kw)), _u64s(rlo), _u64s(rhi), plen

    def add(self, match: list[Any], action_id: int, data: list[int] | tuple[int, ...], priority: int,
            const: bool = False) -> int:
        handle = super().add(match, action_id, data, priority, const)
        value, mask, rlo, rhi, plen = self._key_words(tuple(match))
        aid = -1 if action_id is None else action_id
        ptr = self._sw._lib.rt_tbl_add(self._sw._c, self.spec.index, handle, value, mask, rlo, rhi,
                                       priority, plen, aid, self._args(action_id, data))
        if not ptr:
            Table.delete(self, handle)
            raise ResourceExhaustedError(f"table {self.info.name}: out of memory in the native table")
        self.c_entries[handle] = ptr
        return handle

    def modify(self, handle: int, action_id: int, data: list[int]) -> None:
        super().modify(handle, action_id, data)
        self._sw._lib.rt_tbl_modify(self._sw._c, self.spec.index, self.c_entries[handle], action_id,
                                    self._args(action_id, data))

    def delete(self, handle: int) -> None:
        super().delete(handle)
        self._sw._lib.rt_tbl_delete(self._sw._c, self.spec.index, self.c_entries.pop(handle))

    def clear(self) -> None:
        self.check_mutable()
        for handle in list(self.entries):
            self.delete(handle)

    def sync_default(self) -> None:
        d = self.default
        self._sw._lib.rt_tbl_set_default(self._sw._c, self.spec.index,
                                         -1 if d.action_id is None else d.action_id,
                                         self._args(d.action_id, d.data))

    def set_default(self, action_id: int, data: list[int]) -> None:
        super().set_default(action_id, data)
        self.sync_default()

    def reset_default(self) -> None:
        super().reset_default()
        self.sync_default()

    def counter(self, handle: int, write: tuple[int, int] | None = None) -> tuple[int, int]:
        ptr = self.c_entries[handle]
        pk, by = ctypes.c_uint64(), ctypes.c_uint64()
        if write is not None:
            pk.value, by.value = write
        self._sw._lib.rt_tbl_counter(self._sw._c, ptr, int(write is not None), ctypes.byref(pk), ctypes.byref(by))
        return pk.value, by.value


class NativeSwitch(ControlAPI):
    """A v1model switch running one BMv2 JSON program compiled to C (see p4sim.engine docs)."""

    backend = "native"

    def __init__(self, bmv2_json: dict | str | bytes | os.PathLike, cpu_port: int | None = None,
                 drop_port: int = 511) -> None:
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        prog = build_program(load_json(bmv2_json))
        self._prog = prog
        gen = ProgramC(prog)               # NativeUnsupported: the caller falls back
        self._gen = gen
        _path, lib = toolchain.runtime()
        binding.declare(lib, binding.SIGNATURES)
        if lib.rt_abi() != 3:
            raise NativeBuildError("native runtime ABI mismatch")
        plib = binding.declare(toolchain.build_program(gen.source), binding.PROGRAM_SIGNATURES)
        self._lib, self._plib = lib, plib
        state = plib.p4prog_state_size()
        self._c = lib.rt_switch_new(drop_port & 0x1FF, ARENA_FIXED + (2 * 64 + 4) * state)
        if not self._c:
            raise NativeBuildError("out of memory creating the native switch")
        lib.rt_set_batch(self._c, ctypes.cast(plib.p4prog_batch, ctypes.c_void_p))
        self.lock = NativeLock(lib, self._c)
        self._params = gen.pipelines.params
        self._tables = {}
        for name, info in prog.tables.items():
            spec = gen.pipelines.specs[name]
            if lib.rt_add_table(self._c, spec.kind, spec.kw, spec.nranges, spec.argw, info.max_size) != spec.index:
                raise NativeBuildError(f"table {name}: could not be created")
            t = NativeTable(info, prog, self, spec)
            t.sync_default()
            self._tables[name] = t
        self._tables_by_id = {t.info.id: t for t in self._tables.values()}
        for name, reg in prog.registers.items():
            if lib.rt_add_register(self._c, reg.size, reg.width) != gen.registers[name]:
                raise NativeBuildError(f"register {name}: could not be created")
        for name, index in gen.counters.items():
            if lib.rt_add_counter(self._c, prog.counters[name].size) != index:
                raise NativeBuildError(f"counter {name}: could not be created")
        for name, index in gen.meters.items():
            m = prog.meters[name]
            if lib.rt_add_meter(self._c, m.size, int(m.type != "packets")) != index:
                raise NativeBuildError(f"meter {name}: could not be created")
        for name, index in gen.vsets.items():
            if lib.rt_add_vset(self._c) != index:
                raise NativeBuildError(f"parse value set {name}: could not be created")
        self._registers = {}  # cells live in C (see register_read)
        self._counters = {}
        self._mc_groups = {}
        self._clone_sessions = {}
        self._vsets = {name: [] for name in prog.parse_vsets}
        self._meters = {m.name: MeterArray(m) for m in prog.meters.values() if not m.direct}
        self._trace: Callable[[str], Any] | None = None
        self._last_loop_log = -LOG_INTERVAL
        self._unlogged_loops = 0
        self._local = threading.local()
        self._outbufs: list[Any] = []     # every thread's output buffer (a ctypes pointer), freed with the switch
        self._free = lib.rt_switch_free
        self._free_outbuf = lib.rt_outbuf_free
        self._install_const_entries()

    def __del__(self):
        c = getattr(self, "_c", None)
        if c:
            self._c = None
            self._free(c)
            for ob in self._outbufs:
                self._free_outbuf(ob)

    # ---- description -----------------------------------------------------------------------
    @property
    def c_source(self) -> str:
        """The generated C (for debugging)."""
        return self._gen.source

    @property
    def stats(self) -> dict[str, int]:
        out = (ctypes.c_uint64 * len(binding.STAT_NAMES))()
        self._lib.rt_stats(self._c, out)
        return dict(zip(binding.STAT_NAMES, out))

    @property
    def last_internal_error(self) -> NativeInternalError | None:
        if not self.stats["internal_errors"]:
            return None
        buf = ctypes.create_string_buffer(256)
        self._lib.rt_last_error(self._c, buf, len(buf))
        return NativeInternalError(buf.value.decode("utf-8", "replace"))

    def set_determinism(self, frozen_us: float | None = None, fixed_random: bool = False) -> None:
        """Tests: freeze the packet clock at `frozen_us` and make random() return its lower bound."""
        self._lib.rt_set_determinism(self._c, -1 if frozen_us is None else int(frozen_us), int(fixed_random))

    # ---- trace -------------------------------------------------------------------------------
    def _use_trace(self, fn: Callable[[str], Any] | None) -> None:
        self._lib.rt_trace_enable(self._c, int(fn is not None))

    def _drain_trace(self) -> None:
        fn = self._trace
        n = self._lib.rt_trace_pending(self._c)
        if not n:
            return
        buf = ctypes.create_string_buffer(n)
        got = self._lib.rt_trace_take(self._c, buf, n)
        if fn is None:
            return
        for line in buf.raw[:got].decode("utf-8", "replace").splitlines():
            fn(line)

    # ---- packets -------------------------------------------------------------------------------
    def _outbuf(self) -> Any:
        ob = getattr(self._local, "ob", None)
        if ob is None:
            ob = self._lib.rt_outbuf_new()
            if not ob:
                raise MemoryError("native switch: cannot allocate an output buffer")
            self._local.ob = ob
            self._outbufs.append(ob)
        return ob

    def _sync_meter_clock(self) -> None:
        """Tests replace a meter's clock (MeterArray.clock): packets then see that time."""
        for m in self._meters.values():
            if m.clock is not time.monotonic:
                self._lib.rt_set_meter_clock(self._c, float(m.clock()))
                return

    def _run(self, frames: Any, lens: Any, ports: Any, n: int) -> Any:
        """frames: n frame addresses (the caller keeps the bytes alive during the call)."""
        if self._meters:
            self._sync_meter_clock()
        ob = self._outbuf()
        self._lib.rt_outbuf_reset(ob)
        self._lib.rt_process(self._c, frames, lens, ports, n, ob)
        b = ob.contents
        if b.events:
            self._report_events(b)
        if self._trace is not None or self._lib.rt_trace_pending(self._c):
            self._drain_trace()
        return b

    def _report_events(self, b: Any) -> None:
        """A log line (as the Python engine words it, at most every LOG_INTERVAL s) for packets a
        loop bound ended; the counts are in `stats`."""
        if b.ev_kind == EV_PARSER_LOOP:
            message = (f"packet from port {b.ev_port} dropped: parser visited {b.ev_value} states without "
                       f"ending (a loop in the parse graph)")
        elif b.ev_kind == EV_PASS_LIMIT:
            message = (f"packet from port {b.ev_port} dropped after {MAX_PASSES} resubmit/recirculate/clone "
                       f"passes ({b.ev_value} copies left)")
        else:
            message = f"packet from port {b.ev_port} dropped: an action loop did not end"
        now = time.monotonic()
        unlogged = b.events - 1
        if now - self._last_loop_log < LOG_INTERVAL:
            self._unlogged_loops += b.events
            return
        more = self._unlogged_loops + unlogged
        log.warning("%s%s", message, f" ({more} more since the last report)" if more else "")
        self._last_loop_log, self._unlogged_loops = now, 0

    def process(self, ingress_port: int, frame: bytes | bytearray | memoryview) -> list[tuple[int, bytes]]:
        """Run one received frame through the switch; -> list of (egress_port, bytes) emitted."""
        check_ingress_port("process", ingress_port)
        check_frame("process", frame)
        data = bytes(frame)
        b = self._run((ctypes.c_void_p * 1)(_address(data)), (ctypes.c_uint32 * 1)(len(data)),
                      (ctypes.c_uint16 * 1)(ingress_port & 0xFFFF), 1)
        base = ctypes.addressof(b.data.contents) if b.nrec else 0
        return [(r.port, ctypes.string_at(base + r.off, r.len)) for r in b.recs[:b.nrec]]

    def process_batch(self, packets: Iterable[tuple[int, Frame]]) -> list[list[tuple[int, bytes]]]:
        """Many frames in one call: [(ingress_port, bytes), ...] -> one output list per frame."""
        packets = list(packets)
        n = len(packets)
        if not n:
            return []
        for port, _frame in packets:
            check_ingress_port("process_batch", port)
        data = b"".join(bytes(f) for _, f in packets)
        frames, lens, ports = _batch_arrays(_address(data), packets)
        b = self._run(frames, lens, ports, n)
        out: list[list[tuple[int, bytes]]] = [[] for _ in range(n)]
        base = ctypes.addressof(b.data.contents) if b.nrec else 0
        for r in b.recs[:b.nrec]:
            out[r.input].append((r.port, ctypes.string_at(base + r.off, r.len)))
        return out

    def batch_runner(self, packets: Iterable[tuple[int, Frame]]) -> BatchRunner:
        """A preloaded batch for benchmarks: run() pushes every frame once through the switch
        (one call into C) and returns the number of frames emitted."""
        return BatchRunner(self, list(packets))

    # ---- tables ------------------------------------------------------------------------------
    def _snapshot(self, t, e):
        snap = ControlAPI._snapshot(self, t, e)
        if e.handle is not None and t.info.direct_counter and e.handle in t.c_entries:
            pk, by = t.counter(e.handle)
            snap = TableEntry(snap.handle, snap.match, snap.action, snap.action_id, snap.params, snap.priority,
                              snap.is_const, pk, by)
        return snap

    def _direct_counter(self, t, handle, write=None):
        """Direct counters live in the C entry (ControlAPI checks table and handle)."""
        return t.counter(handle, None if write is None else (write[0] & U64, write[1] & U64))

    # ---- registers -----------------------------------------------------------------------------
    def _register_cells(self, name):
        return self._gen.registers[name]   # cells live in C: the register's index there

    def register_read(self, name: str, index: int | None = None) -> Any:
        """Cell value (unsigned bit pattern); index None -> list of all cells (read in chunks,
        each consistent per cell; packets keep flowing between chunks)."""
        info, _ = self._register(name)
        if index is not None:
            self._index("register", name, index, info.size)
            return self.register_read_range(name, index, 1)[0]
        return self.register_read_range(name, 0, info.size)

    def register_read_range(self, name: str, start: int, count: int) -> list[int]:
        """Cells [start, start+count) as a list of ints (chunked like register_read)."""
        info, reg = self._register(name)
        words = (info.width + 63) // 64 if info.width > 64 else 1
        out = []
        pos, end = start, min(info.size, start + count)
        while pos < end:
            n = min(READ_CHUNK, end - pos)
            buf = array.array("Q", bytes(8 * n * words))
            addr, _ = buf.buffer_info()
            got = self._lib.rt_reg_read(self._c, reg, pos, n, addr)
            if words == 1:
                out += buf[:got].tolist()
            else:
                cells = buf.tolist()
                for i in range(got):
                    out.append(sum(w << (64 * j) for j, w in enumerate(cells[i * words:(i + 1) * words])))
            pos += n
        return out

    def register_write(self, name: str, index: int | None, value: Value) -> None:
        """Write one cell (index None: every cell)."""
        with self.lock:
            info, reg = self._register(name)
            v = parse_value(value, info.width, f"register {name}, value")
            words = _u64s(_words(v, max(1, (info.width + 63) // 64)))
            if index is None:
                self._lib.rt_reg_fill(self._c, reg, words)
            else:
                self._lib.rt_reg_write(self._c, reg, self._index("register", name, index, info.size), words)

    def register_reset(self, name: str) -> None:
        self.register_write(name, None, 0)

    # ---- counters ------------------------------------------------------------------------------
    def _counter_cells(self, name):
        return self._gen.counters[name]    # cells live in C: the counter's index there

    def counter_read(self, name: str, index: int | None = None) -> Any:
        """-> (packets, bytes); index None -> list of (packets, bytes), read in chunks."""
        info, c = self._counter(name)
        if index is not None:
            start, end = self._index("counter", name, index, info.size), index + 1
        else:
            start, end = 0, info.size
        out: list[tuple[int, int]] = []
        pos = start
        while pos < end:
            n = min(READ_CHUNK, end - pos)
            pk, by = array.array("Q", bytes(8 * n)), array.array("Q", bytes(8 * n))
            got = self._lib.rt_ctr_read(self._c, c, pos, n, pk.buffer_info()[0], by.buffer_info()[0])
            out += zip(pk[:got].tolist(), by[:got].tolist())
            pos += n
        return out[0] if index is not None else out

    def counter_write(self, name: str, index: int | None, packets: int, bytes_: int) -> None:
        with self.lock:
            info, c = self._counter(name)
            i = -1 if index is None else self._index("counter", name, index, info.size)
            self._lib.rt_ctr_write(self._c, c, i, int(packets) & U64, int(bytes_) & U64)

    # ---- meters, value sets, replication (Python bookkeeping + the C mirror) ----------------
    def meter_set(self, name: str, index: int | None, cir: float, cburst: float, pir: float,
                  pburst: float) -> None:
        with self.lock:
            super().meter_set(name, index, cir, cburst, pir, pburst)
            self._sync_meter_clock()
            self._lib.rt_meter_set(self._c, self._gen.meters[name], -1 if index is None else index, 1,
                                   float(cir), float(cburst), float(pir), float(pburst))

    def meter_reset(self, name: str, index: int | None = None) -> None:
        with self.lock:
            super().meter_reset(name, index)
            self._lib.rt_meter_set(self._c, self._gen.meters[name], -1 if index is None else index, 0,
                                   0.0, 0.0, 0.0, 0.0)

    def parse_vset_set(self, name: str, members: Iterable[Any]) -> None:
        with self.lock:
            super().parse_vset_set(name, members)
            vals = self._vsets[name]
            if self._prog.parse_vsets[name] > 64:
                raise EngineError(f"parse value set {name}: wider than 64 bits")
            self._lib.rt_vset_set(self._c, self._gen.vsets[name], len(vals), _u64s([v for v, _ in vals]),
                                  _u64s([m for _, m in vals]))

    @staticmethod
    def _pairs(replicas: list[tuple[int, int]]) -> tuple[int, U16Array, U16Array]:
        n = len(replicas)
        ports = (ctypes.c_uint16 * max(1, n))(*[p for p, _ in replicas])
        rids = (ctypes.c_uint16 * max(1, n))(*[r for _, r in replicas])
        return n, ports, rids

    def mc_group_set(self, group: int, replicas: Iterable[tuple[int, int]]) -> None:
        with self.lock:
            super().mc_group_set(group, replicas)
            n, ports, rids = self._pairs(self._mc_groups[group])
            if self._lib.rt_mc_set(self._c, group, n, ports, rids):
                raise ResourceExhaustedError(f"multicast group {group}: out of memory")

    def mc_group_delete(self, group: int) -> None:
        with self.lock:
            super().mc_group_delete(group)
            self._lib.rt_mc_delete(self._c, group)

    def clone_session_set(self, session: int, replicas: Iterable[tuple[int, int]],
                          packet_length_bytes: int = 0) -> None:
        with self.lock:
            super().clone_session_set(session, replicas, packet_length_bytes)
            reps, plen = self._clone_sessions[session]
            n, ports, rids = self._pairs(reps)
            if self._lib.rt_clone_set(self._c, session, n, ports, rids, min(plen, 0xFFFFFFFE)):
                raise ResourceExhaustedError(f"clone session {session}: out of memory")

    def clone_session_delete(self, session: int) -> None:
        with self.lock:
            super().clone_session_delete(session)
            self._lib.rt_clone_delete(self._c, session)


def _address(data: bytes) -> int:
    """Address of the bytes of `data` (valid while `data` is alive; C only reads it)."""
    return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0


def _batch_arrays(base: int, packets: list[tuple[int, Frame]]
                  ) -> tuple[ctypes.Array[ctypes.c_void_p], ctypes.Array[ctypes.c_uint32], U16Array]:
    """(frame addresses, lengths, ports) of frames laid end to end from address `base`."""
    n = len(packets)
    frames, lens, ports = (ctypes.c_void_p * n)(), (ctypes.c_uint32 * n)(), (ctypes.c_uint16 * n)()
    pos = 0
    for i, (port, frame) in enumerate(packets):
        frames[i], lens[i], ports[i] = base + pos, len(frame), port & 0xFFFF
        pos += len(frame)
    return frames, lens, ports


class BatchRunner:
    """Frames loaded once into C-visible buffers; run() processes all of them in one call."""

    def __init__(self, switch: NativeSwitch, packets: list[tuple[int, Frame]]) -> None:
        self.switch = switch
        self.n = len(packets)
        blob = b"".join(bytes(f) for _, f in packets)
        self.data = ctypes.create_string_buffer(blob, max(1, len(blob)))
        self.frames, self.lens, self.ports = _batch_arrays(ctypes.addressof(self.data), packets)
        self.ob = switch._lib.rt_outbuf_new()

    def run(self) -> int:
        """-> frames emitted by this batch (outputs stay in the runner's buffer until the next run)."""
        sw = self.switch
        sw._lib.rt_outbuf_reset(self.ob)
        sw._lib.rt_process(sw._c, self.frames, self.lens, self.ports, self.n, self.ob)
        return self.ob.contents.nrec

    def outputs(self) -> list[tuple[int, int, bytes]]:
        """[(input index, egress port, bytes)] of the last run."""
        b = self.ob.contents
        base = ctypes.addressof(b.data.contents) if b.nrec else 0
        return [(r.input, r.port, ctypes.string_at(base + r.off, r.len)) for r in b.recs[:b.nrec]]

    def __del__(self):
        ob = getattr(self, "ob", None)
        if ob:
            self.switch._lib.rt_outbuf_free(ob)
            self.ob = None
