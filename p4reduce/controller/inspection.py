"""Looking inside a live switch: jobs, slot map, registers, slot copies, counters, entries, groups.

Everything here only reads (no arbitration needed), returns plain data (dicts and lists, ready for
--json), and is shared by the non-interactive CLI and the interactive shell. Text rendering is in
controller/report.py.
"""
from __future__ import annotations

import enum
import re
from typing import Any

from p4reduce.controller.codec import format_ipv4, format_mac, to_signed
from p4reduce.controller.connection import SwitchConnection, TlsClient
from p4reduce.controller.entities import (
    all_multicast_groups,
    counter_entry,
    decode_multicast_group,
    decode_table_entry,
    table_entry,
)
from p4reduce.controller.errors import SwitchError
from p4reduce.controller.job_programmer import JobProgrammer, program_layout, slot_pool_size
from p4reduce.controller.p4info import P4InfoIndex
from p4reduce.controller.registers import RegisterAccess, open_register_access, thrift_address
from p4reduce.protocol import constants, p4names

SLOT_STATE_REGISTERS = (p4names.SEEN, p4names.COUNT, p4names.ROUND_OFFSET, p4names.UNION_BITMAP,
                        p4names.MIN_NEXT, p4names.MAX_EXP, p4names.HAVE_RESULT)


def counter_labels() -> dict[str, dict[int, str]]:
    """{counter name: {index: label}} from the protocol's enums ("Indices of counter NAME.")."""
    labels = {}
    for obj in vars(constants).values():
        if isinstance(obj, type) and issubclass(obj, enum.IntEnum) and obj.__doc__:
            for word in obj.__doc__.replace(",", " ").split():
                name = word.strip(".`'\"")
                if name.startswith((p4names.INGRESS + ".", p4names.EGRESS + ".")):
                    labels[name] = {int(m): m.name for m in obj}
    if p4names.DROP_REASONS in labels:  # egress drops are indexed by DropReason too
        labels.setdefault(p4names.EGRESS_DROPS, labels[p4names.DROP_REASONS])
    return labels


class SwitchInspector:
    def __init__(self, conn: SwitchConnection, registers: RegisterAccess | None = None):
        self.conn = conn
        self.registers = registers

    @property
    def index(self) -> P4InfoIndex:
        return self.conn.pipeline

    # -- jobs and slots ------------------------------------------------------------------------
    def jobs(self) -> list[dict[str, Any]]:
        """Jobs as installed on the switch (read back from the tables)."""
        if not self.index.has("table", p4names.JOBS):
            return []
        return sorted(JobProgrammer(self.conn).read_back(), key=lambda j: j["slots"]["base"])

    def slot_map(self, extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """[{base, count, job}] covering the whole slot space (job None = free); `extra`: more
        allocations ({name, slots: {base, count}}), e.g. the controller's jobs not on the switch."""
        total = slot_pool_size(self.index)
        used = sorted((j["slots"]["base"], j["slots"]["count"], j["name"]) for j in [*self.jobs(), *(extra or [])])
        out, cursor = [], 0
        for base, count, name in used:
            if base > cursor:
                out.append({"base": cursor, "count": base - cursor, "job": None})
            out.append({"base": base, "count": count, "job": name})
            cursor = max(cursor, base + count)
        if cursor < total:
            out.append({"base": cursor, "count": total - cursor, "job": None})
        return out

    # -- registers -----------------------------------------------------------------------------
    def _need_registers(self) -> RegisterAccess:
        if self.registers is None:
            raise ValueError("no register access (the switch does not implement P4Runtime registers; "
                             "give --thrift-port)")
        return self.registers

    def register_info(self, name: str) -> tuple[str, int, int, bool, str]:
        """(full name, size, bit width, signed): int<N> registers, and the lane registers, whose
        bit<32> cells hold signed int32 sums, are shown signed (as slot() shows the lanes)."""
        reg = self.index.get("register", _register_alias(name))
        spec = reg.type_spec.bitstring
        kind = spec.WhichOneof("type_spec")
        width = getattr(spec, kind).bitwidth if kind else 0
        full = reg.preamble.name
        return full, reg.size, width, kind == "int" or p4names.is_lane_register(full), f"{kind or 'bit'}<{width}>"

    def register_list(self) -> list[dict[str, Any]]:
        """[{register, size, bitwidth, signed}] of every register of the program, by name."""
        out = []
        for reg in self.index.all("register"):
            full, size, width, signed, p4type = self.register_info(reg.preamble.name)
            out.append({"register": full, "size": size, "bitwidth": width, "signed": signed, "type": p4type})
        return sorted(out, key=lambda r: _natural(r["register"]))

    def counter_list(self) -> list[dict[str, Any]]:
        """[{counter, size, labels}] of every indirect counter, with the protocol's cell names."""
        labels = counter_labels()
        return sorted(({"counter": c.preamble.name, "size": c.size,
                        "labels": labels.get(c.preamble.name, {})} for c in self.index.all("counter")),
                      key=lambda c: c["counter"])

    def register(self, name: str, index: int | None = None, start: int | None = None,
                 stop: int | None = None) -> dict[str, Any]:
        """{"register", "size", "bitwidth", "signed", "type", "values": {index: value}}; signed
        registers (register_info) decoded as two's complement."""
        regs = self._need_registers()
        full, size, width, signed, p4type = self.register_info(name)
        for what, i in (("index", index), ("range start", start)):
            if i is not None and not 0 <= i < size:
                raise ValueError(f"register {full}: {what} {i} is outside 0..{size - 1}")
        if stop is not None and not (start or 0) < stop <= size:
            raise ValueError(f"register {full}: range end {stop} must be in {(start or 0) + 1}..{size}")
        if index is not None:
            values = regs.read(full, index)
        elif start is not None or stop is not None:
            values = regs.read_range(full, start or 0, size if stop is None else stop)
        else:
            values = regs.read(full)
        if signed:
            values = {i: to_signed(v & ((1 << width) - 1), width) for i, v in values.items()}
        return {"register": full, "size": size, "bitwidth": width, "signed": signed, "type": p4type,
                "values": dict(sorted(values.items()))}

    def slot(self, slot: int, ver: int | None = None, job: str | None = None) -> dict[str, Any]:
        """One slot decoded per docs/protocol.md: state registers and lanes, for both copies (or
        `ver`). `slot` is absolute, or relative to `job` (a job name) when given."""
        base = 0
        if job is not None:
            match = [j for j in self.jobs() if j["name"] == job or str(j["job_id"]) == str(job)]
            if not match:
                raise ValueError(f"no job {job!r} on the switch")
            base = match[0]["slots"]["base"]
            if not 0 <= slot < match[0]["slots"]["count"]:
                raise ValueError(f"job {job!r} has slots 0..{match[0]['slots']['count'] - 1}, not {slot}")
        absolute = base + slot
        total = slot_pool_size(self.index)
        if not 0 <= absolute < total:
            raise ValueError(f"slot {absolute} is outside 0..{total - 1}")
        regs = self._need_registers()
        layout = program_layout(self.index)   # the layout the program was built with
        copies = []
        for v in ((0, 1) if ver is None else (ver,)):
            i = p4names.register_index(absolute, 0, v)
            state = {}
            for name in SLOT_STATE_REGISTERS:
                if self.index.has("register", name):
                    state[name.split(".")[-1]] = regs.read(name, i)[i]
            lanes = []
            for k in range(layout.num_subblocks):
                for lane in range(layout.subblock):
                    name = p4names.lane_register(k, lane)
                    if self.index.has("register", name):
                        lanes.append(to_signed(regs.read(name, i)[i] & 0xFFFFFFFF, 32))
            seen = state.get("seen", 0)
            copies.append({"ver": v, "index": i, **state,
                           "seen_ranks": [r for r in range(constants.MAX_WORKERS) if seen >> r & 1],
                           "union_subblocks": [k for k in range(layout.num_subblocks)
                                               if state.get("union_bitmap", 0) >> k & 1],
                           "lanes": lanes})
        return {"slot": absolute, "job_slot": slot if job is not None else None, "job": job,
                "lanes": layout.lanes, "subblock": layout.subblock, "copies": copies}

    # -- counters ------------------------------------------------------------------------------
    def counters(self, name: str | None = None) -> list[dict[str, Any]]:
        """Indirect counters; drop_reasons and agg_events cells are named per the protocol."""
        names = [name] if name else [c.preamble.name for c in self.index.all("counter")]
        labels = counter_labels()
        out = []
        for n in names:
            ctr = self.index.get("counter", n)
            full = ctr.preamble.name
            cells = []
            for ent in self.conn.read(counter_entry(self.index, full)):
                ce = ent.counter_entry
                i = ce.index.index
                cells.append({"index": i, "label": labels.get(full, {}).get(i),
                              "packets": ce.data.packet_count, "bytes": ce.data.byte_count})
            out.append({"counter": full, "labelled": full in labels,
                        "cells": sorted(cells, key=lambda c: c["index"])})
        return out

    # -- tables and groups ---------------------------------------------------------------------
    def entries(self, table: str | None = None) -> list[dict[str, Any]]:
        tables = [table] if table else [t.preamble.name for t in self.index.all("table")]
        out = []
        for t in tables:
            full = self.index.get("table", t).preamble.name
            for ent in self.conn.read(table_entry(self.index, full)):
                d = decode_table_entry(self.index, ent.table_entry)
                if not d["is_default"]:
                    out.append(d)
        return out

    def multicast_groups(self) -> list[dict[str, Any]]:
        groups = []
        for ent in self.conn.read(all_multicast_groups()):
            group, replicas = decode_multicast_group(ent)
            groups.append({"group": group, "replicas": [{"port": p, "instance": i} for p, i in replicas]})
        return sorted(groups, key=lambda g: g["group"])


def _register_alias(name: str) -> str:
    """The lane registers' old spelling sbK_lJ stands for sbK.lJ (p4names.lane_register)."""
    match = re.fullmatch(r"sb(\d+)_l(\d+)", str(name))
    return p4names.lane_register(int(match[1]), int(match[2])) if match else name


def _natural(name: str) -> list[int | str]:
    """Sort key that puts sb2 before sb10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def open_inspector(grpc_addr: str, device_id: int = 0, wait: float = 5.0, thrift_port: int | None = None,
                   registers: bool = False, tls: TlsClient | None = None) -> SwitchInspector:
    """A SwitchInspector on the switch at `grpc_addr`, connected read-only (no arbitration, so
    the running controller is not disturbed); with registers=True, register access too (over
    P4Runtime, or BMv2's Thrift API at `thrift_port`). Fails clearly when the switch runs nothing."""
    conn = SwitchConnection(grpc_addr, device_id, 1, tls=tls).connect(wait, arbitrate=False, report=lambda m: None)
    index, _ = conn.fetch_pipeline()
    if index is None:
        raise SwitchError(f"switch {grpc_addr} runs no program yet")
    regs = open_register_access(conn, thrift_address(grpc_addr, thrift_port)) if registers else None
    return SwitchInspector(conn, regs)


def format_value(field_name: str, value: Any) -> str:
    """Human form of a match/param value: MACs and IPv4 addresses by field name."""
    low = field_name.lower()
    if isinstance(value, tuple):
        a, b = value
        if ("dst" in low and "ip" in low) or ("addr" in low and "ip" in low):
            return f"{format_ipv4(a)}/{b}"
        return f"{a}/{b}"
    if "mac" in low or "ethernet" in low:
        return format_mac(value)
    if "ipv4" in low or low.endswith(".ip") or low == "ip":
        return format_ipv4(value)
    return str(value)
