"""Result documents on disk: bench/results/<stem>.json and .md, bench/results/latest/, the exit code."""
from __future__ import annotations

import json
import pathlib
import shutil
from collections.abc import Iterable, Iterator

BAD = ("failed", "wrong-result", "interrupted")


def default_stem(doc: dict) -> str:
    stamp = doc["created"].replace(":", "").replace("-", "").split("+")[0]
    return f"bench-{doc['mode']}-{stamp}"


def save(doc: dict, out_dir: pathlib.Path, stem: str | None = None) -> pathlib.Path:
    """Write <stem>.json and <stem>.md; returns the JSON's path."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem or default_stem(doc)}.json"
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    from lab.bench import markdown
    path.with_suffix(".md").write_text(markdown.render(doc) + "\n")
    return path


def publish_latest(doc: dict, path: pathlib.Path, charts: Iterable[str | pathlib.Path] = ()) -> pathlib.Path:
    """Copy a saved run to <out>/latest/: <mode>.json, <mode>.md and its charts as
    <mode>-<chart>.png. That directory is what the repository keeps (the rest is ignored)."""
    path = pathlib.Path(path)
    latest = path.parent / "latest"
    latest.mkdir(parents=True, exist_ok=True)
    mode = doc["mode"]
    for old in latest.glob(f"{mode}-*.png"):
        old.unlink()
    shutil.copyfile(path, latest / f"{mode}.json")
    shutil.copyfile(path.with_suffix(".md"), latest / f"{mode}.md")
    for chart in charts:
        chart = pathlib.Path(chart)
        suffix = chart.name[len(path.stem) + 1:] if chart.name.startswith(path.stem + "-") else chart.name
        shutil.copyfile(chart, latest / f"{mode}-{suffix}")
    return latest


def load(path: str | pathlib.Path) -> dict:
    with open(path) as fh:
        doc = json.load(fh)
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("p4reduce-bench/"):
        raise ValueError(f"{path}: not a p4reduce benchmark result (no 'schema' field)")
    return doc


def iter_cells(doc: dict) -> Iterator[dict]:
    for result in doc.get("sections", {}).values():
        yield from result.get("cells", []) if isinstance(result, dict) else []


def problems(doc: dict) -> list:
    """Human-readable list of what went wrong (failed sections and cells, wrong results)."""
    out = []
    for name, result in doc.get("sections", {}).items():
        if isinstance(result, dict) and result.get("status") in BAD:
            out.append(f"section {name}: {result.get('error', result['status'])}")
    for c in iter_cells(doc):
        if c.get("status") in BAD:
            out.append(f"{c['section']} {c['system']} n={c['workers']} size={c['size']} "
                       f"{c['link']} density={c['density']}: {c['status']}: {c.get('error', '')}")
    return out


def exit_status(doc: dict) -> int:
    """0 when nothing failed (skips are fine: they say why), 1 otherwise."""
    return 1 if problems(doc) else 0
