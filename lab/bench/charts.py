"""PNG charts of a result document (matplotlib, Agg backend: no display needed).

One function per chart; each returns the path it wrote, or None when the section has nothing to
plot. Cells that were not measured are drawn as such, never left out silently: a hollow marker at
the top edge labelled "skipped" (over the time budget, or a baseline not installed), a cross
labelled "failed" for failures and wrong results; a footnote lists them with their reasons. Titles
and labels are wrapped and the figures sized so that nothing is cut off. How to read them:
docs/benchmarks.md.
"""
from __future__ import annotations

import pathlib
import re
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

from lab.bench.report import human_size

STYLE = {"p4reduce": dict(color="tab:red", marker="o"), "p4reduce-sparse": dict(color="tab:orange", marker="v"),
         "gloo": dict(color="tab:blue", marker="s"),
         "ps-tcp": dict(color="tab:green", marker="^")}


def _ok(cells):
    return [c for c in cells if c.get("status") == "ok"]


def _not_measured(cells):
    return [c for c in cells if c.get("status") not in ("ok", None)]


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(str(text), width)) or str(text)


def _footnote(fig, cells, group, item) -> int:
    """A footnote under the axes listing the cells not measured and why, one line per group
    (e.g. a system on one grid cell) with its items (e.g. sizes); returns its line count."""
    groups: dict[tuple[str, str], list[str]] = {}
    for c in cells:
        status = c.get("status", "failed")
        reason = re.sub(r"predicted \d+s > ", "predicted over the ", str(c.get("error") or "not measured"))
        key = (f"{status}: {group(c)}", reason)
        if item(c) not in groups.setdefault(key, []):
            groups[key].append(item(c))
    if not groups:
        return 0
    notes = [f"{head}: {', '.join(items)} ({reason})" for (head, reason), items in groups.items()]
    if len(notes) > 10:
        notes = notes[:10] + [f"... and {len(notes) - 10} more (see the result document)"]
    text = "\n".join(_wrap(n, 150) for n in notes)
    fig.text(0.01, 0.005, text, ha="left", va="bottom", fontsize="small", color="dimgray")
    return text.count("\n") + 1


def _mark_not_measured(ax, xs_status, color, row=0):
    """Hollow markers near the top edge for skipped cells, crosses for failed ones, labelled;
    `row` stacks the systems' marks so they never overlap."""
    top = ax.get_xaxis_transform()          # x in data, y in axes fraction
    y = 0.95 - 0.09 * row
    for x, status in xs_status:
        skipped = status == "skipped"
        ax.plot([x], [y], marker="o" if skipped else "x", mfc="none", mec=color, color=color, ls="none",
                transform=top, clip_on=False, ms=7)
        ax.annotate("skipped" if skipped else "failed", (x, y), xytext=(-6, 0), textcoords="offset points",
                    xycoords=top, ha="right", va="center", fontsize="x-small", color=color)


def _grid_axes(workers, links, title):
    fig, axes = plt.subplots(len(workers), len(links), figsize=(6 * len(links), 4.4 * len(workers)),
                             squeeze=False, sharex=True)
    fig.suptitle(title)
    return fig, axes


def _save(fig, path, footnote_lines=0):
    """tight_layout leaving room for the footnote, then a bounding box that holds every label."""
    height = fig.get_figheight()
    if footnote_lines:
        fig.set_figheight(height + 0.17 * footnote_lines)
    fig.tight_layout(rect=(0, min(0.4, 0.17 * footnote_lines / fig.get_figheight()) if footnote_lines else 0,
                           1, 1))
    fig.savefig(path, dpi=110, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    return path


def _size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([human_size(s) for s in sizes])
    ax.set_xlabel("tensor elements (4 bytes each)")
    ax.grid(True, which="both", alpha=0.3)


def allreduce_chart(cells: list[dict], path: pathlib.Path, metric: str,
                    section: str = "allreduce") -> pathlib.Path | None:
    """metric 'time': time per allreduce; 'bytes': bytes sent per worker per allreduce (the
    allreduce section's cells, or the jumbo section's)."""
    every = [c for c in cells if c.get("section") == section]
    missing = _not_measured(every)
    cells = _ok(every)
    if not cells:
        return None
    workers = sorted({c["workers"] for c in cells})
    links = sorted({c["link"] for c in cells})
    sizes = sorted({c["size"] for c in every if c.get("workers") in workers and c.get("link") in links})
    title = ("Time per allreduce (median of repetitions, slowest worker)" if metric == "time"
             else "Bytes sent per worker per allreduce (interface tx counters)")
    if section == "jumbo":
        title += ", jumbo frames (MTU 9000)"
    fig, axes = _grid_axes(workers, links, title)
    for i, n in enumerate(workers):
        for j, link in enumerate(links):
            ax = axes[i][j]
            for system in STYLE:
                pts = sorted((c["size"], c) for c in cells
                             if c["workers"] == n and c["link"] == link and c["system"] == system)
                if not pts:
                    continue
                xs = [s for s, _ in pts]
                if metric == "time":
                    ys = [c["time_s"]["median"] for _, c in pts]
                else:
                    ys = [c["wire_tx_bytes_per_worker"]["mean"] for _, c in pts]
                ax.plot(xs, ys, label=system, **STYLE[system])
            if metric == "bytes":
                ax.plot(sizes, [s * 4 for s in sizes], "k--", lw=1, label="tensor size")
            ax.set_yscale("log")
            for row, system in enumerate(STYLE):
                _mark_not_measured(ax, [(c["size"], c["status"]) for c in missing if c.get("system") == system
                                        and c.get("workers") == n and c.get("link") == link],
                                   STYLE[system]["color"], row)
            ax.set_ylabel("seconds" if metric == "time" else "bytes")
            applied = next((c.get("link_applied") for c in cells if c["link"] == link), None)
            ax.set_title(f"{n} workers, {link}" + (f"\n({_wrap(applied, 60)})" if applied and applied != link
                                                   else ""), fontsize="medium")
            _size_axis(ax, sizes)
            ax.tick_params(labelbottom=True)
            ax.legend(fontsize="small", loc="lower right")
    lines = _footnote(fig, missing, lambda c: f"{c.get('system')}, {c.get('workers')} workers, {c.get('link')}",
                      lambda c: human_size(c.get("size", 0)))
    return _save(fig, path, lines)


def sparsity_chart(cells: list[dict], path: pathlib.Path) -> pathlib.Path | None:
    """Speed-up and byte reduction of sparse p4reduce over dense, with the ideal 1/density."""
    every = [c for c in cells if c.get("section") == "sparsity"]
    missing = _not_measured(every)
    cells = _ok(every)
    links = sorted({c["link"] for c in cells})
    dense = {c["link"]: c for c in cells if c["density"] == 1.0}
    if not dense:
        return None
    fig, (ax_t, ax_b) = plt.subplots(1, 2, figsize=(11, 4.2))
    densities = sorted({c["density"] for c in cells})
    ideal = [1 / d for d in densities]
    for ax in (ax_t, ax_b):
        ax.plot([d * 100 for d in densities], ideal, "k--", lw=1, label="ideal 1/density")
    for link in links:
        if link not in dense:
            continue
        pts = sorted((c["density"], c) for c in cells if c["link"] == link)
        xs = [d * 100 for d, _ in pts]
        ax_t.plot(xs, [dense[link]["time_s"]["median"] / c["time_s"]["median"] for _, c in pts],
                  marker="o", label=f"time, {link}")
        ax_b.plot(xs, [dense[link]["wire_tx_bytes_per_worker"]["mean"]
                       / c["wire_tx_bytes_per_worker"]["mean"] for _, c in pts],
                  marker="s", label=f"bytes sent, {link}")
    for ax, what in ((ax_t, "speed-up over dense (time)"), (ax_b, "reduction over dense (bytes sent)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks([d * 100 for d in densities])
        ax.set_xticklabels([f"{d * 100:g}" for d in densities])
        ax.minorticks_off()
        ax.invert_xaxis()
        ax.set_xlabel("non-zero block density (%)")
        ax.set_ylabel("x")
        ax.set_title(what)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(f"p4reduce sparse vs dense ({cells[0]['workers']} workers, {human_size(cells[0]['size'])} elements)")
    lines = _footnote(fig, missing, lambda c: f"{c.get('link')}, density", lambda c: f"{c.get('density', 0) * 100:g}%")
    return _save(fig, path, lines)


def bar_chart(rows: list[dict], label_key: str, value_key: str, title: str, ylabel: str,
              path: pathlib.Path) -> pathlib.Path | None:
    """Horizontal bars (long labels stay readable), the value written on each; rows with status
    skipped or failed get an empty bar labelled with that status and the reason."""
    measured = [r for r in rows if isinstance(r.get(value_key), (int, float))]
    if not measured:
        return None
    shown = [r for r in rows if r in measured or r.get("status") not in (None, "ok")]
    labels = [_wrap(r.get(label_key, "?"), 38) for r in shown]
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.55 * sum(lab.count("\n") + 1 for lab in labels)))
    values = [r[value_key] if r in measured else 0 for r in shown]
    ys = range(len(shown))
    bars = ax.barh(ys, values, color=["tab:purple" if r in measured else "lightgray" for r in shown])
    top = max(values)
    texts = [f"{r[value_key]:,.0f}" if r in measured
             else _wrap(f"{r.get('status')}: {r.get('error', 'not measured')}", 60) for r in shown]
    ax.bar_label(bars, labels=texts, padding=4, fontsize="small")
    ax.set_yticks(list(ys))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.3)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))   # no "1e8" offset text
    ax.set_xlabel(ylabel.replace("_per_s", "/s").replace("_", " "))
    ax.set_title(_wrap(title, 70))
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig, path)


def _numeric_key(rows: list[dict], preferred) -> str | None:
    for key in preferred:
        if rows and all(isinstance(r.get(key), (int, float)) for r in rows):
            return key
    return None


def _label_key(rows: list[dict], preferred) -> str:
    for key in preferred:
        if rows and all(key in r for r in rows):
            return key
    return next(iter(rows[0])) if rows else "name"


TRAINING_COLORS = {"gloo": "tab:blue", "p4reduce": "tab:red", "p4reduce-hook": "tab:orange"}


def training_chart(cells: list[dict], path: pathlib.Path) -> pathlib.Path | None:
    """One panel per (workers, link): per model, each system's time per iteration over gloo DDP's
    on the same network (below the dashed line: faster), split into compute (hatched) and
    communication; the absolute time on top of each bar; cells not measured say so."""
    if not cells:
        return None
    nets = sorted({(c["workers"], c["link"]) for c in cells}, key=lambda n: (n[1] != "unshaped", n[0]))
    models = list(dict.fromkeys(c.get("model", "mlp") for c in cells))
    systems = list(dict.fromkeys(c["system"] for c in cells))
    cols = min(2, len(nets))
    rows = (len(nets) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.2 * rows), squeeze=False)
    width = 0.8 / max(1, len(systems))
    for ax, (workers, link) in zip(axes.flat, nets):
        here = {(c.get("model", "mlp"), c["system"]): c for c in cells if (c["workers"], c["link"]) == (workers, link)}
        for mi, model in enumerate(models):
            base = here.get((model, "gloo"))
            ref = base["iteration_s"] if base and base.get("status") == "ok" else None
            for si, system in enumerate(systems):
                x = mi + (si - (len(systems) - 1) / 2) * width
                c = here.get((model, system))
                if c is None:
                    continue
                if c.get("status") != "ok" or not ref:
                    ax.text(x, 0.02, c.get("status", "?") if c.get("status") != "ok" else "no gloo",
                            rotation=90, ha="center", va="bottom", fontsize=7)
                    continue
                comp = min(c["compute_s"], c["iteration_s"]) / ref
                total = c["iteration_s"] / ref
                color = TRAINING_COLORS.get(system, "tab:gray")
                ax.bar(x, comp, width, color=color, alpha=0.45, hatch="//", edgecolor=color)
                ax.bar(x, total - comp, width, bottom=comp, color=color,
                       label=system if mi == 0 else None)
                ax.text(x, total, _short_time(c["iteration_s"]), ha="center", va="bottom", fontsize=7, rotation=90)
        ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8)
        ax.set_xticks(range(len(models)), models)
        ax.set_ylabel("time per iteration / gloo DDP's")
        ax.set_title(f"{workers} workers, {link}", fontsize=10)
        ax.set_ylim(0, max(1.3, ax.get_ylim()[1] * 1.3))
        ax.legend(fontsize=8, loc="upper left", ncols=len(systems))
    for ax in list(axes.flat)[len(nets):]:
        ax.axis("off")
    fig.suptitle(_wrap("Training: time per iteration over gloo DDP's (hatched: compute; above it: "
                       "communication not hidden by backward)", 55 * cols), fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


HIERARCHY_STYLE = {"p4reduce-tree": dict(color="tab:red", marker="o"),
                   "p4reduce-root": dict(color="tab:orange", marker="v"),
                   "gloo": dict(color="tab:blue", marker="s")}


def hierarchy_chart(cells: list[dict], path: pathlib.Path) -> pathlib.Path | None:
    """The hierarchy section: one column per (network, links) without loss; top, time per
    allreduce against tensor elements; bottom, bytes up the busiest leaf uplink over the tensor's
    (dashed: the tensor once; dotted: the 1.08x target)."""
    every = [c for c in cells if c.get("section") == "hierarchy" and not c.get("uplink_loss_pct")]
    missing = _not_measured(every)
    ok = _ok(every)
    if not ok:
        return None
    combos = list(dict.fromkeys((c["network"], c["link"]) for c in every))
    sizes = sorted({c["size"] for c in every})
    fig, axes = plt.subplots(2, len(combos), figsize=(5.2 * len(combos), 8.4), squeeze=False, sharex=True)
    for col, (network, link) in enumerate(combos):
        here = [c for c in ok if (c["network"], c["link"]) == (network, link)]
        ax_t, ax_b = axes[0][col], axes[1][col]
        for row, (system, style) in enumerate(HIERARCHY_STYLE.items()):
            pts = sorted((c["size"], c) for c in here if c["system"] == system)
            if pts:
                xs = [x for x, _ in pts]
                ax_t.plot(xs, [c["time_s"]["median"] for _, c in pts], label=system, **style)
                ax_b.plot(xs, [c.get("leaf_up_over_tensor", float("nan")) for _, c in pts], label=system, **style)
            _mark_not_measured(ax_t, [(c["size"], c["status"]) for c in missing if c.get("system") == system
                                      and (c.get("network"), c.get("link")) == (network, link)], style["color"], row)
        ax_b.axhline(1.0, color="black", ls="--", lw=1, label="tensor once")
        ax_b.axhline(1.08, color="black", ls=":", lw=1, label="target 1.08x (tree)")
        ax_t.set_yscale("log")
        ax_t.set_ylabel("seconds per allreduce")
        ax_b.set_ylabel("bytes up the busiest leaf uplink / tensor")
        tops = [c.get("leaf_up_over_tensor", 0) for c in here]
        ax_b.set_ylim(0, 1.6 * max([1.1, *tops]))           # the legend above the lines
        applied = next((c.get("link_applied") for c in here), None)
        sub = f"\n(hosts: {applied['hosts']}; uplinks: {applied['uplinks']})" if isinstance(applied, dict) else ""
        ax_t.set_title(_wrap(f"{network}, {link}{sub}", 60), fontsize="medium")
        for ax in (ax_t, ax_b):
            _size_axis(ax, sizes)
            ax.tick_params(labelbottom=True)
        ax_t.legend(fontsize="small", loc="upper left")
        ax_b.legend(fontsize="small", loc="upper center", ncols=2)
    fig.suptitle(_wrap("Aggregation across switches: 8 workers, p4reduce through the tree vs at the root only vs "
                       "gloo's ring", 50 * len(combos)))
    lines = _footnote(fig, missing, lambda c: f"{c.get('system')}, {c.get('network')}, {c.get('link')}",
                      lambda c: human_size(c.get("size", 0)))
    return _save(fig, path, lines)


def _short_time(s: float) -> str:
    return f"{s:.2f} s" if s >= 1 else f"{s * 1e3:.0f} ms"


def write_all(doc: dict, out_dir: pathlib.Path, stem: str) -> list[str]:
    """Every chart the document has data for; returns the written paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    sections = doc["sections"]
    ar = sections.get("allreduce", {}).get("cells", [])
    sp = sections.get("sparsity", {}).get("cells", [])
    written.append(allreduce_chart(ar, out_dir / f"{stem}-allreduce-time.png", "time"))
    written.append(allreduce_chart(ar, out_dir / f"{stem}-allreduce-bytes.png", "bytes"))
    jumbo = sections.get("jumbo", {}).get("cells", [])
    written.append(allreduce_chart(jumbo, out_dir / f"{stem}-jumbo-time.png", "time", section="jumbo"))
    written.append(sparsity_chart(sp, out_dir / f"{stem}-sparsity.png"))
    written.append(training_chart(sections.get("training", {}).get("cells", []), out_dir / f"{stem}-training.png"))
    written.append(hierarchy_chart(sections.get("hierarchy", {}).get("cells", []), out_dir / f"{stem}-hierarchy.png"))
    rate_rows = []
    for name, part in sections.get("switch-rate", {}).items():
        if isinstance(part, dict) and isinstance(part.get("rows"), list):
            rate_rows += [{**r, "case": f"{r.get('case', name)}, {r['backend']}" if r.get("backend") else
                           r.get("case", name)} for r in part["rows"] if isinstance(r, dict)]
        elif isinstance(part, dict) and part.get("status") not in (None, "ok"):
            rate_rows.append({"case": name, "status": part["status"], "error": part.get("error", "")})
    key = _numeric_key([r for r in rate_rows if r.get("status") in (None, "ok")], ("pps", "packets_per_s", "rate_pps"))
    if key:
        written.append(bar_chart(rate_rows, "case", key,
                                 "Switch packet rate (aggregation program)", "packets/s",
                                 out_dir / f"{stem}-switch-rate.png"))
    enc_rows = [r for r in sections.get("encode", {}).get("rows", []) if isinstance(r, dict)]
    key = _numeric_key(enc_rows, ("melem_per_s", "elements_per_s", "throughput"))
    if key:
        written.append(bar_chart(enc_rows, _label_key(enc_rows, ("compressor", "name")), key,
                                 "Worker encode throughput per compressor (one core)", key,
                                 out_dir / f"{stem}-encode.png"))
    return [str(p) for p in written if p]
