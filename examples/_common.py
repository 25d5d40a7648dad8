"""What every example script shares: its command line, its one-line JSON report, its error line.

Imported by the scripts of this folder as `_common` (a script's own folder is on sys.path when
it runs as `python examples/NAME.py`)."""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Any

# The examples run from a checkout; the demo's data set lives in its lab (lab/training), so the
# checkout's root goes on the path for the scripts that train on it.
_CHECKOUT = str(pathlib.Path(__file__).resolve().parent.parent)
if _CHECKOUT not in sys.path:
    sys.path.append(_CHECKOUT)


def parse_args(description: str, extra: list[tuple[str, dict[str, Any]]] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--controller", default="127.0.0.1:8090",
                    help="the controller's job API, HOST:PORT (default %(default)s: inside `make run` hosts too)")
    ap.add_argument("--job", default="default", help="the job to join (default %(default)s)")
    for flag, kw in extra or []:
        ap.add_argument(flag, **kw)
    return ap.parse_args()


def report(name: str, ok: bool, **fields: Any) -> int:
    """The example's result as one JSON line; exit status 0 when it checked out."""
    print(json.dumps({"example": name, "ok": ok, **fields}), flush=True)
    return 0 if ok else 1


def fail(message: str) -> int:
    print(f"example: error: {message}", file=sys.stderr)
    return 2
