"""Result documents on disk: bench/results/<stem>.json and .md, latest-<mode>.*, and the exit code."""
from __future__ import annotations

import json
import pathlib
import shutil
from typing import Iterator, Optional

BAD = ("failed", "wrong-result", "interrupted")


def default_stem(doc: dict) -> str:
    stamp = doc["created"].replace(":", "").replace("-", "").split("+")[0]
    return f"bench-{doc['mode']}-{stamp}"


def save(doc: dict, out_dir: pathlib.Path, stem: Optional[str] = None) -> pathlib.Path:
    """Write the document; also copy it to latest-<mode>.json. Returns the main path."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem or default_stem(doc)}.json"
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    shutil.copyfile(path, out_dir / f"latest-{doc['mode']}.json")
    from bench import markdown
    md = path.with_suffix(".md")
    md.write_text(markdown.render(doc) + "\n")
    shutil.copyfile(md, out_dir / f"latest-{doc['mode']}.md")
    return path


def load(path) -> dict:
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
