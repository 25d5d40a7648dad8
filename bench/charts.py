"""PNG charts of a result document (matplotlib, Agg backend: no display needed).

One function per chart; each returns the path it wrote, or None when the section has nothing to
plot. How to read them: docs/benchmarks.md.
"""
from __future__ import annotations

import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from p4reduce.bench.report import human_size

STYLE = {"p4reduce": dict(color="tab:red", marker="o"), "p4reduce-sparse": dict(color="tab:orange", marker="v"),
         "gloo": dict(color="tab:blue", marker="s"),
         "ps-tcp": dict(color="tab:green", marker="^")}


def _ok(cells):
    return [c for c in cells if c.get("status") == "ok"]


def _grid_axes(workers, links, title):
    fig, axes = plt.subplots(len(workers), len(links), figsize=(5.5 * len(links), 4 * len(workers)),
                             squeeze=False, sharex=True)
    fig.suptitle(title)
    return fig, axes


def _size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([human_size(s) for s in sizes])
    ax.set_xlabel("tensor elements (4 bytes each)")
    ax.grid(True, which="both", alpha=0.3)


def allreduce_chart(cells: list[dict], path: pathlib.Path, metric: str) -> pathlib.Path | None:
    """metric 'time': time per allreduce; 'bytes': bytes sent per worker per allreduce."""
    cells = [c for c in _ok(cells) if c["section"] == "allreduce"]
    if not cells:
        return None
    workers = sorted({c["workers"] for c in cells})
    links = sorted({c["link"] for c in cells})
    sizes = sorted({c["size"] for c in cells})
    title = ("Time per allreduce (median of repetitions, slowest worker)" if metric == "time"
             else "Bytes sent per worker per allreduce (interface tx counters)")
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
            ax.set_ylabel("seconds" if metric == "time" else "bytes")
            applied = next((c.get("link_applied") for c in cells if c["link"] == link), None)
            ax.set_title(f"{n} workers, {link}" + (f"\n({applied})" if applied and applied != link else ""),
                         fontsize="medium")
            _size_axis(ax, sizes)
            ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def sparsity_chart(cells: list[dict], path: pathlib.Path) -> pathlib.Path | None:
    """Speed-up and byte reduction of sparse p4reduce over dense, with the ideal 1/density."""
    cells = [c for c in _ok(cells) if c["section"] == "sparsity"]
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
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def bar_chart(rows: list[dict], label_key: str, value_key: str, title: str, ylabel: str,
              path: pathlib.Path) -> pathlib.Path | None:
    rows = [r for r in rows if isinstance(r.get(value_key), (int, float))]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(rows) + 2), 4))
    labels = [str(r.get(label_key, "?")) for r in rows]
    values = [r[value_key] for r in rows]
    bars = ax.bar(range(len(rows)), values, color="tab:purple")
    ax.bar_label(bars, labels=[f"{v:,.0f}" for v in values], fontsize="small")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


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


def write_all(doc: dict, out_dir: pathlib.Path, stem: str) -> list[str]:
    """Every chart the document has data for; returns the written paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    sections = doc["sections"]
    ar = sections.get("allreduce", {}).get("cells", [])
    sp = sections.get("sparsity", {}).get("cells", [])
    written.append(allreduce_chart(ar, out_dir / f"{stem}-allreduce-time.png", "time"))
    written.append(allreduce_chart(ar, out_dir / f"{stem}-allreduce-bytes.png", "bytes"))
    written.append(sparsity_chart(sp, out_dir / f"{stem}-sparsity.png"))
    rate_rows = []
    for part in sections.get("switch-rate", {}).values():
        if isinstance(part, dict) and isinstance(part.get("rows"), list):
            rate_rows += [r for r in part["rows"] if isinstance(r, dict)]
    key = _numeric_key(rate_rows, ("pps", "packets_per_s", "rate_pps"))
    if key:
        written.append(bar_chart(rate_rows, _label_key(rate_rows, ("target", "name", "case")), key,
                                 "Switch packet rate (aggregation program)", "packets/s",
                                 out_dir / f"{stem}-switch-rate.png"))
    enc_rows = [r for r in sections.get("encode", {}).get("rows", []) if isinstance(r, dict)]
    key = _numeric_key(enc_rows, ("melem_per_s", "elements_per_s", "throughput"))
    if key:
        written.append(bar_chart(enc_rows, _label_key(enc_rows, ("compressor", "name")), key,
                                 "Worker encode throughput per compressor (one core)", key,
                                 out_dir / f"{stem}-encode.png"))
    return [str(p) for p in written if p]
