"""Entries of indexed arrays (counters, meters, registers): which cells an entry names, and the
one update type these arrays take. One rule for the three kinds, so their errors read alike."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from p4.v1 import p4runtime_pb2

from .errors import invalid, out_of_range

MODIFY = p4runtime_pb2.Update.MODIFY


def cell_indices(kind: str, info: Any, entry: Any) -> Sequence[int]:
    """The cells an entry with an optional `index` names: that one (checked against the array's
    size), or every cell when it gives none (a wildcard read)."""
    if entry.HasField("index"):
        index = entry.index.index
        if index < 0 or index >= info.size:
            raise out_of_range(f"{kind} '{info.name}': index {index} is outside 0..{info.size - 1}")
        return [index]
    return range(info.size)


def require_modify(kind: str, info: Any, update_type: int) -> None:
    """Indexed arrays always exist, cell by cell: a write may only MODIFY them."""
    if update_type != MODIFY:
        raise invalid(f"{kind} '{info.name}': only MODIFY is allowed on {kind}s")
