"""A Markdown summary of a result document, for the README and docs/benchmarks.md to quote.

Written beside the JSON as <stem>.md (and latest-<mode>.md): the command, the machine, and the
headline tables (time and bytes per allreduce, sparse speed-ups, switch packet rates).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from p4reduce.bench.aggregate import speedup
from p4reduce.bench.report import human_bytes, human_size, human_time


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def _status(c) -> str:
    return "ok" if c["status"] == "ok" else c["status"]


def render(doc: dict) -> str:
    m = doc["machine"]
    lines = [f"Measured {doc['created']} with `{doc['command']}` on {m['cpu_model']} "
             f"({m['cores']} cores), Linux {m['kernel']}, Python {m['python']}.", ""]
    sections = doc["sections"]
    ar = sections.get("allreduce", {})
    if ar.get("cells"):
        nets = sorted({n["switch_detail"] for n in ar.get("networks", [])})
        links = sorted({(n["link"]["name"], n["link"]["applied"]) for n in ar.get("networks", [])})
        lines += [f"Switch: {'; '.join(nets)}. Links: "
                  + "; ".join(f"`{a}` = {b}" for a, b in links) + ".", ""]
        gloo = {(c["workers"], c["link"], c["size"]): c for c in ar["cells"]
                if c["system"] == "gloo" and c["status"] == "ok"}
        rows = []
        for c in ar["cells"]:
            if "time_s" not in c:
                continue
            ref = gloo.get((c["workers"], c["link"], c["size"]))
            sp = speedup(ref["time_s"]["median"], c["time_s"]["median"]) if ref else None
            rows.append([c["system"], c["workers"], c["link"], human_size(c["size"]),
                         human_time(c["time_s"]["median"]),
                         human_bytes(c["wire_tx_bytes_per_worker"]["mean"]),
                         f"{c['tx_over_tensor']:.2f}", f"{sp:.2f}x" if sp else "-", _status(c)])
        lines += _table(["system", "workers", "link", "elements", "time/allreduce", "sent/worker",
                         "sent/tensor", "vs gloo", "result"], rows) + [""]
    sp_cells = [c for c in sections.get("sparsity", {}).get("cells", []) if "time_s" in c]
    if sp_cells:
        dense = {c["link"]: c for c in sp_cells if c["density"] == 1.0}
        rows = []
        for c in sp_cells:
            ref = dense.get(c["link"])
            t = speedup(ref["time_s"]["median"], c["time_s"]["median"]) if ref else None
            b = speedup(ref["wire_tx_bytes_per_worker"]["mean"], c["wire_tx_bytes_per_worker"]["mean"]) if ref else None
            rows.append([c["link"], f"{c['density'] * 100:g}%", human_time(c["time_s"]["median"]),
                         human_bytes(c["wire_tx_bytes_per_worker"]["mean"]),
                         f"{t:.1f}x" if t else "-", f"{b:.1f}x" if b else "-",
                         f"{1 / c['density']:.0f}x", _status(c)])
        lines += [f"p4reduce sparse vs dense ({sp_cells[0]['workers']} workers, "
                  f"{human_size(sp_cells[0]['size'])} elements):", ""]
        lines += _table(["link", "density", "time", "sent/worker", "time speed-up",
                         "bytes reduction", "ideal", "result"], rows) + [""]
    rate_rows = []
    for part in sections.get("switch-rate", {}).values():
        if isinstance(part, dict):
            rate_rows += [r for r in part.get("rows", []) if isinstance(r.get("pps"), (int, float))]
    if rate_rows:
        lines += ["Switch packet rate (aggregation rows: contributions aggregated per second):", ""]
        lines += _table(["case", "packets/s"], [[r["case"], f"{r['pps']:,.0f}"] for r in rate_rows])
        veth = sections["switch-rate"].get("veth", {})
        for key, value in veth.items():
            if key.startswith("ratio_p4sim"):
                lines.append(f"\np4sim-switch / simple_switch_grpc on veth: {value:.2f}")
        lines.append("")
    enc = [r for r in sections.get("encode", {}).get("rows", []) if isinstance(r, dict)]
    if enc and all(isinstance(r.get("elements_per_s"), (int, float)) for r in enc):
        lines += ["Worker encode throughput (one core):", ""]
        lines += _table(["compressor", "M elements/s"],
                        [[r.get("case", r.get("compressor", "?")), f"{r['elements_per_s'] / 1e6:.1f}"]
                         for r in enc]) + [""]
    return "\n".join(lines)
