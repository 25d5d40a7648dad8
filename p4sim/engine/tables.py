"""Match-action tables: entry storage and the per-packet lookup (exact dict, LPM levels, ternary list).

A lookup key is the concatenation of all key fields as one int (first key field most significant),
so every match kind reduces to dict lookups or `key & mask == value` tests.  Priorities follow
P4Runtime: a larger number wins; ties go to the entry installed first.
"""
import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .errors import AlreadyExistsError, ConstViolationError, EngineError, NotFoundError, ResourceExhaustedError
from .ir_pipeline import key_shifts, match_kind, next_node
from .program import Program, TableInfo


class Entry:
    """One installed entry (or the default entry); generated code reads fn, data, next, counter."""
    __slots__ = (
        "action_id",
        "const",
        "counter",
        "data",
        "fn",
        "handle",
        "mask",
        "match",
        "next",
        "plen",
        "priority",
        "ranges",
        "value",
    )

    def __init__(self, handle: int | None, match: tuple[Any, ...] | None, action_id: int | None,
                 data: Iterable[int], priority: int, counter: list[int] | None = None, const: bool = False) -> None:
        """match: per key field an int (exact, valid) or a pair (lpm, ternary, range), see
        values.parse_match; counter: a direct counter cell [packets, bytes]."""
        self.handle, self.match, self.action_id, self.data = handle, match, action_id, tuple(data)
        self.priority, self.counter, self.const = priority, counter, const
        self.fn: Callable[[list[int], tuple[int, ...]], Any] | None = None   # the bound action
        self.next: Any = None           # the control-flow node after it (a generated function or None)
        self.value = self.mask = 0
        self.ranges: tuple[tuple[int, int, int, int], ...] | None = None
        self.plen = 0


@dataclass(frozen=True)
class TableEntry:
    """A snapshot of an entry as `Switch.table_entries` returns it."""
    handle: int | None
    match: dict          # key name -> normalized value (see values.parse_match)
    action: str
    action_id: int
    params: dict         # param name -> int
    priority: int
    is_const: bool = False
    packets: int = 0
    bytes: int = 0

    @property
    def args(self) -> tuple[int, ...]:
        """The action arguments in declaration order."""
        return tuple(self.params.values())


def _noop(f, p):
    return None


class Table:
    def __init__(self, info: TableInfo, prog: Program) -> None:
        self.info = info
        self.prog = prog
        self.entries: dict[int, Entry] = {}     # by handle
        self._next_handle = 0
        self.actions: dict[int, Callable[[list[int], tuple[int, ...]], Any]] = {}  # bound by bind()
        self.nodes: dict[str, Any] = {}         # control-flow node name -> generated function
        self.layout = [(k, shift, (1 << k.width) - 1) for k, shift in zip(info.keys, key_shifts(info))]
        self.kind = match_kind(info)
        self.default = Entry(None, None, None, (), 0)
        de = info.default_entry
        if de is not None:
            self.default.action_id, self.default.data = de.action_id, tuple(de.args)
        self.default_const = bool(de and de.action_const)
        self._init_lookup()

    # ---- binding to compiled code --------------------------------------------------------------
    def next_name_for(self, action_name: str | None, hit: bool) -> str | None:
        return next_node(self.info, action_name, hit)

    def bind(self, compiled: Any) -> None:
        self.actions = compiled.actions
        self.nodes = compiled.nodes
        for e in self.entries.values():
            self._bind(e, True)
        self._bind(self.default, False)

    def _bind(self, e, hit):
        if e.action_id is None:
            e.fn = _noop
            name = self.next_name_for(None, hit)
        else:
            e.fn = self.actions.get(e.action_id, _noop)
            name = self.next_name_for(self.prog.actions[e.action_id].name, hit)
        e.next = self.nodes.get(name) if name else None

    # ---- lookup ------------------------------------------------------------------------------
    # The structures below are updated in place by add/delete, so a control-plane write costs
    # O(1) (exact, lpm) or O(n) memmove (ternary), never a rebuild of the whole table.
    def _init_lookup(self):
        d = self.default
        self._by_ident: dict = {}
        if self.kind == "none":
            self.lookup = lambda k: d
        elif self.kind == "exact":
            get = self._by_ident.get  # exact identity is the key value itself

            def lookup(k):
                e = get(k)
                return d if e is None else e
            self.lookup = lookup
        elif self.kind == "lpm":
            self._levels = {}        # prefix length -> (mask, {masked key: entry})
            order: list = []
            self._order = order  # the levels, longest prefix first

            def lookup(k):
                for m, dd in order:
                    e = dd.get(k & m)
                    if e is not None:
                        return e
                return d
            self.lookup = lookup
        else:
            rows: list = []
            self._rows = rows        # (mask, value, ranges, entry), best first
            self._row_keys = []

            def lookup(k):
                for m, v, r, e in rows:
                    if k & m == v and (r is None or all(lo <= (k >> s) & w <= hi for s, w, lo, hi in r)):
                        return e
                return d
            self.lookup = lookup

    @staticmethod
    def _rank(e):
        return (-e.priority, -e.plen, e.handle)

    def _insert(self, e, ident):
        self._by_ident[ident] = e
        if self.kind == "lpm":
            level = self._levels.get(e.plen)
            if level is None:
                level = self._levels[e.plen] = (e.mask, {})
                self._order[:] = [self._levels[p] for p in sorted(self._levels, reverse=True)]
            level[1][e.value] = e
        elif self.kind == "ternary":
            i = bisect.bisect(self._row_keys, self._rank(e))
            self._row_keys.insert(i, self._rank(e))
            self._rows.insert(i, (e.mask, e.value, e.ranges, e))

    def _remove(self, e):
        del self._by_ident[self._identity(e)]
        if self.kind == "lpm":
            level = self._levels[e.plen]
            del level[1][e.value]
            if not level[1]:
                del self._levels[e.plen]
                self._order[:] = [self._levels[p] for p in sorted(self._levels, reverse=True)]
        elif self.kind == "ternary":
            i = bisect.bisect_left(self._row_keys, self._rank(e))
            del self._row_keys[i]
            del self._rows[i]

    def describe_hit(self, e: Entry) -> str:
        name = self.info.name
        if e is self.default:
            act = self.prog.actions[e.action_id].name if e.action_id is not None else "(none)"
            return f"Table '{name}': miss\nAction entry is {act} - {', '.join(hex(a) for a in e.data)}"
        assert e.action_id is not None      # installed entries name their action
        act = self.prog.actions[e.action_id].name
        return (f"Table '{name}': hit with handle {e.handle}\n"
                f"Action entry is {act} - {', '.join(hex(a) for a in e.data)}")

    # ---- control plane -----------------------------------------------------------------------
    def _key(self, e):
        """Fill value/mask/ranges/plen of `e` from its normalized match list."""
        value = mask = 0
        ranges = []
        plen_total = 0
        for (k, shift, full), m in zip(self.layout, e.match):
            mt = k.match_type
            if mt in ("exact", "valid"):
                value |= m << shift
                mask |= full << shift
            elif mt == "lpm":
                v, plen = m
                pm = full ^ ((1 << (k.width - plen)) - 1)
                value |= (v & pm) << shift
                mask |= pm << shift
                plen_total += plen
            elif mt in ("ternary", "optional"):
                v, mm = m
                value |= (v & mm) << shift
                mask |= mm << shift
            elif mt == "range":
                lo, hi = m
                if not (lo == 0 and hi == full):
                    ranges.append((shift, full, lo, hi))
        e.value, e.mask, e.ranges, e.plen = value, mask, (tuple(ranges) or None), plen_total

    def _identity(self, e):
        if self.kind == "exact":
            return e.value
        if self.kind == "lpm":
            return (e.plen, e.value)
        return (e.value, e.mask, e.ranges, e.priority)

    def check_mutable(self) -> None:
        if self.info.is_const:
            raise ConstViolationError(f"table {self.info.name}: entries are const (declared in the program)")

    def add(self, match: list[Any], action_id: int, data: list[int] | tuple[int, ...], priority: int,
            const: bool = False) -> int:
        if not const:
            self.check_mutable()
        if len(self.entries) >= self.info.max_size:
            raise ResourceExhaustedError(f"table {self.info.name}: full ({self.info.max_size} entries)")
        counter = [0, 0] if self.info.direct_counter else None
        handle = self._next_handle
        e = Entry(handle, tuple(match), action_id, data, priority, counter, const)
        self._key(e)
        ident = self._identity(e)
        other = self._by_ident.get(ident)
        if other is not None:
            raise AlreadyExistsError(f"table {self.info.name}: an entry with this match key "
                                     f"already exists (handle {other.handle})")
        self._next_handle += 1
        self.entries[handle] = e
        if self.actions:
            self._bind(e, True)
        self._insert(e, ident)
        return handle

    def find(self, match: list[Any], priority: int) -> int | None:
        """Handle of the entry with exactly this normalized match (and priority), or None."""
        probe = Entry(-1, tuple(match), None, (), priority)
        self._key(probe)
        e = self._by_ident.get(self._identity(probe))
        return None if e is None else e.handle

    def get(self, handle: int) -> Entry:
        e = self.entries.get(handle)
        if e is None:
            raise NotFoundError(f"table {self.info.name}: no entry with handle {handle!r}")
        return e

    def modify(self, handle: int, action_id: int, data: list[int]) -> None:
        self.check_mutable()
        e = self.get(handle)
        e.action_id, e.data = action_id, tuple(data)
        if self.actions:
            self._bind(e, True)

    def delete(self, handle: int) -> None:
        self.check_mutable()
        e = self.get(handle)
        del self.entries[handle]
        self._remove(e)

    def clear(self) -> None:
        self.check_mutable()
        for e in list(self.entries.values()):
            self._remove(e)
        self.entries.clear()

    def set_default(self, action_id: int, data: list[int]) -> None:
        if self.default_const and action_id != self.default.action_id:
            assert self.default.action_id is not None   # a const default comes from the program
            raise ConstViolationError(f"table {self.info.name}: the default action is const "
                                      f"({self.prog.actions[self.default.action_id].name})")
        de = self.info.default_entry
        if de is not None and de.action_entry_const and (action_id, tuple(data)) != (de.action_id, de.args):
            raise ConstViolationError(f"table {self.info.name}: the default entry is const")
        if action_id not in self.info.action_ids:
            raise EngineError(f"table {self.info.name}: action id {action_id} is not one of its actions")
        self.default.action_id, self.default.data = action_id, tuple(data)
        if self.actions:
            self._bind(self.default, False)

    def reset_default(self) -> None:
        de = self.info.default_entry
        if de is None:
            self.default.action_id, self.default.data = None, ()
        else:
            self.default.action_id, self.default.data = de.action_id, tuple(de.args)
        if self.actions:
            self._bind(self.default, False)
