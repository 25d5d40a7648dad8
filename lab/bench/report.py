"""The printed summary of a run: one table per section, plain text, widths fitted to content."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lab.bench.aggregate import speedup


def human_size(n: int) -> str:
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def human_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n:.0f} B"


def human_time(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} us"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(headers)]
    def line(cells: Sequence[Any]) -> str:
        return "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _status(cell) -> str:
    if cell["status"] == "ok":
        return "ok"
    text = " ".join(f"{cell['status']}: {cell.get('error', '')}".split())
    return text if len(text) <= 90 else text[:87] + "..."


def allreduce_table(cells: list[dict]) -> str:
    gloo = {(c["workers"], c["link"], c["size"]): c for c in cells
            if c["system"] == "gloo" and c["status"] == "ok"}
    rows = []
    for c in cells:
        ok = "time_s" in c  # measured (a wrong result still shows its time, flagged in status)
        ref = gloo.get((c["workers"], c["link"], c["size"]))
        ratio = time_ratio(c, ref) if ok else None
        rows.append([c["system"], c["workers"], c["link"], human_size(c["size"]),
                     human_time(c["time_s"]["median"]) if ok else "-",
                     human_bytes(c["wire_tx_bytes_per_worker"]["mean"]) if ok else "-",
                     human_bytes(c["wire_rx_bytes_per_worker"]["mean"]) if ok else "-",
                     f"{c['tx_over_tensor']:.2f}" if ok else "-",
                     f"{ratio:.2f}x" if ratio else "-",
                     human_time(c["link_bound_s"]) if "link_bound_s" in c else "-",
                     f"{c['time_over_link_bound']:.2f}x" if "time_over_link_bound" in c else "-",
                     _status(c)])
    return format_table(["system", "N", "link", "elems", "time/allreduce", "tx/worker", "rx/worker",
                         "tx/tensor", "time/gloo", "link bound", "time/bound", "status"], rows)


def time_ratio(cell: dict, gloo_cell: dict | None) -> float | None:
    """The cell's time over gloo's ring on the same workers, link and size (lower is faster)."""
    if not gloo_cell or "time_s" not in cell:
        return None
    base = gloo_cell["time_s"]["median"]
    return cell["time_s"]["median"] / base if base else None


def sparsity_table(cells: list[dict]) -> str:
    dense = {(c["workers"], c["link"]): c for c in cells
             if c["density"] == 1.0 and c["status"] == "ok"}
    rows = []
    for c in cells:
        ok = "time_s" in c
        ref = dense.get((c["workers"], c["link"]))
        sp = speedup(ref["time_s"]["median"], c["time_s"]["median"]) if ok and ref else None
        rows.append([c["link"], f"{c['density'] * 100:g}%", human_size(c["size"]),
                     human_time(c["time_s"]["median"]) if ok else "-",
                     human_bytes(c["wire_tx_bytes_per_worker"]["mean"]) if ok else "-",
                     f"{sp:.2f}x" if sp else "-", f"{1 / c['density']:.0f}x", _status(c)])
    return format_table(["link", "density", "elems", "time", "tx/worker", "speed-up", "ideal",
                         "status"], rows)


def loss_rows(cells: list[dict]) -> list[list[str]]:
    """p4reduce under loss: time, against the loss-free cell (the first link), retransmissions."""
    base = next((c for c in cells if c["link"] == "unshaped" and "time_s" in c), None)
    rows = []
    for c in cells:
        ok = "time_s" in c
        ratio = c["time_s"]["median"] / base["time_s"]["median"] if ok and base else None
        rows.append([c["link"], human_size(c["size"]), human_time(c["time_s"]["median"]) if ok else "-",
                     f"{ratio:.2f}x" if ratio else "-",
                     f"{c['retransmitted_fraction'] * 100:.2f}%" if "retransmitted_fraction" in c else "-",
                     _status(c)])
    return rows


def _metric_text(c: dict) -> str:
    if c.get("metric") == "loss":
        return f"loss {c['final_metric']:.3f}"
    return f"{c['final_metric'] * 100:.2f} %"


def _ratio(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else "-"


def training_rows(cells: list[dict]) -> list[list[str]]:
    """Each training cell: time per iteration split, its ratio to gloo DDP on the same network and
    model, bytes sent per worker per iteration, the final metric, time to the model's target."""
    rows = []
    for c in cells:
        head = [c["system"], c.get("model", "mlp"), str(c.get("workers", "-")), c.get("link", "-")]
        if c.get("status") != "ok":
            rows.append(head + ["-"] * 10 + [_status(c)])
            continue
        if c["time_to_target_s"] is not None:
            ttt = f"{human_time(c['time_to_target_s'])} ({c['time_to_target_iterations']} it)"
        else:
            ttt = f"not in {c['iterations']} it"
        system = c["system"] + (" (sparse job)" if c.get("job_mode") == "sparse" else "")
        rows.append([system, *head[1:], f"{c['parameters']:,}", f"{c['iterations']}",
                     human_time(c["iteration_s"]), human_time(c["compute_s"]), human_time(c["communication_s"]),
                     _ratio(c.get("iteration_over_gloo")), human_bytes(c["wire_tx_bytes_per_iteration"]),
                     _metric_text(c), ttt, _ratio(c.get("time_to_target_over_gloo")), "ok"])
    return rows


TRAINING_HEADERS = ["system", "model", "workers", "link", "parameters", "iterations", "time/iteration", "compute",
                    "communication", "time/gloo", "sent/worker/iteration", "final metric", "time to target",
                    "to target/gloo", "result"]


def target_lines(targets: list[dict]) -> list[str]:
    """Issue 27's targets: met / not met / not measured, with the values judged."""
    out = []
    for t in targets:
        verdict = {True: "MET", False: "NOT MET", None: "NOT MEASURED"}[t["met"]]
        values = "; ".join(", ".join(f"{v[k]:.2f}" if isinstance(v[k], float) else str(v[k])
                                     for k in v if k not in ("workers", "link", "model"))
                           + f" ({v['model']}, {v['workers']} workers, {v['link']})" for v in t["values"])
        out.append(f"{verdict}: {t['text']}" + (f": {values}" if values else f" ({t.get('why', '')})"))
    return out


LOSS_HEADERS = ["link", "elements", "time/allreduce", "vs loss-free", "retransmitted", "result"]

HIERARCHY_HEADERS = ["network", "links", "elements", "system", "time/allreduce", "leaf uplinks up / down",
                     "agg. uplinks up / down", "link bound (busiest link)", "time/bound", "root-only / this",
                     "time/gloo", "retransmitted", "result"]


def _up_down(c: dict, key: str) -> str:
    """The largest bytes per allreduce over the tensor's, up / down, over the uplinks of one level."""
    if f"{key}_up_over_tensor" not in c:
        return "-"
    return f"{c[f'{key}_up_over_tensor']:.2f} / {c[f'{key}_down_over_tensor']:.2f}"


def hierarchy_rows(cells: list[dict]) -> list[list[str]]:
    """The hierarchy section (bench/hierarchy.py): each cell's time, the bytes on its uplinks per
    level (largest of the level's, x tensor), its link bound and the ratios."""
    rows = []
    for c in cells:
        head = [c.get("network", "-"), c["link"], human_size(c["size"]), c["system"]]
        if "time_s" not in c:
            rows.append(head + ["-"] * 8 + [_status(c)])
            continue
        busiest = c.get("busiest_link")
        bound = f"{human_time(c['link_bound_s'])} ({busiest['link']})" if busiest else "-"
        rows.append(head + [human_time(c["time_s"]["median"]), _up_down(c, "leaf"), _up_down(c, "aggregation"),
                            bound, _ratio(c.get("time_over_link_bound")), _ratio(c.get("speedup_over_root")),
                            _ratio(c.get("time_over_gloo")),
                            f"{c['retransmitted_fraction'] * 100:.2f}%" if "retransmitted_fraction" in c else "-",
                            _status(c)])
    return rows


def _where(v: dict) -> str:
    return f"{v['network']}, {v['link']}, {human_size(v['size'])}"


def hierarchy_target_lines(targets: list[dict]) -> list[str]:
    """Issue #23's targets: MET / NOT MET / NOT MEASURED, with the range of the values judged and
    the worst cell."""
    out = []
    for t in targets:
        verdict = {True: "MET", False: "NOT MET", None: "NOT MEASURED"}[t["met"]]
        values = t.get("values", [])
        if t["name"] == "bit-exact":
            exact = sum(1 for v in values if v["value"])
            levels = ", ".join(f"{p:g} %" for p in t.get("loss_pct_measured", []))
            detail = f"{exact} of {len(values)} p4reduce cells exact, uplink loss {levels or '-'}"
            wrong = [v for v in values if not v["value"]]
            if wrong:
                detail += "; NOT exact: " + "; ".join(f"{v['system']} ({_where(v)})" for v in wrong)
            if t.get("why"):
                detail += f" ({t['why']})"
        elif values:
            nums = [v["value"] for v in values]
            worst = (min if t["name"] == "speedup-over-root" else max)(values, key=lambda v: v["value"])
            detail = (f"{min(nums):.2f}-{max(nums):.2f}x over {len(nums)} cells, worst {worst['value']:.2f}x "
                      f"({_where(worst)})")
            root = [v["value"] for v in t.get("root_only", [])]
            if root:
                detail += f"; root-only {min(root):.2f}-{max(root):.2f}x"
        else:
            detail = "no cell measured it"
        out.append(f"{verdict}: {t['text']}: {detail}")
    return out


def _cell_text(value) -> str:
    if isinstance(value, bool) or value is None:
        return "-" if value is None else str(value).lower()
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


# columns worth a glance, in order, when a section's rows have them (the JSON has all)
PREFERRED_COLUMNS = ("case", "target", "pps", "rounds_per_s", "retransmissions", "duration_s",
                     "elements_per_s", "ms_per_step", "error_feedback")


def _generic(section: str, result: dict) -> str:
    if result.get("status") not in (None, "ok"):
        return f"{section}: {result['status']}: {result.get('error', '')}"
    rows = result.get("rows")
    if isinstance(rows, list) and rows and isinstance(rows[0], dict):
        keys = list(dict.fromkeys(k for r in rows for k in r))
        headers = [k for k in PREFERRED_COLUMNS if k in keys] or keys
        if "case" in headers and "target" in headers:
            headers.remove("target")
        lines = [format_table(headers, [[_cell_text(r.get(h)) for h in headers] for r in rows])]
        lines += [f"{k}: {_cell_text(v)}" for k, v in result.items()
                  if k.startswith("ratio") or k in ("method", "ratio_note")]
        return "\n".join(lines)
    return f"{section}: " + ", ".join(f"{k}={v}" for k, v in result.items()
                                      if not isinstance(v, (dict, list)))


def render(doc: dict) -> str:
    m = doc["machine"]
    out = [f"p4reduce benchmarks ({doc['mode']}), {doc['created']}",
           f"machine: {m['cpu_model']}, {m['cores']} cores, kernel {m['kernel']}, Python {m['python']}",
           f"command: {doc['command']}", ""]
    for section, result in doc["sections"].items():
        out.append(f"== {section} ({result.get('elapsed_s', 0):.0f}s) ==")
        if result.get("status") not in (None, "ok") and "cells" in result:
            out.append(f"{result['status']}: {result.get('error', '')}")
        if section in ("allreduce", "jumbo") and "cells" in result:
            nets = {n["switch_detail"] for n in result.get("networks", [])}
            out += [f"switch: {n}" for n in sorted(nets)]
            links = {(n["link"]["name"], n["link"]["applied"]) for n in result.get("networks", [])}
            out += [f"link {name}: {applied}" for name, applied in sorted(links)]
            out.append(allreduce_table(result["cells"]))
        elif section == "sparsity" and "cells" in result:
            out.append(sparsity_table(result["cells"]))
        elif section == "training" and "cells" in result:
            out.append(format_table(TRAINING_HEADERS, training_rows(result["cells"])))
            out.append("targets (p4reduce backend vs gloo DDP):")
            out += [f"  {line}" for line in target_lines(result.get("targets", []))]
        elif section == "loss" and "cells" in result:
            out.append(format_table(LOSS_HEADERS, loss_rows(result["cells"])))
        elif section == "hierarchy" and "cells" in result:
            out += [f"network {n['network']} ({n['link']}): {n['switch_detail']}" for n in result.get("networks", [])]
            out.append(format_table(HIERARCHY_HEADERS, hierarchy_rows(result["cells"])))
            out.append("targets (issue #23):")
            out += [f"  {line}" for line in hierarchy_target_lines(result.get("targets", []))]
        elif section == "switch-rate":
            for part, sub in result.items():
                if isinstance(sub, dict):
                    out.append(f"[{part}] " + _generic(part, sub))
        else:
            out.append(_generic(section, result))
        out.append("")
    return "\n".join(out)
