"""p4sim.engine: executes BMv2 JSON (v1model) in process.  Contract 2 of docs/architecture.md.

    from p4sim.engine import Switch, EngineError
    sw = Switch(bmv2_json, cpu_port=None, drop_port=511)  # dict, JSON str/bytes, or a path
    out = sw.process(ingress_port, frame)                  # -> [(egress_port, bytes), ...]

The program is compiled once, at load, into generated Python source (p4sim/engine/codegen.py);
no JSON is walked per packet.  Setting `sw.trace = callable` switches to a second compiled variant
that emits BMv2-like trace lines; with `sw.trace = None` tracing costs nothing.

Values are unsigned bit patterns of the declared width (an int<32> cell holding -1 reads as
0xffffffff).  Inputs also accept negative ints (two's complement) and p4runtime-shell strings
("10.0.0.1", "00:11:22:33:44:55", "0x0a", "10.0.0.0/8", "0x0a&&&0xff", "1..5").

Every public method holds `sw.lock` (an RLock).  Bad names/values raise EngineError (a ValueError)
naming the object and field; its `code` attribute is the P4Runtime status to answer with:
EngineError INVALID_ARGUMENT, NotFoundError NOT_FOUND, AlreadyExistsError ALREADY_EXISTS,
ResourceExhaustedError RESOURCE_EXHAUSTED, ConstViolationError PERMISSION_DENIED (const table or
const default action), ProgramError (bad JSON) INVALID_ARGUMENT.

Tables (table: JSON name "Ing.l2" or JSON id; action: JSON name or id; match: {key name: value}
or a list in key order; params: {name: value} or a list in order):
    table_add(table, match, action, params=None, priority=None) -> handle
        match values: int (exact); (value, prefix_len) lpm; (value, mask) ternary; (lo, hi) range;
        value or None (wildcard) optional; or p4runtime-shell strings.  Omitted non-exact keys are
        wildcards.  priority: required for tables with ternary/range/optional keys; a LARGER
        number wins (P4Runtime semantics); ignored (0) for exact/lpm tables.
    table_modify(table, handle, action, params) / table_delete(table, handle) / table_clear(table)
    table_find(table, match, priority=None) -> handle or None   (P4Runtime identifies entries by key)
    table_set_default(table, action, params) / table_reset_default(table) / table_get_default(table)
    table_entries(table) -> [TableEntry] incl. const entries (is_const=True); table_get(table, h)
        TableEntry: handle, match {key name: normalized value}, action, action_id,
        params {name: int}, args (tuple, in order), priority, is_const, packets, bytes (direct counter)
Registers / counters:
    register_read(name, index=None) -> int (index None: list) ; register_write(name, index, value)
    (index None: all cells) ; register_reset(name)
    counter_read(name, index=None) -> (packets, bytes) ; counter_write(name, index, packets, bytes)
    counter_reset(name) ; direct_counter_read(table, handle) ; direct_counter_write(table, handle, p, b)
Packet replication engine:
    mc_group_set(group, [(port, rid), ...]) ; mc_group_delete ; mc_group_get ; mc_groups()
    clone_session_set(session, [(port, rid), ...], packet_length_bytes=0) ; clone_session_delete ;
    clone_session_get(session) -> (replicas, packet_length_bytes) ; clone_sessions()

Meters (indirect, two-rate three-color, RFC 2698): meter_set(name, index, cir, cburst, pir, pburst)
    (rates in bytes or packets per second per the meter's type; index None: all cells) ;
    meter_get(name, index) -> config or None ; meter_reset(name, index=None).  An unconfigured cell
    marks GREEN (0), as a fresh BMv2 does; direct meters always mark GREEN.
Parser value sets: parse_vset_set(name, [value or (value, mask), ...]) ; parse_vset_get(name)

`sw.program` (read-only, p4sim.engine.program.Program) describes what the runtime needs to map
P4Runtime requests: .tables {name: TableInfo(name, id, keys=(KeyInfo(name, match_type, target,
width, mask),...), action_ids, actions, max_size, direct_counter, default_entry=DefaultEntryInfo(
action_id, action, args, action_const, action_entry_const), const_entries, needs_priority,
is_const)}, .actions {id: ActionInfo(name, id, params=(ParamInfo(name, width),...))},
.action_by_name(name), .registers {name: RegisterInfo(name, id, size, width)}, .counters {name:
CounterInfo(name, id, size, direct, binding)}, .meters, .parse_vsets {name: bitwidth}, .headers,
.fields, .errors.

Not supported (ProgramError at load, naming the object): varbit fields, header-union operations,
action profiles/selectors.

`sw.stats` counts received/emitted/dropped packets and internal errors (a packet that hits an
engine bug is dropped, never raised: `sw.last_internal_error` keeps the exception).
"""
from .errors import (
                     AlreadyExistsError,
                     ConstViolationError,
                     EngineError,
                     NotFoundError,
                     ProgramError,
                     ResourceExhaustedError,
)
from .native.backend import Engine, Switch  # native (generated C) or the Python engine (switch.Switch)
from .switch import Switch as PythonSwitch
from .tables import TableEntry

__all__ = [
                     "AlreadyExistsError",
                     "ConstViolationError",
                     "Engine",
                     "EngineError",
                     "NotFoundError",
                     "ProgramError",
                     "PythonSwitch",
                     "ResourceExhaustedError",
                     "Switch",
                     "TableEntry",
]
