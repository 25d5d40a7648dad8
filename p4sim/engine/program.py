"""What a loaded BMv2 JSON program is: a read-only description plus the packet-state layout.

The dataclasses here are the contract between the JSON loader (program_loader.py) and every
backend that runs a program (the Python code generator, the native backend).

Every packet's state is one flat Python list of ints ("slots"): per header a validity slot followed
by its fields, per stack a next-index slot, and a few hidden slots for v1model intrinsics (exit,
clone, resubmit, recirculate, truncate).  Stack members are laid out consecutively so that
`hdr.stack[i]` is a constant stride away from `hdr.stack[0]`.
"""
from dataclasses import dataclass, field
from typing import Any, TypeAlias

Json: TypeAlias = dict[str, Any]    # one object of a BMv2 JSON program (an expression, a primitive...)


@dataclass(frozen=True)
class FieldInfo:
    header: str
    name: str
    width: int
    signed: bool
    slot: int

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass(frozen=True)
class HeaderInfo:
    name: str
    id: int
    header_type: str
    metadata: bool
    vslot: int  # validity slot; fields follow at vslot+1 ...
    fields: tuple[FieldInfo, ...]
    stack: str | None = None
    index: int = 0

    @property
    def nbits(self) -> int:
        return sum(f.width for f in self.fields)


@dataclass(frozen=True)
class StackInfo:
    name: str
    id: int
    size: int
    headers: tuple[str, ...]
    next_slot: int
    base: int  # vslot of element 0
    stride: int


@dataclass(frozen=True)
class ParamInfo:
    name: str
    width: int


@dataclass(frozen=True)
class ActionInfo:
    name: str
    id: int
    params: tuple[ParamInfo, ...]


@dataclass(frozen=True)
class KeyInfo:
    name: str          # the JSON key "name" (e.g. "hdr.eth.dst"), as P4Info names it
    match_type: str    # exact, lpm, ternary, range, optional, valid
    target: Any        # (header, field), or the header name (str) for "valid" (as the JSON has it)
    width: int
    mask: int | None


@dataclass(frozen=True)
class DefaultEntryInfo:
    action_id: int
    action: str
    args: tuple[int, ...]
    action_const: bool
    action_entry_const: bool


@dataclass(frozen=True)
class TableInfo:
    name: str
    id: int
    pipeline: str
    match_type: str
    keys: tuple[KeyInfo, ...]
    action_ids: tuple[int, ...]
    actions: tuple[str, ...]
    max_size: int
    direct_counter: str | None
    direct_meter: str | None
    default_entry: DefaultEntryInfo | None
    const_entries: tuple   # raw JSON entries (immutable table when non-empty)
    next_tables: dict
    base_default_next: str | None

    @property
    def needs_priority(self) -> bool:
        return any(k.match_type in ("ternary", "range", "optional") for k in self.keys)

    @property
    def is_const(self) -> bool:
        return bool(self.const_entries)


@dataclass(frozen=True)
class RegisterInfo:
    name: str
    id: int
    size: int
    width: int


@dataclass(frozen=True)
class CounterInfo:
    name: str
    id: int
    size: int
    direct: bool
    binding: str | None


@dataclass(frozen=True)
class MeterInfo:
    name: str
    id: int
    size: int
    direct: bool
    binding: str | None
    result_target: tuple | None
    type: str = "bytes"     # "bytes" or "packets"


@dataclass
class Program:
    """Read-only description of a loaded program (`Switch.program`)."""
    json: Json
    headers: dict[str, HeaderInfo] = field(default_factory=dict)
    header_ids: dict[int, HeaderInfo] = field(default_factory=dict)    # by JSON id
    stacks: dict[str, StackInfo] = field(default_factory=dict)
    fields: dict[tuple[str, str], FieldInfo] = field(default_factory=dict)  # (header, field) -> info
    actions: dict[int, ActionInfo] = field(default_factory=dict)       # by id
    tables: dict[str, TableInfo] = field(default_factory=dict)
    registers: dict[str, RegisterInfo] = field(default_factory=dict)
    counters: dict[str, CounterInfo] = field(default_factory=dict)
    meters: dict[str, MeterInfo] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    field_lists: dict[int, list[tuple[str, str]]] = field(default_factory=dict)   # id -> (header, field)s
    parse_vsets: dict[str, int] = field(default_factory=dict)  # name -> compressed bitwidth
    nslots: int = 0
    hidden: dict[str, int] = field(default_factory=dict)       # hidden slot name -> slot

    def action_by_name(self, name: str) -> ActionInfo | None:
        for a in self.actions.values():
            if a.name == name:
                return a
        return None

    def table_by_id(self, table_id: int) -> TableInfo | None:
        for t in self.tables.values():
            if t.id == table_id:
                return t
        return None

    def field_slot(self, header: str, fname: str) -> int:
        return self.fields[(header, fname)].slot


HIDDEN_SLOTS = ("exit", "clone_pending", "clone_session", "clone_field_list", "resubmit",
                "resubmit_field_list", "recirculate", "recirculate_field_list", "truncate",
                "drop_reason")

STANDARD_FIELDS = {  # v1model standard_metadata fields the traffic manager needs
    "ingress_port": 9, "egress_spec": 9, "egress_port": 9, "instance_type": 32,
    "packet_length": 32, "mcast_grp": 16, "egress_rid": 16, "checksum_error": 1,
    "parser_error": 32, "enq_timestamp": 32, "ingress_global_timestamp": 48,
    "egress_global_timestamp": 48,
}
