"""A forwarding pipeline: P4Info + BMv2 JSON device config, bound to each other by name, and the
engine that runs it.

P4Info objects are matched to JSON objects by their fully qualified names (what p4c writes in both
files), so a P4Info from real p4c works with JSON from real p4c or from p4sim-compile. The two
must describe the same program, both ways: anything in the P4Info that the JSON lacks or sizes
differently (a table's keys, match kinds, widths and size; an action's parameters and widths; a
register's, counter's or meter's size and width), and anything a controller could program in the
JSON that the P4Info lacks (a table with keys or a choice of actions, a register, counter, meter or
value set), is an INVALID_ARGUMENT naming the first mismatch. (The tables p4c synthesises for
statements outside any table, `tbl_*` with no key and one constant action, are in no P4Info.)
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from p4.v1 import p4runtime_pb2

from . import bytestrings
from .errors import invalid
from .p4info_index import P4InfoIndex, TableInfo

if TYPE_CHECKING:
    from p4sim.engine import Engine


@dataclass
class TableBinding:
    """How one P4Info table maps onto the JSON table."""
    json_name: str
    key_names: dict[int, str]            # P4Info match field id -> JSON key name
    # initial default action from the JSON: (P4Info action id, {param id: value}) or None
    initial_default: tuple[int, dict[int, int]] | None = None
    default_is_const: bool = False
    # const entries from the JSON, as ready-made p4.v1.TableEntry messages
    const_entries: list[p4runtime_pb2.TableEntry] = field(default_factory=list)


@dataclass
class ActionBinding:
    json_name: str
    param_names: dict[int, str]          # P4Info param id -> JSON runtime_data name


def parse_device_config(data: bytes) -> dict:
    """BMv2 JSON from the p4_device_config bytes; INVALID_ARGUMENT if it is not a JSON object."""
    if not data:
        raise invalid("ForwardingPipelineConfig.p4_device_config is empty (expected BMv2 JSON)")
    try:
        program = json.loads(data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise invalid(f"ForwardingPipelineConfig.p4_device_config is not BMv2 JSON: {exc}") from None
    if not isinstance(program, dict) or "pipelines" not in program:
        raise invalid("ForwardingPipelineConfig.p4_device_config: BMv2 JSON must be an object "
                      "with a 'pipelines' list")
    return program


def _same(what: str, quantity: str, p4info_value, json_value):
    """INVALID_ARGUMENT when the P4Info and the JSON disagree on a number (0 in the P4Info, None in
    the JSON: not said)."""
    if json_value is not None and p4info_value and p4info_value != json_value:
        raise invalid(f"{what} has {quantity} {p4info_value}, the BMv2 JSON {json_value}")


class Pipeline:
    """Bound program. Construction checks everything; `engine` is built by `build_engine`."""

    def __init__(self, config: p4runtime_pb2.ForwardingPipelineConfig):
        self.config = config
        self.index = P4InfoIndex(config.p4info)
        self.program = parse_device_config(config.p4_device_config)
        self.tables: dict[int, TableBinding] = {}
        self.actions: dict[int, ActionBinding] = {}
        self.counters: dict[int, str] = {}
        self.direct_counters: dict[int, str] = {}  # direct counter id -> JSON table name
        self.registers: dict[int, str] = {}
        self.meters: dict[int, str] = {}
        self.value_sets: dict[int, str] = {}
        self.engine: Any = None   # built by build_engine during VERIFY, taken by the device on commit
        self._bind()

    # -- binding -------------------------------------------------------------------------------
    def _bind(self) -> None:
        json_actions_by_name: dict[str, dict[str, Any]] = {}
        json_actions_by_id: dict[int, dict[str, Any]] = {}
        for action in self.program.get("actions", []):
            json_actions_by_name.setdefault(action["name"], action)
            json_actions_by_id[action["id"]] = action
        for action_id, info in self.index.actions.items():
            action = json_actions_by_name.get(info.name)
            if action is None:
                raise invalid(f"P4Info action '{info.name}' has no action of that name in the BMv2 JSON")
            runtime_data = action.get("runtime_data", [])
            names = [rd["name"] for rd in runtime_data]
            widths = {rd["name"]: rd.get("bitwidth") for rd in runtime_data}
            if len(names) != len(info.params):
                raise invalid(f"P4Info action '{info.name}' has {len(info.params)} parameters, the JSON "
                              f"action {len(names)}")
            params = {}
            for position, (param_id, param) in enumerate(info.params.items()):
                if param.name in names:
                    params[param_id] = param.name
                else:
                    params[param_id] = names[position]
                width = widths[params[param_id]]
                if width is not None and param.bitwidth != width:
                    raise invalid(f"P4Info action '{info.name}' param '{param.name}' is {param.bitwidth} "
                                  f"bits wide, the JSON's {width}")
            self.actions[action_id] = ActionBinding(info.name, params)

        json_tables = {}
        for pipeline in self.program.get("pipelines", []):
            for table in pipeline.get("tables", []):
                json_tables[table["name"]] = table
        for table_id, tinfo in self.index.tables.items():
            table = json_tables.get(tinfo.name)
            if table is None:
                raise invalid(f"P4Info table '{tinfo.name}' has no table of that name in the BMv2 JSON")
            self.tables[table_id] = self._bind_table(tinfo, table, json_actions_by_id)

        counters = {c["name"]: c for c in self.program.get("counter_arrays", [])}
        for counter_id, cinfo in self.index.counters.items():
            if cinfo.name not in counters or counters[cinfo.name].get("is_direct"):
                raise invalid(f"P4Info counter '{cinfo.name}' has no indirect counter array of that "
                              f"name in the BMv2 JSON")
            _same(f"P4Info counter '{cinfo.name}'", "size", cinfo.size, counters[cinfo.name].get("size"))
            self.counters[counter_id] = cinfo.name
        for counter_id, dcinfo in self.index.direct_counters.items():
            table = self.index.tables.get(dcinfo.table_id)
            if table is None:
                raise invalid(f"P4Info direct counter '{dcinfo.name}' is bound to unknown table id "
                              f"{dcinfo.table_id}")
            self.direct_counters[counter_id] = table.name
        meters = {m["name"]: m for m in self.program.get("meter_arrays", [])}
        for meter_id, minfo in self.index.meters.items():
            if minfo.name not in meters or meters[minfo.name].get("is_direct"):
                raise invalid(f"P4Info meter '{minfo.name}' has no indirect meter array of that name "
                              f"in the BMv2 JSON")
            _same(f"P4Info meter '{minfo.name}'", "size", minfo.size, meters[minfo.name].get("size"))
            self.meters[meter_id] = minfo.name
        value_sets = {v["name"] for v in self.program.get("parse_vsets", [])}
        for value_set_id, vinfo in self.index.value_sets.items():
            if vinfo.name not in value_sets:
                raise invalid(f"P4Info value set '{vinfo.name}' has no parse_vsets entry of that "
                              f"name in the BMv2 JSON")
            self.value_sets[value_set_id] = vinfo.name
        registers = {r["name"]: r for r in self.program.get("register_arrays", [])}
        for register_id, rinfo in self.index.registers.items():
            if rinfo.name not in registers:
                raise invalid(f"P4Info register '{rinfo.name}' has no register array of that name "
                              f"in the BMv2 JSON")
            _same(f"P4Info register '{rinfo.name}'", "size", rinfo.size, registers[rinfo.name].get("size"))
            _same(f"P4Info register '{rinfo.name}'", "bit width", rinfo.bitwidth, registers[rinfo.name].get("bitwidth"))
            self.registers[register_id] = rinfo.name
        self._check_json_in_p4info(json_tables, counters, meters, registers, value_sets)

    def _check_json_in_p4info(self, json_tables: dict[str, Any], counters: dict[str, Any], meters: dict[str, Any],
                              registers: dict[str, Any], value_sets: set[str]) -> None:
        """Everything a controller could program in the JSON must be in the P4Info."""
        index = self.index
        p4info_tables = {t.name for t in index.tables.values()}
        for name, table in json_tables.items():
            controllable = (table.get("key") or len(table.get("action_ids", [])) > 1
                            or not (table.get("default_entry") or {}).get("action_const", False))
            if controllable and name not in p4info_tables:
                raise invalid(f"BMv2 JSON table '{name}' is not in the P4Info (the P4Info is of another "
                              f"program, or empty)")
        direct_tables = {index.tables[d.table_id].name for d in index.direct_counters.values()
                         if d.table_id in index.tables}
        objects: dict[str, Any]     # name -> its JSON (None for a value set)
        for kind, objects, known in (
                ("register array", registers, {r.name for r in index.registers.values()}),
                ("counter array", {n: c for n, c in counters.items() if not c.get("is_direct")},
                 {c.name for c in index.counters.values()}),
                ("direct counter", {n: c for n, c in counters.items() if c.get("is_direct")}, None),
                ("meter array", {n: m for n, m in meters.items() if not m.get("is_direct")},
                 {m.name for m in index.meters.values()}),
                ("parser value set", dict.fromkeys(value_sets), {v.name for v in index.value_sets.values()})):
            for name, obj in objects.items():
                if known is None:   # a direct counter: its table must have it in the P4Info
                    if obj.get("binding") in p4info_tables and obj.get("binding") not in direct_tables:
                        raise invalid(f"BMv2 JSON direct counter '{name}' of table '{obj.get('binding')}' "
                                      f"is not in the P4Info")
                elif name not in known:
                    raise invalid(f"BMv2 JSON {kind} '{name}' is not in the P4Info")

    def _bind_table(self, info: TableInfo, table: dict, json_actions_by_id) -> TableBinding:
        keys = table.get("key", [])
        json_keys = [k.get("name") or ".".join(k.get("target", [])) for k in keys]
        what = f"P4Info table '{info.name}'"
        if len(json_keys) != len(info.match_fields):
            raise invalid(f"{what} has {len(info.match_fields)} match fields, the JSON table {len(json_keys)} keys")
        if not (info.is_const or table.get("entries")):   # p4c sizes a const table by its entries in the JSON
            _same(what, "size", info.size, table.get("max_size"))
        key_names = {}
        for position, (field_id, mf) in enumerate(info.match_fields.items()):
            at = json_keys.index(mf.name) if mf.name in json_keys else position
            key_names[field_id] = json_keys[at]
            key = keys[at]
            kind = key.get("match_type")
            if kind != mf.match_type and not (mf.match_type == "optional" and kind == "ternary"):
                raise invalid(f"{what} match field '{mf.name}' is {mf.match_type}, the JSON key "
                              f"'{json_keys[at]}' {kind}")
            width = self._field_width(key)
            if width is not None and key.get("mask") is None and width != mf.bitwidth:
                raise invalid(f"{what} match field '{mf.name}' is {mf.bitwidth} bits wide, the JSON "
                              f"key '{json_keys[at]}' {width}")
        binding = TableBinding(table["name"], key_names)
        default = table.get("default_entry")
        if default is not None:
            action = json_actions_by_id.get(default.get("action_id"))
            if action is not None:
                action_id = self._p4info_action_id(action["name"])
                if action_id is not None:
                    binding.initial_default = (action_id, self._json_action_data(
                        action_id, default.get("action_data", [])))
            binding.default_is_const = bool(default.get("action_const")) or bool(info.const_default_action_id)
        for position, entry in enumerate(table.get("entries", []) or []):
            binding.const_entries.append(
                self._const_entry(info, binding, entry, position, len(table["entries"]), json_actions_by_id))
        return binding

    def _field_width(self, key) -> int | None:
        """Bit width of the header field a JSON table key matches on (None if it cannot be told)."""
        target = key.get("target")
        if not isinstance(target, list) or len(target) != 2:
            return None
        if target[1] == "$valid$":
            return 1
        if not hasattr(self, "_field_widths"):
            types = {t["name"]: {f[0]: f[1] for f in t.get("fields", []) if len(f) >= 2}
                     for t in self.program.get("header_types", [])}
            self._field_widths = {h["name"]: types.get(h.get("header_type"), {})
                                  for h in self.program.get("headers", [])}
        width = self._field_widths.get(target[0], {}).get(target[1])
        return width if isinstance(width, int) else None

    def _p4info_action_id(self, name):
        try:
            return self.index.id_of("action", name)
        except KeyError:
            return None

    def _json_action_data(self, action_id, data) -> dict[int, int]:
        info = self.index.actions[action_id]
        values = {}
        for (param_id, _), text in zip(info.params.items(), data):
            values[param_id] = int(str(text), 0) if isinstance(text, str) else int(text)
        return values

    def _const_entry(self, info, binding, entry, position, count, json_actions_by_id):
        message = p4runtime_pb2.TableEntry(table_id=info.id, is_const=True)
        for (field_id, mf), key in zip(info.match_fields.items(), entry.get("match_key", [])):
            kind = key.get("match_type", mf.match_type)
            fm = p4runtime_pb2.FieldMatch(field_id=field_id)
            if kind == "exact":
                fm.exact.value = bytestrings.encode(int(key["key"], 16))
            elif kind == "lpm":
                if key.get("prefix_length", 0) == 0:
                    continue
                fm.lpm.value = bytestrings.encode(int(key["key"], 16))
                fm.lpm.prefix_len = key["prefix_length"]
            elif kind == "ternary":
                mask = int(key["mask"], 16)
                if mask == 0:
                    continue
                fm.ternary.value = bytestrings.encode(int(key["key"], 16))
                fm.ternary.mask = bytestrings.encode(mask)
            elif kind == "range":
                low, high = int(key["start"], 16), int(key["end"], 16)
                if low == 0 and high == (1 << mf.bitwidth) - 1:
                    continue
                fm.range.low = bytestrings.encode(low)
                fm.range.high = bytestrings.encode(high)
            elif kind == "optional":
                fm.optional.value = bytestrings.encode(int(key["key"], 16))
            message.match.append(fm)
        action_entry = entry.get("action_entry", {})
        action = json_actions_by_id.get(action_entry.get("action_id"))
        if action is not None:
            action_id = self._p4info_action_id(action["name"])
            if action_id is not None:
                message.action.action.action_id = action_id
                for param_id, value in self._json_action_data(action_id, action_entry.get("action_data", [])).items():
                    message.action.action.params.add(param_id=param_id, value=bytestrings.encode(value))
        if info.needs_priority:
            # BMv2 JSON: smaller number wins; BMv2 reads entry priority p back as 2147483647 - p.
            message.priority = 2147483647 - int(entry.get("priority", position + 1))
        return message

    def build_engine(self, cpu_port: int | None = None, drop_port: int = 511, backend: str | None = None) -> Engine:
        """Compile the JSON with the engine; INVALID_ARGUMENT with the engine's message on failure."""
        from p4sim.engine import Switch
        try:
            return Switch(self.program, cpu_port=cpu_port, drop_port=drop_port, backend=backend)
        except ValueError as exc:
            raise invalid(f"BMv2 JSON rejected by the engine: {exc}") from None
        except Exception as exc:  # an engine bug must not kill the server
            raise invalid(f"BMv2 JSON could not be loaded: {type(exc).__name__}: {exc}") from None
