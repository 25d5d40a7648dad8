"""The in-process control API of a Switch: tables, registers, counters, meters, value sets and the
packet replication engine (multicast groups, clone sessions).

Names are JSON names (or JSON ids for tables and actions); values are unsigned bit patterns or
p4runtime-shell strings (values.py).  Every method holds `self.lock`.
"""
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from .errors import EngineError, NotFoundError, ProgramError
from .meters import MeterArray
from .program import Program
from .program_loader import parse_hexstr
from .tables import Table, TableEntry
from .values import parse_match, parse_value

# what the API accepts: a table or action by JSON name or id; match values and parameters as
# ints, (value, mask/prefix/hi) tuples or p4runtime-shell strings (values.py)
CONST_PRIORITY_TOP = 2147483647  # P4Runtime priority of a const entry = this - its BMv2 priority

TableRef = str | int
ActionRef = str | int
Value = int | str
Match = Mapping[str, Any] | Sequence[Any] | None
Params = Mapping[str, Value] | Sequence[Value] | None


def check_ingress_port(where: str, port: Any) -> None:
    """process()'s (and process_batch()'s) check of an ingress port, in both engines."""
    if isinstance(port, bool) or not isinstance(port, int):
        raise EngineError(f"{where}: ingress_port must be an int, got {port!r}")


def check_frame(where: str, frame: Any) -> None:
    if not isinstance(frame, (bytes, bytearray, memoryview)):
        raise EngineError(f"{where}: frame must be bytes, got {type(frame).__name__}")


def check_trace(fn: Any) -> None:
    """The check of a value given to `Switch.trace`, in both engines."""
    if fn is not None and not callable(fn):
        raise EngineError("trace: expected a callable taking one line, or None")


class ControlAPI:
    """Mixed into Switch; relies on its _prog, _tables, _registers, _counters, _meters, _vsets,
    _mc_groups, _clone_sessions and lock.  The native switch is a ControlAPI too: it shares every
    lookup and error, and overrides where cells live (_register_cells, _counter_cells,
    _direct_counter) and the methods that read or write them in C."""

    lock: AbstractContextManager[Any]      # an RLock (the native switch: with the C switch's mutex)
    _prog: Program
    _tables: dict[str, Table]
    _tables_by_id: dict[int, Table]
    _registers: dict[str, list[int]]
    _counters: dict[str, tuple[list[int], list[int]]]
    _meters: dict[str, MeterArray]
    _vsets: dict[str, list[tuple[int, int]]]
    _mc_groups: dict[int, list[tuple[int, int]]]
    _clone_sessions: dict[int, tuple[list[tuple[int, int]], int]]
    _trace: Callable[[str], Any] | None

    # ---- trace (both engines; each says how it starts and stops tracing) ----------------------
    @property
    def trace(self) -> Callable[[str], Any] | None:
        """Called with one line per step of every packet's path, or None (no tracing)."""
        return self._trace

    @trace.setter
    def trace(self, fn: Callable[[str], Any] | None) -> None:
        with self.lock:
            check_trace(fn)
            self._trace = fn
            self._use_trace(fn)

    def _use_trace(self, fn: Callable[[str], Any] | None) -> None:
        """Start (fn) or stop (None) emitting trace lines; the lock is held."""
        raise NotImplementedError

    def _install_const_entries(self) -> None:
        """The program's const entries (both engines, when a switch is created)."""
        for t in self._tables.values():
            entries = t.info.const_entries
            if not entries:
                continue
            try:
                self._install_table_const_entries(t, entries)
            except ProgramError:
                raise
            except (KeyError, TypeError, ValueError, IndexError) as exc:  # incl. EngineError
                raise ProgramError(f"table {t.info.name}: malformed const entries "
                                   f"({type(exc).__name__}: {exc})") from None

    def _install_table_const_entries(self, t: Table, entries: Iterable[dict[str, Any]]) -> None:
        """BMv2 JSON priorities: a smaller number wins. Read back over P4Runtime, BMv2 shows entry
        priority p as 2147483647 - p (2147483646 for p4c's first entry), which is also the
        engine's larger-wins priority."""
        for raw in entries:
            match: list[Any] = []
            for k, mk in zip(t.info.keys, raw["match_key"]):
                mt = mk.get("match_type", k.match_type)
                if mt in ("exact",):
                    match.append(parse_hexstr(mk["key"]))
                elif mt == "valid":
                    match.append(1 if mk["key"] else 0)
                elif mt == "lpm":
                    match.append((parse_hexstr(mk["key"]), int(mk["prefix_length"])))
                elif mt in ("ternary", "optional"):
                    match.append((parse_hexstr(mk["key"]), parse_hexstr(mk["mask"])))
                elif mt == "range":
                    match.append((parse_hexstr(mk["start"]), parse_hexstr(mk["end"])))
                else:
                    raise ProgramError(f"table {t.info.name}: const entry match type {mt!r} unsupported")
            ae = raw["action_entry"]
            prio = (CONST_PRIORITY_TOP - int(raw["priority"])) if "priority" in raw and t.info.needs_priority else 0
            if len(raw["match_key"]) != len(t.info.keys):
                raise ProgramError(f"table {t.info.name}: const entry has {len(raw['match_key'])} key "
                                   f"fields, the table has {len(t.info.keys)}")
            if ae["action_id"] not in self._prog.actions:
                raise ProgramError(f"table {t.info.name}: const entry action id {ae['action_id']} "
                                   f"is not declared")
            t.add(match, ae["action_id"], [parse_hexstr(a) for a in ae.get("action_data", [])], prio, const=True)

    @property
    def program(self) -> Program:
        """The loaded program's description (p4sim.engine.program.Program): do not modify."""
        return self._prog

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
    def table_add(self, table: TableRef, match: Match, action: ActionRef, params: Params = None,
                  priority: int | None = None) -> int:
        """Install an entry; -> its handle.  See module docs for value formats."""
        with self.lock:
            t = self._table(table)
            a = self._action(t, action)
            return t.add(self._match(t, match), a.id, self._args(t, a, params), self._priority(t, priority))

    def table_modify(self, table: TableRef, handle: int, action: ActionRef, params: Params = None) -> None:
        with self.lock:
            t = self._table(table)
            a = self._action(t, action)
            t.modify(handle, a.id, self._args(t, a, params))

    def table_delete(self, table: TableRef, handle: int) -> None:
        with self.lock:
            self._table(table).delete(handle)

    def table_clear(self, table: TableRef) -> None:
        """Delete every (non-const) entry of the table."""
        with self.lock:
            self._table(table).clear()

    def table_find(self, table: TableRef, match: Match, priority: int | None = None) -> int | None:
        """Handle of the entry with exactly this match key (and priority), or None."""
        with self.lock:
            t = self._table(table)
            prio = self._priority(t, priority) if t.info.needs_priority and priority is not None else 0
            return t.find(self._match(t, match), prio)

    def table_set_default(self, table: TableRef, action: ActionRef, params: Params = None) -> None:
        with self.lock:
            t = self._table(table)
            a = self._action(t, action)
            t.set_default(a.id, self._args(t, a, params))

    def table_reset_default(self, table: TableRef) -> None:
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

    def table_entries(self, table: TableRef) -> list[TableEntry]:
        """-> list of TableEntry (handle, match, action, action_id, params, priority, ...)."""
        with self.lock:
            t = self._table(table)
            return [self._snapshot(t, e) for e in sorted(t.entries.values(), key=lambda e: e.handle)]

    def table_get(self, table: TableRef, handle: int) -> TableEntry:
        with self.lock:
            t = self._table(table)
            return self._snapshot(t, t.get(handle))

    def table_get_default(self, table: TableRef) -> TableEntry:
        with self.lock:
            t = self._table(table)
            return self._snapshot(t, t.default)

    # ---- registers -----------------------------------------------------------------------------
    def _register(self, name):
        info = self._prog.registers.get(name)
        if info is None:
            raise NotFoundError(f"register {name!r} does not exist (registers: "
                                f"{', '.join(sorted(self._prog.registers))})")
        return info, self._register_cells(name)

    def _register_cells(self, name):
        """Where register `name`'s cells live (the native switch: its index in C)."""
        return self._registers[name]

    @staticmethod
    def _index(kind, name, index, size):
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < size:
            raise EngineError(f"{kind} {name}: index {index!r} out of range 0..{size - 1}")
        return index

    def register_read(self, name: str, index: int | None = None) -> Any:
        """Cell value (unsigned bit pattern); index None -> list of all cells."""
        with self.lock:
            info, cells = self._register(name)
            if index is None:
                return list(cells)
            return cells[self._index("register", name, index, info.size)]

    def register_write(self, name: str, index: int | None, value: Value) -> None:
        """Write one cell (index None: every cell)."""
        with self.lock:
            info, cells = self._register(name)
            v = parse_value(value, info.width, f"register {name}, value")
            if index is None:
                cells[:] = [v] * info.size
            else:
                cells[self._index("register", name, index, info.size)] = v

    def register_reset(self, name: str) -> None:
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
        return info, self._counter_cells(name)

    def _counter_cells(self, name):
        """Where counter `name`'s cells live (the native switch: its index in C)."""
        return self._counters[name]

    def counter_read(self, name: str, index: int | None = None) -> Any:
        """-> (packets, bytes); index None -> list of (packets, bytes)."""
        with self.lock:
            info, (pk, by) = self._counter(name)
            if index is None:
                return list(zip(pk, by))
            i = self._index("counter", name, index, info.size)
            return (pk[i], by[i])

    def counter_write(self, name: str, index: int | None, packets: int, bytes_: int) -> None:
        with self.lock:
            info, (pk, by) = self._counter(name)
            idx = range(info.size) if index is None else [self._index("counter", name, index, info.size)]
            for i in idx:
                pk[i], by[i] = int(packets), int(bytes_)

    def counter_reset(self, name: str) -> None:
        self.counter_write(name, None, 0, 0)

    def _direct_counter_table(self, table, handle):
        """The table of a direct counter cell; NotFoundError if `handle` is not one of its entries."""
        t = self._table(table)
        if not t.info.direct_counter:
            raise EngineError(f"table {t.info.name} has no direct counter")
        t.get(handle)
        return t

    def _direct_counter(self, t, handle, write=None):
        """(packets, bytes) of entry `handle`'s direct counter, after writing `write` if given."""
        c = t.get(handle).counter
        if write is not None:
            c[0], c[1] = write
        return (c[0], c[1])

    def direct_counter_read(self, table: TableRef, handle: int) -> tuple[int, int]:
        with self.lock:
            return self._direct_counter(self._direct_counter_table(table, handle), handle)

    def direct_counter_write(self, table: TableRef, handle: int, packets: int, bytes_: int) -> None:
        with self.lock:
            t = self._direct_counter_table(table, handle)
            self._direct_counter(t, handle, (int(packets), int(bytes_)))

    # ---- meters --------------------------------------------------------------------------------
    def _meter(self, name):
        m = self._meters.get(name)
        if m is None:
            info = self._prog.meters.get(name)
            if info is not None and info.direct:
                raise EngineError(f"meter {name} is a direct meter of table {info.binding}: "
                                  f"direct meters are not configurable (they mark GREEN)")
            raise NotFoundError(f"meter {name!r} does not exist (meters: {', '.join(sorted(self._meters))})")
        return m

    def meter_set(self, name: str, index: int | None, cir: float, cburst: float, pir: float,
                  pburst: float) -> None:
        """Configure meter cell `index` (rates in units/second, bursts in units; units are bytes or
        packets per the meter's type).  Until configured, a cell marks every packet GREEN."""
        with self.lock:
            m = self._meter(name)
            idx = range(m.info.size) if index is None else [self._index("meter", name, index, m.info.size)]
            values = []
            for label, v in (("cir", cir), ("cburst", cburst), ("pir", pir), ("pburst", pburst)):
                if not isinstance(v, (int, float)) or v < 0:
                    raise EngineError(f"meter {name}: {label} must be a non-negative number, got {v!r}")
                values.append(v)
            if pir < cir:
                raise EngineError(f"meter {name}: pir ({pir}) must be >= cir ({cir})")
            for i in idx:
                m.configure(i, tuple(values))

    def meter_get(self, name: str, index: int) -> tuple | None:
        """-> (cir, cburst, pir, pburst) or None when unconfigured."""
        with self.lock:
            m = self._meter(name)
            return m.configs[self._index("meter", name, index, m.info.size)]

    def meter_reset(self, name: str, index: int | None = None) -> None:
        """Back to unconfigured (GREEN) for one cell or all."""
        with self.lock:
            m = self._meter(name)
            idx = range(m.info.size) if index is None else [self._index("meter", name, index, m.info.size)]
            for i in idx:
                m.configure(i, None)

    # ---- parser value sets -----------------------------------------------------------------------
    def parse_vset_set(self, name: str, members: Iterable[Any]) -> None:
        """Replace the members of parse value set `name`: values or (value, mask) pairs, each the
        select key's fields concatenated at their own widths (BMv2's "compressed" form)."""
        with self.lock:
            width = self._prog.parse_vsets.get(name)
            if width is None:
                raise NotFoundError(f"parse value set {name!r} does not exist")
            full = (1 << width) - 1
            parsed = []
            for m in members:
                if isinstance(m, (tuple, list)):
                    v, mask = m
                else:
                    v, mask = m, full
                parsed.append((parse_value(v, width, f"parse value set {name}, value"),
                               parse_value(mask, width, f"parse value set {name}, mask")))
            self._vsets[name][:] = parsed

    def parse_vset_get(self, name: str) -> list[tuple[int, int]]:
        with self.lock:
            if name not in self._vsets:
                raise NotFoundError(f"parse value set {name!r} does not exist")
            return list(self._vsets[name])

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

    def mc_group_set(self, group: int, replicas: Iterable[tuple[int, int]]) -> None:
        """Create or replace multicast group `group` with [(port, rid), ...] in order."""
        with self.lock:
            if not isinstance(group, int) or not 0 < group < 65536:
                raise EngineError(f"multicast group {group!r}: id must be 1..65535")
            self._mc_groups[group] = self._replicas("multicast group", group, replicas)

    def mc_group_delete(self, group: int) -> None:
        with self.lock:
            if self._mc_groups.pop(group, None) is None:
                raise NotFoundError(f"multicast group {group!r} does not exist")

    def mc_group_get(self, group: int) -> list[tuple[int, int]]:
        with self.lock:
            if group not in self._mc_groups:
                raise NotFoundError(f"multicast group {group!r} does not exist")
            return list(self._mc_groups[group])

    def mc_groups(self) -> dict[int, list[tuple[int, int]]]:
        """-> {group: [(port, rid), ...]}."""
        with self.lock:
            return {g: list(r) for g, r in self._mc_groups.items()}

    def clone_session_set(self, session: int, replicas: Iterable[tuple[int, int]],
                          packet_length_bytes: int = 0) -> None:
        """Create or replace clone session `session`; clones are truncated to packet_length_bytes if > 0."""
        with self.lock:
            if not isinstance(session, int) or not 0 <= session < 65536:
                raise EngineError(f"clone session {session!r}: id must be 0..65535")
            if not isinstance(packet_length_bytes, int) or packet_length_bytes < 0:
                raise EngineError(f"clone session {session}: packet_length_bytes must be >= 0")
            self._clone_sessions[session] = (self._replicas("clone session", session, replicas),
                                             packet_length_bytes)

    def clone_session_delete(self, session: int) -> None:
        with self.lock:
            if self._clone_sessions.pop(session, None) is None:
                raise NotFoundError(f"clone session {session!r} does not exist")

    def clone_session_get(self, session: int) -> tuple[list[tuple[int, int]], int]:
        """-> ([(port, rid), ...], packet_length_bytes)."""
        with self.lock:
            if session not in self._clone_sessions:
                raise NotFoundError(f"clone session {session!r} does not exist")
            replicas, plen = self._clone_sessions[session]
            return list(replicas), plen

    def clone_sessions(self) -> dict[int, tuple[list[tuple[int, int]], int]]:
        with self.lock:
            return {s: (list(r), p) for s, (r, p) in self._clone_sessions.items()}
