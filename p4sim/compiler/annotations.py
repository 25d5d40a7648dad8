"""Reading P4 annotations (@name, @brief...): shared by the checker, naming and P4Info."""
from __future__ import annotations

from . import ast as A


def anno(annos: list[A.Annotation] | None, name: str) -> A.Annotation | None:
    """The first annotation called ``name`` in a list, or None."""
    for a in annos or ():
        if a.name == name:
            return a
    return None


def anno_str(annos: list[A.Annotation] | None, name: str) -> str | None:
    """The string argument of annotation ``name`` (e.g. @name("x")), or None."""
    a = anno(annos, name)
    if a is None or not a.args or not isinstance(a.args[0], A.StrLit):
        return None
    return a.args[0].value
