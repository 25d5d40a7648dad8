"""Text rendering of what controller/inspection.py gathers (the CLI's and the shell's output)."""
from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from p4reduce.controller.inspection import format_value
from p4reduce.protocol import constants, p4names
from p4reduce.protocol.job_api import tree_text


def jobs_text(jobs: list[dict[str, Any]]) -> str:
    if not jobs:
        return "no jobs"
    rows = [("JOB", "ID", "STATE", "MODE", "WORKERS", "SLOTS", "GROUP", "MEMBERS")]
    for j in jobs:
        members = " ".join(f"{m['rank']}={m['ip']}:{m['udp_port']}@{m.get('port')}"
                           for m in sorted(j.get("members", []), key=lambda m: m["rank"]))
        state = j.get("state") or ("running" if len(j.get("members", [])) == j["workers"] else "waiting")
        if state == "running" and j.get("path") == "fallback":
            state = "degraded"
        group = j.get("multicast_group", j.get("mcast_grp", ""))
        s = j["slots"]
        rows.append((j["name"], str(j["job_id"]), state, j["mode"], f"{len(j.get('members', []))}/{j['workers']}",
                     f"[{s['base']}, {s['base'] + s['count']})", str(group), members or "-"))
    text = _table(rows)
    trees = [tree_text(j) for j in jobs if isinstance(j.get("tree"), dict)]
    if trees:
        text += "\n" + "\n".join(trees)
    degraded = [f"  {j['name']}: {j.get('path_reason', '')}" for j in jobs if j.get("path") == "fallback"]
    if degraded:
        text += "\ndegraded (calls on the host fallback, not the switch):\n" + "\n".join(degraded)
    return text


def slot_map_text(slot_map: list[dict[str, Any]]) -> str:
    total = sum(r["count"] for r in slot_map)
    lines = [f"slot map ({total} slots):"]
    for r in slot_map:
        owner = r["job"] if r["job"] is not None else "(free)"
        lines.append(f"  [{r['base']:>5}, {r['base'] + r['count']:>5})  {r['count']:>5} slots  {owner}")
    return "\n".join(lines)


def _register_type(reg: dict[str, Any]) -> str:
    """The register's P4 type, and how its values are shown when that differs."""
    p4type = reg.get("type") or f"{'int' if reg['signed'] else 'bit'}<{reg['bitwidth']}>"
    if reg["signed"] and p4type.startswith("bit"):
        return f"{p4type}, shown signed: int32 lanes"
    return p4type


def register_text(reg: dict[str, Any]) -> str:
    lines = [f"{reg['register']} (size {reg['size']}, {_register_type(reg)})"]
    for i, v in reg["values"].items():
        lines.append(f"  [{i}] {v}")
    return "\n".join(lines)


def register_list_text(registers: Sequence[dict[str, Any]]) -> str:
    """One line per register; the lane registers, a grid of sbK.lJ, in one line."""
    lines, lanes = [], []
    for reg in registers:
        if p4names.is_lane_register(reg["register"]):
            lanes.append(reg)
            continue
        lines.append(f"  {reg['register']:<44} size {reg['size']:>6}  {_register_type(reg)}")
    if lanes:
        k, j = p4names.lane_layout(r["register"] for r in lanes)
        lines.append(f"  {p4names.lane_register(0, 0).rsplit('.', 2)[0]}.sb{{0..{k - 1}}}.l{{0..{j - 1}}}"
                     f"  {len(lanes)} lane registers, size {lanes[0]['size']}, {_register_type(lanes[0])}")
    return "registers (index = 2 * slot + ver):\n" + "\n".join(lines) if lines else "no registers"


def counter_list_text(counters: Sequence[dict[str, Any]]) -> str:
    if not counters:
        return "no counters"
    lines = ["counters:"]
    for c in counters:
        lines.append(f"  {c['counter']:<44} size {c['size']:>4}")
        named = " ".join(f"{i}={n}" for i, n in sorted(c["labels"].items()))
        if named:
            lines += textwrap.wrap(named, 96, initial_indent="    cells: ", subsequent_indent=" " * 11)
    return "\n".join(lines)


def slot_text(info: dict[str, Any]) -> str:
    head = f"slot {info['slot']}"
    if info["job"] is not None:
        head += f" (job {info['job']}, job slot {info['job_slot']})"
    lines = [head]
    for c in info["copies"]:
        state = " ".join(f"{k}={c[k]}" for k in ("count", "round_offset", "min_next", "max_exp", "have_result")
                         if k in c)
        lines.append(f"  ver {c['ver']} (register index {c['index']}): seen={c.get('seen', 0):#x} "
                     f"ranks {c['seen_ranks']} union_bitmap={c.get('union_bitmap', 0):#x} {state}")
        lanes, sub = c["lanes"], info.get("subblock", constants.SUBBLOCK)
        for k in range(0, len(lanes) // sub):
            chunk = lanes[k * sub:(k + 1) * sub]
            mark = "*" if k in c["union_subblocks"] else " "
            lines.append(f"    sb{k}{mark} " + " ".join(f"{v:>11}" for v in chunk))
    return "\n".join(lines)


def counters_text(counters: list[dict[str, Any]]) -> str:
    lines = []
    for ctr in counters:
        lines.append(ctr["counter"])
        for cell in ctr["cells"]:
            if cell["label"] is None and ctr.get("labelled"):
                continue  # indices the protocol does not use
            label = cell["label"] or ""
            lines.append(f"  [{cell['index']:>3}] {label:<18} {cell['packets']:>10} pkts {cell['bytes']:>12} bytes")
    return "\n".join(lines) or "no counters"


def entries_text(entries: list[dict[str, Any]]) -> str:
    if not entries:
        return "no entries"
    lines = []
    for e in entries:
        match = ", ".join(f"{k}={format_value(k, v)}" for k, v in e["match"].items())
        params = ", ".join(f"{k}={format_value(k, v)}" for k, v in e["params"].items())
        prio = f" priority {e['priority']}" if e["priority"] else ""
        lines.append(f"{e['table']}: {match or '*'} -> {e['action']}({params}){prio}")
    return "\n".join(lines)


def groups_text(groups: list[dict[str, Any]]) -> str:
    if not groups:
        return "no multicast groups"
    return "\n".join(f"group {g['group']}: " + ", ".join(f"port {r['port']} rid {r['instance']}"
                                                         for r in g["replicas"]) for g in groups)


def _table(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
