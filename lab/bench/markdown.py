"""A Markdown summary of a result document, for the README and docs/benchmarks.md to quote.

Written beside the JSON as <stem>.md (and latest-<mode>.md): the command, the machine, and the
headline tables (time and bytes per allreduce, sparse speed-ups, switch packet rates).
"""
from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import Any

from lab.bench.aggregate import speedup
from lab.bench.aggregation_program import display
from lab.bench.grid import JUMBO_DEFINES
from lab.bench.report import (
    HIERARCHY_HEADERS,
    LOSS_HEADERS,
    TRAINING_HEADERS,
    hierarchy_rows,
    hierarchy_target_lines,
    human_bytes,
    human_size,
    human_time,
    loss_rows,
    target_lines,
    time_ratio,
    training_rows,
)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def _status(c) -> str:
    return "ok" if c["status"] == "ok" else c["status"]


def comparison(ar: dict) -> list[str]:
    """The switch and links of an allreduce-style section, and its table with the ratios."""
    lines: list[str] = []
    if not ar.get("cells"):
        return lines
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
        ratio = time_ratio(c, gloo.get((c["workers"], c["link"], c["size"])))
        rows.append([c["system"], c["workers"], c["link"], human_size(c["size"]),
                     human_time(c["time_s"]["median"]),
                     human_bytes(c["wire_tx_bytes_per_worker"]["mean"]),
                     f"{c['tx_over_tensor']:.2f}", f"{ratio:.2f}x" if ratio else "-",
                     human_time(c["link_bound_s"]) if "link_bound_s" in c else "-",
                     f"{c['time_over_link_bound']:.2f}x" if "time_over_link_bound" in c else "-",
                     f"{c['retransmitted_fraction'] * 100:.2f}%" if "retransmitted_fraction" in c else "-",
                     _status(c)])
    lines += ["Per cell: time per allreduce (slowest worker, median), bytes sent per worker per "
              "allreduce (interface counters), time over gloo's ring on the same links (below 1x: "
              "faster than the ring), and on shaped links the link-rate bound (bytes that must "
              "cross the busiest link / link rate, bench/bounds.py) and the time over it; for p4reduce the "
              "packets it retransmitted (all spurious on loss-free links).", ""]
    lines += _table(["system", "workers", "link", "elements", "time/allreduce", "sent/worker",
                     "sent/tensor", "time/gloo", "link bound", "time/bound", "retransmitted",
                     "result"], rows) + [""]
    return lines


def training_summary(doc: dict) -> list[str]:
    """The training section: what was trained and how, the table, the targets."""
    section = doc["sections"].get("training", {})
    train = section.get("cells", [])
    if not train:
        return [f"Training section: {section['status']}: {section.get('error', '')}", ""] \
            if section.get("status") not in (None, "ok") else []
    from lab.bench.train_models import MODELS
    models = list(dict.fromkeys(c.get("model", "mlp") for c in train))
    iterations = section.get("iterations", {})
    lines = ["Training (is my training faster?): torch DDP as PyTorch ships it on gloo (default bucket size, "
             "no hook) vs the same DDP program on `backend=\"p4reduce\"` (fixed point, no lossy compressor) "
             "vs DDP with p4reduce's comm hook; same model, batches, data, seed and torch thread count (1); "
             "32 samples per worker per iteration. Per iteration: slowest worker's medians; compute measured "
             "with gradient averaging off, communication = the rest (what averaging adds that backward "
             "does not hide); bytes from the interface counters; time to target = training time of the "
             "slowest worker until the first evaluation meeting the target. Models:", ""]
    for m in models:
        spec = MODELS[m]
        n = iterations.get(m, next(c.get("iterations") for c in train if c.get("model") == m))
        mode = " (p4reduce on a sparse job: zero blocks skipped)" if m == "embedding" else ""
        lines.append(f"- `{m}`: {spec.description}; {n} timed iterations per run; "
                     f"target {spec.target_text()}{mode}")
    lines.append("")
    lines += _table(TRAINING_HEADERS, training_rows(train)) + [""]
    tl = target_lines(section.get("targets", []))
    if tl:
        lines += ["Targets (issue 27, the backend's default path):", ""] + [f"- {t}" for t in tl] + [""]
    return lines


def render(doc: dict) -> str:
    m = doc["machine"]
    lines = [f"Measured {doc['created']} with `{doc['command']}` on {m['cpu_model']} "
             f"({m['cores']} cores), Linux {m['kernel']}, Python {m['python']}.", ""]
    sections = doc["sections"]
    lines += comparison(sections.get("allreduce", {}))
    jumbo = sections.get("jumbo", {})
    if jumbo.get("cells"):
        program = doc.get("grid", {}).get("jumbo_program")
        built = f"`{display(pathlib.Path(program))}`" if program else "the jumbo build"
        lines += [f"The same comparison on jumbo-frame links (MTU 9000 on every interface, gloo's "
                  f"too), p4reduce running {built} ({' '.join(JUMBO_DEFINES)}):", ""]
        lines += comparison(jumbo)
    elif jumbo.get("status") not in (None, "ok"):
        lines += [f"Jumbo-frame section: {jumbo['status']}: {jumbo.get('error', '')}", ""]
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
    loss = [c for c in sections.get("loss", {}).get("cells", [])]
    if loss:
        lines += [f"p4reduce dense under random loss on every link, each direction ({loss[0]['workers']} "
                  f"workers; 'retransmitted': retransmissions / packets sent, whole run):", ""]
        lines += _table(LOSS_HEADERS, loss_rows(loss)) + [""]
    lines += training_summary(doc)
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
    lines += faults_lines(sections.get("faults", {}))
    lines += hierarchy_lines(sections.get("hierarchy", {}))
    return "\n".join(lines)


def faults_lines(f: dict[str, Any]) -> list[str]:
    """The faults section (bench/faults.py): each kill's figures, the job without slots, the targets."""
    if not isinstance(f, dict) or not f.get("kills"):
        return []
    def s(v: Any) -> str:
        return "-" if v is None else f"{v:.2f} s" if isinstance(v, float) else str(v)
    pause = f", {f['pause_s']:g} s apart (a step's compute)" if f.get("pause_s") else ""
    after = f.get("kill_after_calls") or []
    when = f" after call {after[0]}" if after else ""
    when += f" and, once the job had been back on the switch for 2 calls, after call {after[1]}" \
        if len(after) > 1 else ""
    lines = [f"The switch killed (SIGKILL) mid-run{when}, {f.get('workers')} workers, {f.get('calls')} calls of "
             f"{f.get('elements'):,} int32{pause} ({f.get('target', '')}): lost or wrong calls "
             f"{f.get('lost_or_wrong_calls')}", ""]
    rows = [[i + 1, s(k.get("detect_first_s")), s(k.get("detect_last_s")), s(k.get("restore_s")),
             s(k.get("redo_call_s")), s(k.get("gloo_call_s")), s(k.get("back_after_restore_s")),
             s(k.get("back_after_restore_calls"))] for i, k in enumerate(f["kills"])]
    lines += _table(["kill", "detected (first)", "detected (last)", "switch restored", "redone call",
                     "gloo call", "back on switch after restore", "calls until back"], rows) + [""]
    slots = f.get("slots_exhausted") or {}
    if slots:
        verdict = "exact" if slots.get("exact") else "NOT exact"
        lines += [f"No free slots: the job ran on the host fallback ({verdict}), {s(slots.get('fallback_call_s'))} "
                  f"per call, next to {s(f.get('switch_call_s'))} on the switch.", ""]
    met = f.get("met") or {}
    if met:
        lines += ["Targets: " + "; ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in met.items()), ""]
    return lines


def hierarchy_lines(h: dict[str, Any]) -> list[str]:
    """The hierarchy section (bench/hierarchy.py): networks and links, the table, issue #23's targets."""
    if not isinstance(h, dict) or not h.get("cells"):
        return [f"Hierarchy section: {h['status']}: {h.get('error', '')}", ""] \
            if isinstance(h, dict) and h.get("status") not in (None, "ok") else []
    nets = {n["network"]: n for n in h.get("networks", [])}
    links = {n["link"]: n["link_applied"] for n in h.get("networks", [])}
    detail = sorted({n["switch_detail"] for n in nets.values()})
    lines = [f"Aggregation across switches (issue #23), {h.get('workers')} workers, {h.get('reps')} repetitions "
             f"after {h.get('warmup')} warm-up: "
             + "; ".join(f"`{name}` = {n['shape']}" for name, n in nets.items()) + ". "
             + " ".join(f"{d}." for d in detail) + " Links: "
             + "; ".join(f"`{name}` = hosts {a['hosts']}, uplinks {a['uplinks']}" for name, a in links.items())
             + ".", "",
             "Per cell: time per allreduce (slowest worker, median); bytes per allreduce on the uplinks over "
             "the tensor's bytes, up / down, the largest of the leaves' uplinks and of the aggregation "
             "switches' (kernel counters of each switch's port towards its parent, over the timed loop); "
             "the link bound (the busiest shaped link's bytes in one direction, counted, over its rate) and "
             "the time over it; root-only's time over this cell's (p4reduce through the tree); time over "
             "gloo's ring; the packets p4reduce retransmitted; every p4reduce result checked bit for bit.", ""]
    lines += _table(HIERARCHY_HEADERS, hierarchy_rows(h["cells"])) + [""]
    tl = hierarchy_target_lines(h.get("targets", []))
    if tl:
        lines += ["Targets (issue #23):", ""] + [f"- {t}" for t in tl] + [""]
    return lines
