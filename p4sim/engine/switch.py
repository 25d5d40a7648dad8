"""The v1model switch: loading, the packet path (traffic manager, replication, clones) and tracing.

Packet path (as simple_switch): parse -> verify checksums -> ingress -> [I2E clone, resubmit,
multicast or unicast, drop on drop_port] -> egress -> [E2E clone, drop on drop_port] -> update
checksums -> deparse -> [recirculate] -> emit.  BMv2 never drops on a parser or checksum error by
itself; neither do we.

What each copy carries, as simple_switch makes them (targets/simple_switch/simple_switch.cpp):
- a received packet: metadata zero except ingress_port, packet_length, instance_type 0 and
  ingress_global_timestamp;
- a resubmitted packet: the packet as received, parsed again; metadata zero except the field list,
  instance_type 6 and packet_length (so ingress_port and the timestamp are 0);
- a recirculated packet: the deparsed packet, parsed again; metadata zero except the field list,
  instance_type 4 and packet_length;
- an I2E clone: the packet as received, parsed again (ingress changes are lost); metadata zero
  except the field list, instance_type 1, egress_port and egress_rid from the clone session;
- an E2E clone: the headers at the end of egress, metadata zero except the field list,
  instance_type 2, egress_port and egress_rid; made even when the original is dropped in egress;
- multicast replicas: a full copy, instance_type 5 and egress_rid per replica;
- unicast: instance_type is set back to 0 when the packet leaves ingress (after a resubmit or a
  recirculation too).
In egress, egress_spec starts as drop_port + 1 (so only a mark_to_drop in egress drops) and
egress_port is the port the packet was queued for.

Loops are bounded: a parser visiting more states than a terminating parse can, or a packet
resubmitted/recirculated/cloned more than MAX_PASSES times, is dropped, counted in
stats["dropped_parser_loop"] / stats["dropped_pass_limit"] and logged (rate-limited), and the switch
keeps serving.
"""
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from .codegen import AssertFail, CodeGen, Compiled, ParserLoopError
from .control import ControlAPI, check_frame, check_ingress_port
from .meters import MeterArray
from .program_loader import build_program, load_json
from .tables import Table

NORMAL, INGRESS_CLONE, EGRESS_CLONE, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 4, 5, 6
MAX_PASSES = 64  # resubmit/recirculate/clone passes per received packet (loop guard)
LOG_INTERVAL = 1.0  # seconds between two log lines about cut loops (the rest are counted)

log = logging.getLogger("p4sim.engine")


class Switch(ControlAPI):
    """A v1model software switch running one BMv2 JSON program (see p4sim.engine docs)."""

    backend = "python"
    native_fallback: str | None = None  # why the native backend gave this program up (engine.native.backend)

    def __init__(self, bmv2_json: dict | str | bytes | os.PathLike, cpu_port: int | None = None,
                 drop_port: int = 511) -> None:
        self.lock = threading.RLock()
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        data = load_json(bmv2_json)
        prog = build_program(data)
        self._prog = prog
        self._tables = {name: Table(info, prog) for name, info in prog.tables.items()}
        self._tables_by_id = {t.info.id: t for t in self._tables.values()}
        self._registers = {r.name: [0] * r.size for r in prog.registers.values()}
        self._counters = {c.name: ([0] * c.size, [0] * c.size) for c in prog.counters.values() if not c.direct}
        self._mc_groups = {}
        self._clone_sessions = {}
        self._trace: Callable[[str], Any] | None = None
        self._pkt_id = 0
        self._t0 = time.monotonic()
        self.stats = {"received": 0, "emitted": 0, "dropped": 0, "internal_errors": 0,
                      "dropped_parser_loop": 0, "dropped_pass_limit": 0}
        self._last_loop_log = -LOG_INTERVAL
        self._unlogged_loops = 0
        self.last_internal_error: Exception | None = None
        self._vsets: dict[str, list[tuple[int, int]]] = {name: [] for name in prog.parse_vsets}
        self._meters = {m.name: MeterArray(m) for m in prog.meters.values() if not m.direct}
        self._plain = CodeGen(prog, self._tables, self._registers, self._counters, drop_port,
                              vsets=self._vsets, meters=self._meters).build()
        self._traced: Compiled | None = None
        self._code = self._plain
        for t in self._tables.values():
            t.bind(self._code)
        self._install_const_entries()
        self._layout()

    # ---- layout helpers ------------------------------------------------------------------------
    def _layout(self):
        prog = self._prog
        def sm(n):
            return prog.fields[("standard_metadata", n)].slot
        self._s = {n: sm(n) for n in ("ingress_port", "egress_spec", "egress_port", "instance_type",
                                      "packet_length", "mcast_grp", "egress_rid", "parser_error",
                                      "checksum_error", "ingress_global_timestamp",
                                      "egress_global_timestamp")}
        fresh = [0] * prog.nslots
        header_slices = []
        for h in prog.headers.values():
            if h.metadata:
                fresh[h.vslot] = 1
            else:
                header_slices.append((h.vslot, h.vslot + 1 + len(h.fields)))
        for st in prog.stacks.values():
            header_slices.append((st.next_slot, st.next_slot + 1))
        self._fresh = fresh
        self._header_slices = header_slices
        sm_spec = prog.fields[("standard_metadata", "egress_spec")]
        self._egress_spec_start = (self.drop_port + 1) & sm_spec.mask
        self._field_lists = {}
        for fl_id, elems in prog.field_lists.items():
            self._field_lists[fl_id] = [prog.fields[e].slot for e in elems if e in prog.fields]

    # ---- trace -------------------------------------------------------------------------------
    def _use_trace(self, fn: Callable[[str], Any] | None) -> None:
        """The traced code is a second generated program, built the first time it is asked for."""
        if fn is None:
            code = self._plain
        else:
            if self._traced is None:
                self._traced = CodeGen(self._prog, self._tables, self._registers, self._counters,
                                       self.drop_port, traced=True, trace_fn=self._tr,
                                       vsets=self._vsets, meters=self._meters).build()
            code = self._traced
        if code is not self._code:
            self._code = code
            for t in self._tables.values():
                t.bind(code)

    def _tr(self, text):
        fn = self._trace
        if fn is not None:
            for line in str(text).split("\n"):
                fn(f"[{self._pkt_id}] {line}")

    # ---- packet processing ---------------------------------------------------------------------
    def process(self, ingress_port: int, frame: bytes | bytearray | memoryview) -> list[tuple[int, bytes]]:
        """Run one received frame through the switch; -> list of (egress_port, bytes) emitted."""
        check_ingress_port("process", ingress_port)
        check_frame("process", frame)
        with self.lock:
            self._pkt_id += 1
            self.stats["received"] += 1
            out: list[tuple[int, bytes]] = []
            try:
                self._run(ingress_port, bytes(frame), out)
            except Exception as exc:  # never let a packet take the switch down
                self.stats["internal_errors"] += 1
                self.last_internal_error = exc
                if self._trace:
                    self._tr(f"Internal error, packet dropped: {type(exc).__name__}: {exc}")
            self.stats["emitted"] += len(out)
            return out

    def _run(self, port, data, out):
        # jobs: (True, ingress_port, bytes, instance_type, preserved) or (False, state, payload)
        work = deque([(True, port, data, NORMAL, None)])
        passes = 0
        tr = self._trace is not None
        while work:
            passes += 1
            if passes > MAX_PASSES:
                self.stats["dropped"] += len(work)
                self.stats["dropped_pass_limit"] += 1
                self._loop_cut(f"packet from port {port} dropped after {MAX_PASSES} resubmit/recirculate/"
                               f"clone passes ({len(work)} copies left)", tr)
                return
            job = work.popleft()
            if job[0]:
                self._ingress(job[1], job[2], job[3], job[4], work, tr)
            else:
                self._egress(job[1], job[2], work, out, tr)

    def _loop_cut(self, message, tr):
        """One log line for a packet cut by a loop bound, at most every LOG_INTERVAL seconds."""
        if tr:
            self._tr(message)
        now = time.monotonic()
        if now - self._last_loop_log < LOG_INTERVAL:
            self._unlogged_loops += 1
            return
        more = f" ({self._unlogged_loops} more since the last report)" if self._unlogged_loops else ""
        log.warning("%s%s", message, more)
        self._last_loop_log, self._unlogged_loops = now, 0

    def _preserve(self, dst, src, fl_id):
        for slot in self._field_lists.get(fl_id, ()):
            dst[slot] = src[slot]

    def _ingress(self, port, data, itype, preserved, work, tr):
        s, h, code = self._s, self._prog.hidden, self._code
        f = self._fresh[:]
        if preserved is not None:
            self._preserve(f, *preserved)
        f[s["ingress_port"]] = port & 0x1FF
        f[s["instance_type"]] = itype
        f[s["packet_length"]] = len(data)
        if itype == NORMAL:  # resubmitted/recirculated copies start with zeroed metadata
            f[s["ingress_global_timestamp"]] = int((time.monotonic() - self._t0) * 1e6) & ((1 << 48) - 1)
        if tr:
            self._tr(f"Processing packet received on port {port} ({len(data)} bytes, instance_type {itype})")
        try:
            off = code.parse(f, data)
        except ParserLoopError as exc:
            self.stats["dropped"] += 1
            self.stats["dropped_parser_loop"] += 1
            self._loop_cut(f"packet from port {port} dropped: {exc}", tr)
            return
        payload = data[off:]
        code.verify_checksums(f, payload)
        try:
            code.ingress(f)
        except (AssertFail, IndexError) as exc:
            self.stats["dropped"] += 1
            if tr:
                self._tr(f"Dropping packet in ingress: {exc}")
            return
        f[h["exit"]] = 0
        if f[h["clone_pending"]]:
            f[h["clone_pending"]] = 0
            self._clone_i2e(f, port, data, work, tr)
        if f[h["resubmit"]]:
            if tr:
                self._tr("Resubmitting packet")
            work.append((True, 0, data, RESUBMIT, (f, f[h["resubmit_field_list"]])))
            return
        mgid = f[s["mcast_grp"]]
        if mgid:
            group = self._mc_groups.get(mgid)
            if not group:
                self.stats["dropped"] += 1
                if tr:
                    self._tr(f"Multicast group {mgid} does not exist or is empty: packet dropped")
                return
            if tr:
                self._tr(f"Multicast to group {mgid}: {len(group)} replicas")
            for eport, rid in group:
                g = f[:]
                g[s["egress_port"]] = eport
                g[s["egress_rid"]] = rid
                g[s["instance_type"]] = REPLICATION
                work.append((False, g, payload))
            return
        espec = f[s["egress_spec"]]
        if espec == self.drop_port:
            self.stats["dropped"] += 1
            if tr:
                self._tr(f"Dropping packet at the end of ingress (egress_spec is the drop port {espec})")
            return
        f[s["egress_port"]] = espec
        f[s["instance_type"]] = NORMAL
        if tr:
            self._tr(f"Egress port is {espec}")
        work.append((False, f, payload))

    def _clone_i2e(self, f, port, data, work, tr):
        """An I2E clone is the packet as received, parsed again: ingress changes are lost, and
        the metadata the parse wrote is zeroed again except the field list."""
        sid = f[self._prog.hidden["clone_session"]]
        if sid not in self._clone_sessions:
            if tr:
                self._tr(f"Clone session {sid} does not exist: no clone")
            return
        g = self._fresh[:]
        g[self._s["ingress_port"]] = port & 0x1FF
        try:
            off = self._code.parse(g, data)
        except ParserLoopError:  # parsed once already without looping; cannot happen
            return
        self._clone(f, "ingress", INGRESS_CLONE, g, len(data), data[off:], work, tr)

    def _clone(self, f, stage, instance_type, headers, packet_length, payload, work, tr):
        """Queue the copies of the clone session `f` asked for, with the header slots of
        `headers` (the re-parsed packet for I2E, the egress state for E2E), zeroed metadata
        and the preserved fields of `f`'s field list."""
        s, h = self._s, self._prog.hidden
        sid = f[h["clone_session"]]
        session = self._clone_sessions.get(sid)
        if session is None:
            if tr:
                self._tr(f"Clone session {sid} does not exist: no clone")
            return
        replicas, plen = session
        for eport, rid in replicas:
            g = self._fresh[:]
            for a, b in self._header_slices:
                g[a:b] = headers[a:b]
            self._preserve(g, f, f[h["clone_field_list"]])
            g[s["instance_type"]] = instance_type
            g[s["packet_length"]] = packet_length
            g[s["egress_port"]] = eport
            g[s["egress_rid"]] = rid
            if plen:
                g[h["truncate"]] = plen
            if tr:
                self._tr(f"Cloning packet at {stage} to port {eport} (session {sid})")
            work.append((False, g, payload))

    def _egress(self, f, payload, work, out, tr):
        s, h, code = self._s, self._prog.hidden, self._code
        f[h["exit"]] = 0
        f[h["clone_pending"]] = 0
        f[h["resubmit"]] = 0
        f[s["egress_spec"]] = self._egress_spec_start
        f[s["egress_global_timestamp"]] = int((time.monotonic() - self._t0) * 1e6) & ((1 << 48) - 1)
        if tr:
            self._tr(f"Egress: port {f[s['egress_port']]}, instance_type {f[s['instance_type']]}, "
                     f"egress_rid {f[s['egress_rid']]}")
        try:
            code.egress(f)
        except (AssertFail, IndexError) as exc:
            self.stats["dropped"] += 1
            if tr:
                self._tr(f"Dropping packet in egress: {exc}")
            return
        if f[h["clone_pending"]]:
            self._clone(f, "egress", EGRESS_CLONE, f, f[s["packet_length"]], payload, work, tr)
        if f[s["egress_spec"]] == self.drop_port:
            self.stats["dropped"] += 1
            if tr:
                self._tr("Dropping packet at the end of egress (egress_spec is the drop port)")
            return
        code.update_checksums(f, payload)
        pkt = code.deparse(f) + payload
        if f[h["recirculate"]]:
            if tr:
                self._tr(f"Recirculating packet ({len(pkt)} bytes)")
            work.append((True, 0, pkt, RECIRC, (f, f[h["recirculate_field_list"]])))
            return
        trunc = f[h["truncate"]]
        if trunc and trunc < len(pkt):
            pkt = pkt[:trunc]
        eport = f[s["egress_port"]]
        if tr:
            self._tr(f"Transmitting packet of size {len(pkt)} out of port {eport}")
        out.append((eport, pkt))
