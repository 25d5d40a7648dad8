"""A forwarding pipeline: P4Info + BMv2 JSON device config, bound to each other by name, and the
engine that runs it.

P4Info objects are matched to JSON objects by their fully qualified names (what p4c writes in both
files), so a P4Info from real p4c works with JSON from real p4c or from p4sim-compile. Anything in
the P4Info that the JSON lacks is an INVALID_ARGUMENT naming the object.
"""
import json
from dataclasses import dataclass, field
from typing import Any

from p4.v1 import p4runtime_pb2

from . import bytestrings
from .errors import invalid
from .p4info_index import P4InfoIndex, TableInfo


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
    def _bind(self):
        json_actions_by_name = {}
        json_actions_by_id = {}
        for action in self.program.get("actions", []):
            json_actions_by_name.setdefault(action["name"], action)
            json_actions_by_id[action["id"]] = action
        for action_id, info in self.index.actions.items():
            action = json_actions_by_name.get(info.name)
            if action is None:
                raise invalid(f"P4Info action '{info.name}' has no action of that name in the BMv2 JSON")
            names = [rd["name"] for rd in action.get("runtime_data", [])]
            params = {}
            for position, (param_id, param) in enumerate(info.params.items()):
                if param.name in names:
                    params[param_id] = param.name
                elif len(names) == len(info.params):
                    params[param_id] = names[position]
                else:
                    raise invalid(f"P4Info action '{info.name}' param '{param.name}' is not a "
                                  f"runtime parameter of the JSON action")
            self.actions[action_id] = ActionBinding(info.name, params)

        json_tables = {}
        for pipeline in self.program.get("pipelines", []):
            for table in pipeline.get("tables", []):
                json_tables[table["name"]] = table
        for table_id, info in self.index.tables.items():
            table = json_tables.get(info.name)
            if table is None:
                raise invalid(f"P4Info table '{info.name}' has no table of that name in the BMv2 JSON")
            self.tables[table_id] = self._bind_table(info, table, json_actions_by_id)

        counters = {c["name"]: c for c in self.program.get("counter_arrays", [])}
        for counter_id, info in self.index.counters.items():
            if info.name not in counters or counters[info.name].get("is_direct"):
                raise invalid(f"P4Info counter '{info.name}' has no indirect counter array of that "
                              f"name in the BMv2 JSON")
            self.counters[counter_id] = info.name
        for counter_id, info in self.index.direct_counters.items():
            table = self.index.tables.get(info.table_id)
            if table is None:
                raise invalid(f"P4Info direct counter '{info.name}' is bound to unknown table id "
                              f"{info.table_id}")
            self.direct_counters[counter_id] = table.name
        meters = {m["name"]: m for m in self.program.get("meter_arrays", [])}
        for meter_id, info in self.index.meters.items():
            if info.name not in meters or meters[info.name].get("is_direct"):
                raise invalid(f"P4Info meter '{info.name}' has no indirect meter array of that name "
                              f"in the BMv2 JSON")
            self.meters[meter_id] = info.name
        value_sets = {v["name"] for v in self.program.get("parse_vsets", [])}
        for value_set_id, info in self.index.value_sets.items():
            if info.name not in value_sets:
                raise invalid(f"P4Info value set '{info.name}' has no parse_vsets entry of that "
                              f"name in the BMv2 JSON")
            self.value_sets[value_set_id] = info.name
        registers = {r["name"] for r in self.program.get("register_arrays", [])}
        for register_id, info in self.index.registers.items():
            if info.name not in registers:
                raise invalid(f"P4Info register '{info.name}' has no register array of that name "
                              f"in the BMv2 JSON")
            self.registers[register_id] = info.name

    def _bind_table(self, info: TableInfo, table: dict, json_actions_by_id) -> TableBinding:
        json_keys = [k.get("name") or ".".join(k.get("target", [])) for k in table.get("key", [])]
        key_names = {}
        for position, (field_id, mf) in enumerate(info.match_fields.items()):
            if mf.name in json_keys:
                key_names[field_id] = mf.name
            elif len(json_keys) == len(info.match_fields):
                key_names[field_id] = json_keys[position]
            else:
                raise invalid(f"P4Info table '{info.name}' match field '{mf.name}' is not a key of "
                              f"the JSON table")
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

    def build_engine(self, cpu_port=None, drop_port=511):
        """Compile the JSON with the engine; INVALID_ARGUMENT with the engine's message on failure."""
        from p4reduce.p4sim.engine import Switch
        try:
            return Switch(self.program, cpu_port=cpu_port, drop_port=drop_port)
        except ValueError as exc:
            raise invalid(f"BMv2 JSON rejected by the engine: {exc}") from None
        except Exception as exc:  # an engine bug must not kill the server
            raise invalid(f"BMv2 JSON could not be loaded: {type(exc).__name__}: {exc}") from None
