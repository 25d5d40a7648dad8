"""Compile a Program once into Python source (parser, controls, actions, checksums, deparser).

The generated module works on the flat slot list `f` (see program.py).  Table lookups go through
`tables.Table` objects placed in the namespace, so control-plane changes never need recompiling.
A traced variant (with `TR(...)` calls) is generated only when a trace callback is set.

Backend seam: `Switch` only needs an object like `Compiled` -- parse(f, data) -> bytes parsed,
verify_checksums(f, payload), ingress(f), egress(f), update_checksums(f, payload), deparse(f) ->
header bytes, plus `actions` {id: fn(f, args)} and `nodes` {name: fn} for binding table entries.
A native backend can provide the same over the same slot layout.

The emitters live one per module: codegen_parser, codegen_deparser (header codecs too),
codegen_pipeline, codegen_checksums; this module composes them and builds the namespace.
"""
import random
from collections.abc import Callable
from typing import Any

from .actions import PrimitiveGen, fmt_log, reg_get, stk_pop, stk_push
from .codegen_checksums import ChecksumEmitter
from .codegen_parser import ParserEmitter, ParserError, ParserLoopError
from .codegen_pipeline import PipelineEmitter
from .errors import ProgramError
from .exprs import RUNTIME_HELPERS
from .meters import MeterArray
from .program import Program
from .tables import Table


class AssertFail(Exception):
    """An assert/assume primitive failed."""


class Compiled:
    """The namespace of one compiled program: call `parse`, `ingress`, `egress`, `deparse`, ..."""

    def __init__(self, ns: dict[str, Any], source: str) -> None:
        self.ns = ns
        self.source = source
        self.parse = ns["parse"]
        self.verify_checksums = ns["verify_checksums"]
        self.update_checksums = ns["update_checksums"]
        self.ingress = ns["run_ingress"]
        self.egress = ns["run_egress"]
        self.deparse = ns["deparse"]
        self.actions = ns["ACTIONS"]
        self.nodes = ns["NODES"]


class CodeGen(ParserEmitter, PipelineEmitter, ChecksumEmitter):
    """Generates and compiles the Python module of one program (one per traced/plain variant)."""

    def __init__(self, prog: Program, tables: dict[str, Table], registers: dict[str, list[int]],
                 counters: dict[str, tuple[list[int], list[int]]], drop_port: int, traced: bool = False,
                 trace_fn: Callable[[str], None] | None = None, vsets: dict[str, list[tuple[int, int]]] | None = None,
                 meters: dict[str, MeterArray] | None = None) -> None:
        super().__init__(prog, traced)
        self.tables = tables          # name -> tables.Table
        self.registers = registers    # name -> list
        self.counters = counters      # name -> (packets list, bytes list)
        self.drop_port = drop_port
        self.trace_fn = trace_fn
        self.vsets = vsets if vsets is not None else {}  # name -> list of (value, mask), shared
        self.meters = meters if meters is not None else {}  # name -> meters.MeterArray, shared

    # ---- entry point -----------------------------------------------------------------------
    def build(self) -> Compiled:
        try:
            return self._build()
        except RecursionError:
            raise ProgramError("program too deeply nested to compile (expressions or control flow)") from None
        except (KeyError, TypeError, IndexError, AttributeError) as exc:
            raise ProgramError(f"BMv2 JSON: malformed or unsupported content "
                               f"({type(exc).__name__}: {exc})") from None

    def _build(self) -> Compiled:
        prog = self.prog
        ns: dict[str, Any] = dict(RUNTIME_HELPERS)
        ns.update({
            "PErr": ParserError, "PLoop": ParserLoopError, "AssertFail": AssertFail, "DROP_PORT": self.drop_port,
            "_stk_push": stk_push, "_stk_pop": stk_pop, "_reg_get": reg_get, "_fmt_log": fmt_log,
            "_randint": random.randint, "TR": self.trace_fn or (lambda line: None), "VSETS": self.vsets,
            "_ONE_ZEROS": [[1] + [0] * n for n in range(0, 1 + max(
                [len(h.fields) for h in prog.headers.values()] or [0]))],
        })
        for reg in prog.registers.values():
            ns[f"R_{reg.id}"] = self.registers[reg.name]
        for c in prog.counters.values():
            if not c.direct:
                ns[f"CP_{c.id}"], ns[f"CB_{c.id}"] = self.counters[c.name]
        for m in prog.meters.values():
            if m.name in self.meters:
                ns[f"M_{m.id}"] = self.meters[m.name]
        for t in self.tables.values():
            ns[f"T_{t.info.id}"] = t
        self.emit_actions()
        self.emit_calculations(ns)
        self.emit_parser()
        self.emit_deparser()
        for pipe_name in ("ingress", "egress"):
            self.emit_pipeline(pipe_name)
        source = "\n".join(self.lines) + "\n"
        for name, s in self.structs.items():
            ns[name] = s
        try:
            code = compile(source, "<p4sim-engine>", "exec")
        except SyntaxError as exc:  # a bug in the generator, never the user's
            raise ProgramError(f"internal error compiling the program: {exc}") from None
        exec(code, ns)  # noqa: S102 - source this module generated from the loaded program
        return Compiled(ns, source)

    # ---- actions ---------------------------------------------------------------------------
    def emit_actions(self) -> None:
        self.w("ACTIONS = {}")
        for a in self.prog.actions.values():
            prims = self.prog_action_json(a.id).get("primitives", [])
            gen = PrimitiveGen(self.prog, None, f"action {a.name}", "return 1", self.traced)
            self.w(f"def A_{a.id}(f, p):")
            for line in gen.body(prims, 4):
                self.w(line)
            self.w(f"ACTIONS[{a.id}] = A_{a.id}")


