"""Index of a P4Info: find tables, actions, registers, counters by name and id.

Names may be given in full ("MyIngress.ipv4_lpm") or by any unique dot-suffix ("ipv4_lpm"), as in
p4runtime-shell. Unknown or ambiguous names raise a ValueError naming the object kind and the name.
"""
from __future__ import annotations

import pathlib
from typing import Any

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

KINDS = {
    "table": "tables",
    "action": "actions",
    "register": "registers",
    "counter": "counters",
    "direct_counter": "direct_counters",
    "meter": "meters",
    "action_profile": "action_profiles",
}


def load_p4info(source: str | pathlib.Path | bytes | p4info_pb2.P4Info) -> p4info_pb2.P4Info:
    """P4Info message from a path (.txt/.txtpb text or binary .bin/.pb), bytes, or a message."""
    if isinstance(source, p4info_pb2.P4Info):
        return source
    info = p4info_pb2.P4Info()
    if isinstance(source, (bytes, bytearray)):
        info.ParseFromString(bytes(source))
        return info
    path = pathlib.Path(source)
    if not path.is_file():
        raise ValueError(f"P4Info file {path} does not exist")
    if path.suffix in (".bin", ".pb"):
        info.ParseFromString(path.read_bytes())
    else:
        try:
            text_format.Parse(path.read_text(), info)
        except text_format.ParseError as e:
            raise ValueError(f"{path}: not a text P4Info: {e}") from None
    return info


class P4InfoIndex:
    """Lookups over one P4Info."""

    def __init__(self, p4info: str | pathlib.Path | bytes | p4info_pb2.P4Info):
        self.p4info = load_p4info(p4info)
        self._by_name: dict[str, dict[str, list[Any]]] = {}
        self._by_id: dict[str, dict[int, Any]] = {}
        for kind, attr in KINDS.items():
            names: dict[str, list[Any]] = {}
            ids: dict[int, Any] = {}
            for obj in getattr(self.p4info, attr):
                full = obj.preamble.name
                ids[obj.preamble.id] = obj
                parts = full.split(".")
                for i in range(len(parts)):
                    names.setdefault(".".join(parts[i:]), []).append(obj)
                if obj.preamble.alias:
                    names.setdefault(obj.preamble.alias, []).append(obj)
            self._by_name[kind] = names
            self._by_id[kind] = ids

    def get(self, kind: str, name: str) -> Any:
        """The P4Info object of `kind` named `name` (full name or unique suffix)."""
        candidates = self._by_name[kind].get(name, [])
        unique = {id(c): c for c in candidates}
        if not unique:
            known = sorted(o.preamble.name for o in self._by_id[kind].values())
            raise ValueError(f"no {kind} named {name!r} in the P4Info (known: {', '.join(known) or 'none'})")
        if len(unique) > 1:
            exact = [c for c in unique.values() if c.preamble.name == name]
            if exact:
                return exact[0]
            names = sorted(c.preamble.name for c in unique.values())
            raise ValueError(f"{kind} name {name!r} is ambiguous: {', '.join(names)}")
        return next(iter(unique.values()))

    def has(self, kind: str, name: str) -> bool:
        try:
            self.get(kind, name)
            return True
        except ValueError:
            return False

    def by_id(self, kind: str, obj_id: int) -> Any:
        try:
            return self._by_id[kind][obj_id]
        except KeyError:
            raise ValueError(f"no {kind} with id {obj_id} in the P4Info") from None

    def all(self, kind: str) -> list[Any]:
        return list(self._by_id[kind].values())

    def match_field(self, table: Any, field_name: str) -> Any:
        for mf in table.match_fields:
            if mf.name == field_name or mf.name.split(".")[-1] == field_name:
                return mf
        known = ", ".join(mf.name for mf in table.match_fields)
        raise ValueError(f"table {table.preamble.name}: no match field {field_name!r} (fields: {known})")

    def action_param(self, action: Any, param_name: str) -> Any:
        for p in action.params:
            if p.name == param_name:
                return p
        known = ", ".join(p.name for p in action.params)
        raise ValueError(f"action {action.preamble.name}: no parameter {param_name!r} (parameters: {known or 'none'})")
