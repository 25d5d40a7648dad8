"""The v1model switch: traffic manager, packet replication engine and the in-process control API.

Packet path (as simple_switch): parse -> verify checksums -> ingress -> [I2E clone, resubmit,
multicast or unicast, drop on drop_port] -> egress -> [E2E clone, drop on drop_port] -> update
checksums -> deparse -> [recirculate] -> emit.  BMv2 never drops on a parser or checksum error by
itself; neither do we.
"""
import threading
import time
from collections import deque

from .codegen import AssertFail, CodeGen
from .errors import EngineError, NotFoundError, ProgramError
from .program import build_program, load_json, parse_hexstr
from .tables import Entry, Table, TableEntry
from .values import parse_match, parse_value

NORMAL, INGRESS_CLONE, EGRESS_CLONE, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 4, 5, 6
MAX_PASSES = 64  # resubmit/recirculate/clone passes per received packet (loop guard)


class Switch:
    """A v1model software switch running one BMv2 JSON program (see p4sim.engine docs)."""

    def __init__(self, bmv2_json, cpu_port=None, drop_port=511):
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
        self._trace = None
        self._pkt_id = 0
        self._t0 = time.monotonic()
        self.stats = {"received": 0, "emitted": 0, "dropped": 0, "internal_errors": 0}
        self.last_internal_error = None
        self._plain = CodeGen(prog, self._tables, self._registers, self._counters, drop_port).build()
        self._traced = None
        self._code = self._plain
        for t in self._tables.values():
            t.bind(self._code)
        self._install_const_entries()
        self._layout()

    # ---- layout helpers ------------------------------------------------------------------------
    def _layout(self):
        prog = self._prog
        sm = lambda n: prog.fields[("standard_metadata", n)].slot  # noqa: E731
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
        self._field_lists = {}
        for fl_id, elems in prog.field_lists.items():
            self._field_lists[fl_id] = [prog.fields[e].slot for e in elems if e in prog.fields]

    def _install_const_entries(self):
        for t in self._tables.values():
            entries = t.info.const_entries
            if not entries:
                continue
            prios = [e.get("priority", 0) for e in entries]
            top = max(prios) if prios else 0
            for raw in entries:
                match = []
                for k, mk in zip(t.info.keys, raw["match_key"]):
                    mt = mk.get("match_type", k.match_type)
                    if mt in ("exact",):
                        match.append(_hx(mk["key"]))
                    elif mt == "valid":
                        match.append(1 if mk["key"] else 0)
                    elif mt == "lpm":
                        match.append((_hx(mk["key"]), int(mk["prefix_length"])))
                    elif mt in ("ternary", "optional"):
                        match.append((_hx(mk["key"]), _hx(mk["mask"])))
                    elif mt == "range":
                        match.append((_hx(mk["start"]), _hx(mk["end"])))
                    else:
                        raise ProgramError(f"table {t.info.name}: const entry match type {mt!r} unsupported")
                ae = raw["action_entry"]
                prio = (top + 1 - raw["priority"]) if "priority" in raw and t.info.needs_priority else 0
                t.add(match, ae["action_id"], [_hx(a) for a in ae.get("action_data", [])], prio, const=True)

    # ---- read-only description ---------------------------------------------------------------
    @property
    def program(self):
        """The loaded program's description (p4sim.engine.program.Program): do not modify."""
        return self._prog

    # ---- trace -------------------------------------------------------------------------------
    @property
    def trace(self):
        return self._trace

    @trace.setter
    def trace(self, fn):
        with self.lock:
            if fn is not None and not callable(fn):
                raise EngineError("trace: expected a callable taking one line, or None")
            self._trace = fn
            if fn is None:
                code = self._plain
            else:
                if self._traced is None:
                    self._traced = CodeGen(self._prog, self._tables, self._registers, self._counters,
                                           self.drop_port, traced=True, trace_fn=self._tr).build()
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
    def process(self, ingress_port, frame):
        """Run one received frame through the switch; -> list of (egress_port, bytes) emitted."""
        with self.lock:
            self._pkt_id += 1
            self.stats["received"] += 1
            out = []
            try:
                self._run(int(ingress_port), bytes(frame), out)
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
                if tr:
                    self._tr(f"Too many resubmit/recirculate/clone passes (> {MAX_PASSES}), rest dropped")
                self.stats["dropped"] += len(work)
                return
            job = work.popleft()
            if job[0]:
                self._ingress(job[1], job[2], job[3], job[4], work, tr)
            else:
                self._egress(job[1], job[2], work, out, tr)

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
        f[s["ingress_global_timestamp"]] = int((time.monotonic() - self._t0) * 1e6) & ((1 << 48) - 1)
        if tr:
            self._tr(f"Processing packet received on port {port} ({len(data)} bytes, instance_type {itype})")
        off = code.parse(f, data)
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
            session = self._clone_sessions.get(f[h["clone_session"]])
            if session is None:
                if tr:
                    self._tr(f"Clone session {f[h['clone_session']]} does not exist: no clone")
            else:
                replicas, plen = session
                for eport, rid in replicas:
                    g = self._fresh[:]
                    self._preserve(g, f, f[h["clone_field_list"]])
                    g[s["instance_type"]] = INGRESS_CLONE
                    g[s["packet_length"]] = len(data)
                    g[s["egress_port"]] = eport
                    g[s["egress_rid"]] = rid
                    if plen:
                        g[h["truncate"]] = plen
                    if tr:
                        self._tr(f"Cloning packet at ingress to port {eport} (session {f[h['clone_session']]})")
                    work.append((False, g, data))
        if f[h["resubmit"]]:
            if tr:
                self._tr("Resubmitting packet")
            work.append((True, port, data, RESUBMIT, (f, f[h["resubmit_field_list"]])))
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
        if tr:
            self._tr(f"Egress port is {espec}")
        work.append((False, f, payload))

    def _egress(self, f, payload, work, out, tr):
        s, h, code = self._s, self._prog.hidden, self._code
        f[h["exit"]] = 0
        f[h["clone_pending"]] = 0
        f[h["resubmit"]] = 0
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
            session = self._clone_sessions.get(f[h["clone_session"]])
            if session is None:
                if tr:
                    self._tr(f"Clone session {f[h['clone_session']]} does not exist: no clone")
            else:
                replicas, plen = session
                for eport, rid in replicas:
                    g = self._fresh[:]
                    for a, b in self._header_slices:
                        g[a:b] = f[a:b]
                    self._preserve(g, f, f[h["clone_field_list"]])
                    g[s["instance_type"]] = EGRESS_CLONE
                    g[s["packet_length"]] = f[s["packet_length"]]
                    g[s["egress_port"]] = eport
                    g[s["egress_rid"]] = rid
                    if plen:
                        g[h["truncate"]] = plen
                    if tr:
                        self._tr(f"Cloning packet at egress to port {eport} (session {f[h['clone_session']]})")
                    work.append((False, g, payload))
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

    # ---- name resolution -----------------------------------------------------------------------
    def _table(self, table):
        if isinstance(table, int):
            t = self._tables_by_id.get(table)
        else:
            t = self._tables.get(table)
        if t is None:
            raise NotFoundError(f"table {table!r} does not exist (tables: {', '.join(sorted(self._tables))})")
        return t

    def _action(self, t, action):
        prog = self._prog
        if isinstance(action, int):
            if action not in t.info.action_ids:
                raise EngineError(f"table {t.info.name}: action id {action} is not one of its actions")
            return prog.actions[action]
        for aid in t.info.action_ids:
            if prog.actions[aid].name == action:
                return prog.actions[aid]
        for aid in t.info.action_ids:  # P4Info drops p4c's "_N" suffix on duplicated names
            name = prog.actions[aid].name
            if name.rsplit("_", 1)[0] == action and name.rsplit("_", 1)[-1].isdigit():
                return prog.actions[aid]
        raise EngineError(f"table {t.info.name}: action {action!r} is not one of its actions "
                          f"({', '.join(t.info.actions)})")

    def _args(self, t, a, params):
        params = {} if params is None else params
        if isinstance(params, dict):
            names = {p.name for p in a.params}
            extra = set(params) - names
            if extra:
                raise EngineError(f"table {t.info.name}, action {a.name}: unknown parameter(s) "
                                  f"{', '.join(sorted(extra))}")
            missing = [p.name for p in a.params if p.name not in params]
            if missing:
                raise EngineError(f"table {t.info.name}, action {a.name}: missing parameter(s) "
                                  f"{', '.join(missing)}")
            values = [params[p.name] for p in a.params]
        else:
            values = list(params)
            if len(values) != len(a.params):
                raise EngineError(f"table {t.info.name}, action {a.name}: expected {len(a.params)} "
                                  f"parameters, got {len(values)}")
        return [parse_value(v, p.width, f"table {t.info.name}, action {a.name}, parameter {p.name}")
                for v, p in zip(values, a.params)]

    def _match(self, t, match):
        keys = t.info.keys
        match = {} if match is None else match
        if isinstance(match, dict):
            names = {k.name for k in keys}
            extra = set(match) - names
            if extra:
                raise EngineError(f"table {t.info.name}: unknown key field(s) {', '.join(sorted(extra))} "
                                  f"(keys: {', '.join(k.name for k in keys)})")
            values = []
            for k in keys:
                if k.name in match:
                    values.append(match[k.name])
                elif k.match_type in ("exact", "valid"):
                    raise EngineError(f"table {t.info.name}: missing exact key field {k.name}")
                elif k.match_type == "lpm":
                    values.append((0, 0))
                elif k.match_type == "range":
                    values.append((0, (1 << k.width) - 1))
                else:
                    values.append(None)
        else:
            values = list(match)
            if len(values) != len(keys):
                raise EngineError(f"table {t.info.name}: expected {len(keys)} key fields, got {len(values)}")
        return [parse_match(v, k.match_type, k.width, f"table {t.info.name}, key field {k.name}")
                for v, k in zip(values, keys)]

    def _priority(self, t, priority):
        if not t.info.needs_priority:
            return 0
        if priority is None:
            raise EngineError(f"table {t.info.name}: has ternary/range/optional keys, give a priority "
                              f"(a larger number wins)")
        if not isinstance(priority, int) or priority < 0:
            raise EngineError(f"table {t.info.name}: priority must be a non-negative int, got {priority!r}")
        return priority

    # ---- tables --------------------------------------------------------------------------------
    def table_add(self, table, match, action, params=None, priority=None):
        """Install an entry; -> its handle.  See module docs for value formats."""
        with self.lock:
            t = self._table(table)
            a = self._action(t, action)
            return t.add(self._match(t, match), a.id, self._args(t, a, params), self._priority(t, priority))

    def table_modify(self, table, handle, action, params=None):
        with self.lock:
            t = self._table(table)
            a = self._action(t, action)
            t.modify(handle, a.id, self._args(t, a, params))

    def table_delete(self, table, handle):
        with self.lock:
            self._table(table).delete(handle)

    def table_clear(self, table):
        """Delete every (non-const) entry of the table."""
        with self.lock:
            self._table(table).clear()

    def table_find(self, table, match, priority=None):
        """Handle of the entry with exactly this match key (and priority), or None."""
        with self.lock:
            t = self._table(table)
            probe = Entry(-1, tuple(self._match(t, match)), None, (), self._priority(t, priority)
                          if t.info.needs_priority and priority is not None else 0)
            t._key(probe)
            ident = t._identity(probe)
            for e in t.entries.values():
                if t._identity(e) == ident:
                    return e.handle
            return None

    def table_set_default(self, table, action, params=None):
        with self.lock:
            t = self._table(table)
            a = self._action(t, action)
            t.set_default(a.id, self._args(t, a, params))

    def table_reset_default(self, table):
        with self.lock:
            self._table(table).reset_default()

    def _snapshot(self, t, e):
        a = self._prog.actions[e.action_id] if e.action_id is not None else None
        c = e.counter or (0, 0)
        return TableEntry(
            e.handle, {k.name: m for k, m in zip(t.info.keys, e.match or ())},
            a.name if a else "", e.action_id if a else -1,
            {p.name: v for p, v in zip(a.params, e.data)} if a else {},
            e.priority, e.const, c[0], c[1])

    def table_entries(self, table):
        """-> list of TableEntry (handle, match, action, action_id, params, priority, ...)."""
        with self.lock:
            t = self._table(table)
            return [self._snapshot(t, e) for e in sorted(t.entries.values(), key=lambda e: e.handle)]

    def table_get(self, table, handle):
        with self.lock:
            t = self._table(table)
            return self._snapshot(t, t.get(handle))

    def table_get_default(self, table):
        with self.lock:
            t = self._table(table)
            return self._snapshot(t, t.default)

    # ---- registers -----------------------------------------------------------------------------
    def _register(self, name):
        info = self._prog.registers.get(name)
        if info is None:
            raise NotFoundError(f"register {name!r} does not exist (registers: "
                                f"{', '.join(sorted(self._prog.registers))})")
        return info, self._registers[name]

    @staticmethod
    def _index(kind, name, index, size):
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < size:
            raise EngineError(f"{kind} {name}: index {index!r} out of range 0..{size - 1}")
        return index

    def register_read(self, name, index=None):
        """Cell value (unsigned bit pattern); index None -> list of all cells."""
        with self.lock:
            info, cells = self._register(name)
            if index is None:
                return list(cells)
            return cells[self._index("register", name, index, info.size)]

    def register_write(self, name, index, value):
        """Write one cell (index None: every cell)."""
        with self.lock:
            info, cells = self._register(name)
            v = parse_value(value, info.width, f"register {name}, value")
            if index is None:
                cells[:] = [v] * info.size
            else:
                cells[self._index("register", name, index, info.size)] = v

    def register_reset(self, name):
        self.register_write(name, None, 0)

    # ---- counters ------------------------------------------------------------------------------
    def _counter(self, name):
        info = self._prog.counters.get(name)
        if info is None:
            raise NotFoundError(f"counter {name!r} does not exist (counters: "
                                f"{', '.join(sorted(self._prog.counters))})")
        if info.direct:
            raise EngineError(f"counter {name} is a direct counter of table {info.binding}: "
                              f"use direct_counter_read")
        return info, self._counters[name]

    def counter_read(self, name, index=None):
        """-> (packets, bytes); index None -> list of (packets, bytes)."""
        with self.lock:
            info, (pk, by) = self._counter(name)
            if index is None:
                return list(zip(pk, by))
            i = self._index("counter", name, index, info.size)
            return (pk[i], by[i])

    def counter_write(self, name, index, packets, bytes_):
        with self.lock:
            info, (pk, by) = self._counter(name)
            idx = range(info.size) if index is None else [self._index("counter", name, index, info.size)]
            for i in idx:
                pk[i], by[i] = int(packets), int(bytes_)

    def counter_reset(self, name):
        self.counter_write(name, None, 0, 0)

    def direct_counter_read(self, table, handle):
        with self.lock:
            t = self._table(table)
            if not t.info.direct_counter:
                raise EngineError(f"table {t.info.name} has no direct counter")
            c = t.get(handle).counter
            return (c[0], c[1])

    def direct_counter_write(self, table, handle, packets, bytes_):
        with self.lock:
            t = self._table(table)
            if not t.info.direct_counter:
                raise EngineError(f"table {t.info.name} has no direct counter")
            c = t.get(handle).counter
            c[0], c[1] = int(packets), int(bytes_)

    # ---- packet replication engine ---------------------------------------------------------------
    @staticmethod
    def _replicas(kind, ident, replicas):
        out = []
        for r in replicas:
            try:
                port, rid = r
                port, rid = int(port), int(rid)
            except (TypeError, ValueError):
                raise EngineError(f"{kind} {ident}: replica {r!r} is not (port, rid)") from None
            if not 0 <= port < 512 or not 0 <= rid < 65536:
                raise EngineError(f"{kind} {ident}: replica ({port}, {rid}) out of range "
                                  f"(port 0..511, rid 0..65535)")
            out.append((port, rid))
        return out

    def mc_group_set(self, group, replicas):
        """Create or replace multicast group `group` with [(port, rid), ...] in order."""
        with self.lock:
            if not isinstance(group, int) or not 0 < group < 65536:
                raise EngineError(f"multicast group {group!r}: id must be 1..65535")
            self._mc_groups[group] = self._replicas("multicast group", group, replicas)

    def mc_group_delete(self, group):
        with self.lock:
            if self._mc_groups.pop(group, None) is None:
                raise NotFoundError(f"multicast group {group!r} does not exist")

    def mc_group_get(self, group):
        with self.lock:
            if group not in self._mc_groups:
                raise NotFoundError(f"multicast group {group!r} does not exist")
            return list(self._mc_groups[group])

    def mc_groups(self):
        """-> {group: [(port, rid), ...]}."""
        with self.lock:
            return {g: list(r) for g, r in self._mc_groups.items()}

    def clone_session_set(self, session, replicas, packet_length_bytes=0):
        """Create or replace clone session `session`; clones are truncated to packet_length_bytes if > 0."""
        with self.lock:
            if not isinstance(session, int) or not 0 <= session < 65536:
                raise EngineError(f"clone session {session!r}: id must be 0..65535")
            if not isinstance(packet_length_bytes, int) or packet_length_bytes < 0:
                raise EngineError(f"clone session {session}: packet_length_bytes must be >= 0")
            self._clone_sessions[session] = (self._replicas("clone session", session, replicas),
                                             packet_length_bytes)

    def clone_session_delete(self, session):
        with self.lock:
            if self._clone_sessions.pop(session, None) is None:
                raise NotFoundError(f"clone session {session!r} does not exist")

    def clone_session_get(self, session):
        """-> ([(port, rid), ...], packet_length_bytes)."""
        with self.lock:
            if session not in self._clone_sessions:
                raise NotFoundError(f"clone session {session!r} does not exist")
            replicas, plen = self._clone_sessions[session]
            return list(replicas), plen

    def clone_sessions(self):
        with self.lock:
            return {s: (list(r), p) for s, (r, p) in self._clone_sessions.items()}


def _hx(text):
    return parse_hexstr(text)
