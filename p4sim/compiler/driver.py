"""The compile pipeline: preprocess -> parse -> check -> BMv2 JSON (+ P4Info on demand)."""
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from . import bmv2
from .bmv2 import Backend
from .checker import Program, check
from .diagnostics import Warning_
from .limits import MAX_DEPTH
from .parse import parse
from .preprocess import preprocess


class CompileResult:
    """BMv2 JSON document, warnings, and the P4Info message (built, with protobuf, when first used).

    `diagnostics` holds the warnings (diagnostics.Warning_: kind, message, position); `warnings`
    the same rendered as ``file:line:col: warning: message``."""

    def __init__(self, bmv2_json: dict, prog: Program, backend: Backend, diagnostics: list[Warning_]) -> None:
        self.bmv2 = bmv2_json
        self.diagnostics = diagnostics
        self._prog, self._backend, self._p4info = prog, backend, None

    @property
    def warnings(self) -> list[str]:
        return [w.render() for w in self.diagnostics]

    @property
    def p4info(self) -> Any:
        if self._p4info is None:
            from . import p4info
            self._p4info = p4info.build(self._prog, self._backend)
        return self._p4info


# the compiler walks programs recursively; MAX_DEPTH levels of P4 nesting need this much room
_STACK_BYTES = 256 << 20
_RECURSION_LIMIT = 40 * MAX_DEPTH
T = TypeVar("T")


def compile_file(path: str, include_dirs: Sequence[str] = (), defines: Sequence[str] = (),
                 undefines: Sequence[str] = ()) -> CompileResult:
    """Compile one P4 source file; raises diagnostics.CompileError on bad input.

    Runs on a thread of its own, with a stack (and recursion limit) large enough for programs
    nested up to limits.MAX_DEPTH levels, which the parser enforces."""
    return run_deep(_compile, path, include_dirs, defines, undefines)


def run_deep(fn: Callable[..., T], *args: Any) -> T:
    """fn(*args) on a thread whose stack and recursion limit fit MAX_DEPTH levels of P4 nesting
    (the compiler's walks, json.dumps of the document it builds)."""
    result: list[T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fn(*args))
        except BaseException as exc:   # re-raised in the caller's thread
            error.append(exc)
    old_stack = threading.stack_size()
    old_limit = sys.getrecursionlimit()
    try:
        threading.stack_size(_STACK_BYTES)
        sys.setrecursionlimit(max(old_limit, _RECURSION_LIMIT))
        worker = threading.Thread(target=run, name="p4sim-compile")
        worker.start()
    finally:
        threading.stack_size(old_stack)
    try:
        worker.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if error:
        raise error[0]
    return result[0]


def _compile(path: str, include_dirs: Sequence[str], defines: Sequence[str],
             undefines: Sequence[str]) -> CompileResult:
    source = preprocess(path, include_dirs, defines, undefines)
    prog = check(parse(source))
    doc, backend = bmv2.to_json(prog, path)
    return CompileResult(doc, prog, backend, prog.warnings)
