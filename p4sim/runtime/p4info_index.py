"""Lookups into a P4Info message by id and by name (the P4Runtime view of a program)."""
from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2

from .errors import invalid, not_found

MATCH_TYPE_NAMES = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}


@dataclass
class MatchFieldInfo:
    id: int
    name: str
    bitwidth: int
    match_type: str  # exact | lpm | ternary | range | optional


@dataclass
class ParamInfo:
    id: int
    name: str
    bitwidth: int


@dataclass
class ActionInfo:
    id: int
    name: str
    params: dict[int, ParamInfo]


@dataclass
class TableInfo:
    id: int
    name: str
    match_fields: dict[int, MatchFieldInfo]  # in P4Info order
    action_ids: list[int]
    default_only_action_ids: list[int]
    table_only_action_ids: list[int]
    const_default_action_id: int
    is_const: bool
    size: int
    direct_counter_id: int | None = None
    direct_meter_id: int | None = None
    implementation_id: int = 0
    supports_idle_timeout: bool = False

    @property
    def needs_priority(self) -> bool:
        """Tables with a ternary, range or optional field order entries by priority."""
        return any(f.match_type in ("ternary", "range", "optional") for f in self.match_fields.values())


@dataclass
class SizedInfo:
    """A counter, register or meter array: id, name, size (and bitwidth for registers)."""
    id: int
    name: str
    size: int
    bitwidth: int = 0
    unit: int = 0


@dataclass
class ValueSetInfo:
    """A parser value set: its member fields (concatenated in this order) and capacity."""
    id: int
    name: str
    size: int
    fields: list[MatchFieldInfo]


@dataclass
class DirectCounterInfo:
    id: int
    name: str
    table_id: int
    unit: int


@dataclass
class PacketMetadataInfo:
    id: int
    name: str
    bitwidth: int


@dataclass
class ControllerHeaderInfo:
    """packet_in / packet_out: the @controller_header metadata fields, in wire order."""
    id: int
    name: str
    fields: list[PacketMetadataInfo] = field(default_factory=list)

    @property
    def bitwidth(self) -> int:
        return sum(f.bitwidth for f in self.fields)


class P4InfoIndex:
    """Validated, indexed P4Info. Raises INVALID_ARGUMENT on a malformed P4Info."""

    def __init__(self, p4info: p4info_pb2.P4Info):
        self.p4info = p4info
        self.tables: dict[int, TableInfo] = {}
        self.actions: dict[int, ActionInfo] = {}
        self.counters: dict[int, SizedInfo] = {}
        self.direct_counters: dict[int, DirectCounterInfo] = {}
        self.meters: dict[int, SizedInfo] = {}
        self.direct_meters: dict[int, str] = {}
        self.registers: dict[int, SizedInfo] = {}
        self.controller_headers: dict[str, ControllerHeaderInfo] = {}
        self.value_sets: dict[int, ValueSetInfo] = {}
        self._names: dict[str, dict[str, int]] = {}
        seen_ids = set()

        def claim(kind, preamble):
            if preamble.id == 0:
                raise invalid(f"P4Info {kind} '{preamble.name}' has id 0")
            if preamble.id in seen_ids:
                raise invalid(f"P4Info id {preamble.id} ({kind} '{preamble.name}') is used twice")
            seen_ids.add(preamble.id)
            names = self._names.setdefault(kind, {})
            names[preamble.name] = preamble.id
            if preamble.alias:
                names.setdefault(preamble.alias, preamble.id)

        for action in p4info.actions:
            claim("action", action.preamble)
            self.actions[action.preamble.id] = ActionInfo(
                action.preamble.id, action.preamble.name,
                {p.id: ParamInfo(p.id, p.name, p.bitwidth) for p in action.params})
        for counter in p4info.counters:
            claim("counter", counter.preamble)
            self.counters[counter.preamble.id] = SizedInfo(
                counter.preamble.id, counter.preamble.name, counter.size, unit=counter.spec.unit)
        for counter in p4info.direct_counters:
            claim("direct_counter", counter.preamble)
            self.direct_counters[counter.preamble.id] = DirectCounterInfo(
                counter.preamble.id, counter.preamble.name, counter.direct_table_id, counter.spec.unit)
        for meter in p4info.meters:
            claim("meter", meter.preamble)
            self.meters[meter.preamble.id] = SizedInfo(meter.preamble.id, meter.preamble.name, meter.size)
        for meter in p4info.direct_meters:
            claim("direct_meter", meter.preamble)
            self.direct_meters[meter.preamble.id] = meter.preamble.name
        for register in p4info.registers:
            claim("register", register.preamble)
            spec = register.type_spec
            width = 0
            if spec.HasField("bitstring"):
                kind = spec.bitstring.WhichOneof("type_spec")
                if kind:
                    width = getattr(spec.bitstring, kind).bitwidth
            self.registers[register.preamble.id] = SizedInfo(
                register.preamble.id, register.preamble.name, register.size, bitwidth=width)
        for value_set in p4info.value_sets:
            claim("value_set", value_set.preamble)
            self.value_sets[value_set.preamble.id] = ValueSetInfo(
                value_set.preamble.id, value_set.preamble.name, value_set.size,
                [MatchFieldInfo(m.id, m.name, m.bitwidth, MATCH_TYPE_NAMES.get(m.match_type, "exact"))
                 for m in value_set.match])
        for header in p4info.controller_packet_metadata:
            claim("controller_packet_metadata", header.preamble)
            self.controller_headers[header.preamble.name] = ControllerHeaderInfo(
                header.preamble.id, header.preamble.name,
                [PacketMetadataInfo(m.id, m.name, m.bitwidth) for m in header.metadata])
        for table in p4info.tables:
            claim("table", table.preamble)
            fields = {}
            for mf in table.match_fields:
                if mf.match_type not in MATCH_TYPE_NAMES:
                    raise invalid(f"P4Info table '{table.preamble.name}' field '{mf.name}': "
                                  f"unsupported match type {mf.match_type}")
                fields[mf.id] = MatchFieldInfo(mf.id, mf.name, mf.bitwidth, MATCH_TYPE_NAMES[mf.match_type])
            refs = [ref.id for ref in table.action_refs]
            for ref in refs:
                if ref not in self.actions:
                    raise invalid(f"P4Info table '{table.preamble.name}' refers to unknown action id {ref}")
            info = TableInfo(
                table.preamble.id, table.preamble.name, fields, refs,
                [r.id for r in table.action_refs if r.scope == p4info_pb2.ActionRef.DEFAULT_ONLY],
                [r.id for r in table.action_refs if r.scope == p4info_pb2.ActionRef.TABLE_ONLY],
                table.const_default_action_id, table.is_const_table, table.size,
                implementation_id=table.implementation_id,
                supports_idle_timeout=table.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL)
            for resource in table.direct_resource_ids:
                if resource in self.direct_counters:
                    info.direct_counter_id = resource
                elif resource in self.direct_meters:
                    info.direct_meter_id = resource
            self.tables[info.id] = info

    # -- lookups that raise NOT_FOUND naming the id -------------------------------------------
    def table(self, table_id: int) -> TableInfo:
        try:
            return self.tables[table_id]
        except KeyError:
            raise not_found(f"table id {table_id} is not in the P4Info") from None

    def action(self, action_id: int) -> ActionInfo:
        try:
            return self.actions[action_id]
        except KeyError:
            raise not_found(f"action id {action_id} is not in the P4Info") from None

    def counter(self, counter_id: int) -> SizedInfo:
        try:
            return self.counters[counter_id]
        except KeyError:
            raise not_found(f"counter id {counter_id} is not in the P4Info") from None

    def direct_counter(self, counter_id: int) -> DirectCounterInfo:
        try:
            return self.direct_counters[counter_id]
        except KeyError:
            raise not_found(f"direct counter id {counter_id} is not in the P4Info") from None

    def meter(self, meter_id: int) -> SizedInfo:
        try:
            return self.meters[meter_id]
        except KeyError:
            raise not_found(f"meter id {meter_id} is not in the P4Info") from None

    def value_set(self, value_set_id: int) -> "ValueSetInfo":
        try:
            return self.value_sets[value_set_id]
        except KeyError:
            raise not_found(f"value set id {value_set_id} is not in the P4Info") from None

    def register(self, register_id: int) -> SizedInfo:
        try:
            return self.registers[register_id]
        except KeyError:
            raise not_found(f"register id {register_id} is not in the P4Info") from None

    def id_of(self, kind: str, name: str) -> int:
        """Id of a named object (full name or alias); KeyError if absent."""
        return self._names[kind][name]
