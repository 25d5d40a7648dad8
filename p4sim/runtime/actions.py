"""p4.v1.Action <-> engine (action name, {param: int}), checked against the table's P4Info."""
from __future__ import annotations

from typing import TYPE_CHECKING

from p4.v1 import p4runtime_pb2

from . import bytestrings
from .errors import invalid, unimplemented
from .p4info_index import TableInfo

if TYPE_CHECKING:
    from .pipeline import Pipeline


def decode(pipeline: Pipeline, table: TableInfo, table_action: p4runtime_pb2.TableAction, default: bool
           ) -> tuple[int, dict[int, int]]:
    """(P4Info action id, {param id: value}) of a TableAction; errors name table/action/param."""
    kind = table_action.WhichOneof("type")
    if kind is None:
        raise invalid(f"table '{table.name}': entry has no action")
    if kind != "action":
        raise unimplemented(f"table '{table.name}': {kind} (action profiles) is not supported")
    action = table_action.action
    info = pipeline.index.actions.get(action.action_id)
    if info is None or action.action_id not in table.action_ids:
        raise invalid(f"table '{table.name}': action id {action.action_id} is not one of the "
                      f"table's actions")
    if default and action.action_id in table.table_only_action_ids:
        raise invalid(f"table '{table.name}': action '{info.name}' is @tableonly and cannot be "
                      f"the default action")
    if not default and action.action_id in table.default_only_action_ids:
        raise invalid(f"table '{table.name}': action '{info.name}' is @defaultonly and cannot be "
                      f"used in an entry")
    values = {}
    for param in action.params:
        pinfo = info.params.get(param.param_id)
        if pinfo is None:
            raise invalid(f"action '{info.name}': param id {param.param_id} is not in the P4Info")
        if param.param_id in values:
            raise invalid(f"action '{info.name}': param '{pinfo.name}' is given twice")
        values[param.param_id] = bytestrings.decode(
            param.value, pinfo.bitwidth, f"action '{info.name}' param '{pinfo.name}'")
    missing = [p.name for pid, p in info.params.items() if pid not in values]
    if missing:
        raise invalid(f"action '{info.name}': missing param(s) {', '.join(missing)}")
    return action.action_id, values


def encode(action_id: int, values: dict[int, int]) -> p4runtime_pb2.TableAction:
    """Canonical TableAction of an action and its params (params in P4Info order)."""
    table_action = p4runtime_pb2.TableAction()
    table_action.action.action_id = action_id
    for param_id, value in values.items():
        table_action.action.params.add(param_id=param_id, value=bytestrings.encode(value))
    return table_action


def engine_args(pipeline: Pipeline, action_id: int, values: dict[int, int]) -> tuple[str, dict[str, int]]:
    """Engine form: (JSON action name, {JSON param name: value})."""
    binding = pipeline.actions[action_id]
    return binding.json_name, {binding.param_names[pid]: v for pid, v in values.items()}
