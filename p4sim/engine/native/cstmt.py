"""BMv2 primitives (action bodies, parser primitives) as C statements.

Semantics follow p4sim.engine.actions primitive by primitive.  A statement whose expressions
index a header stack at run time checks `sw->abort` afterwards (the index was out of range):
in a control that drops the packet, in a parser it ends the whole run, as the Python engine's
IndexError does.  Jumps (_jump, _jump_if_zero) become gotos; a backward jump counts its
iterations so a program that loops forever ends the packet instead of hanging the switch.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from ..program import Json
from ..program_loader import parse_hexstr
from .cexpr import ExprC, Lv, c_string
from .errors import NativeUnsupported

if TYPE_CHECKING:
    from .cgen import ProgramC

T = TypeVar("T")

ACTION_LOOP_LIMIT = 1 << 20


@dataclass
class Ctx:
    """How statements leave their function: exit (P4 `exit`), drop the packet, abort the run."""
    exit: str = "return R_EXIT;"
    drop: str = "return R_DROP;"
    abort: str = "return R_ABORT;"


class Prims:
    def __init__(self, cg: ProgramC, where: str, params: Callable[[int], tuple[str, int, int]] | None = None,
                 ctx: Ctx | None = None, ptr: str = "st") -> None:
        self.cg = cg
        self.prog = cg.prog
        self.layout = cg.layout
        self.where = where
        self.x = ExprC(cg, where, params, ptr)
        self.ctx = ctx or Ctx()
        self.ptr = ptr

    def unsupported(self, msg: str) -> NoReturn:
        raise NativeUnsupported(f"{self.where}: {msg}")

    # ---- bodies ----------------------------------------------------------------------------
    def body(self, prims: list[Json], ind: str = "    ") -> list[str]:
        """C lines for a list of primitives, jumps included."""
        targets = set()
        backward = False
        for i, p in enumerate(prims):
            op = p.get("op")
            if op in ("_jump", "_jump_if_zero"):
                t = self._target(p, 0 if op == "_jump" else 1)
                if not 0 <= t <= len(prims):
                    self.unsupported(f"jump to {t} outside the action")
                targets.add(t)
                backward |= t <= i
        out = []
        if backward:
            out.append(f"{ind}uint32_t loops_ = 0;")
        for i, p in enumerate(prims):
            if i in targets:
                out.append(f"L{i}:;")
            op = p.get("op")
            if op in ("_jump", "_jump_if_zero"):
                t = self._target(p, 0 if op == "_jump" else 1)
                guard = ""
                if t <= i:
                    guard = (f"if (UNLIKELY(++loops_ > {ACTION_LOOP_LIMIT}u)) {{ sw->stats[RT_ST_ACTION_LOOP]++; "
                             f"sw->drop_msg = {c_string(self.where + ': a loop did not end')}; "
                             f"sw->drop_kind = RT_EV_ACTION_LOOP; "
                             f"{self.ctx.drop} }} ")
                if op == "_jump":
                    out.append(f"{ind}{guard}goto L{t};")
                else:
                    self.x.uses_index = False
                    cond = self.x.truth(self.x.gen(p["parameters"][0], None))
                    out.append(f"{ind}if (!{cond}) {{ {self._check()}{guard}goto L{t}; }}")
                    out.extend(self._after(ind))
            else:
                self.primitive(p, ind, out)
        if len(prims) in targets:
            out.append(f"L{len(prims)}:;")
        return out

    def _target(self, p: Json, i: int) -> int:
        return int(parse_hexstr(p["parameters"][i]["value"]))

    def _check(self) -> str:
        if self.x.uses_index:
            return f"if (UNLIKELY(sw->abort)) {{ {self.ctx.drop} }} "
        return ""

    def _after(self, ind: str) -> list[str]:
        if self.x.uses_index:
            self.x.uses_index = False
            return [f"{ind}if (UNLIKELY(sw->abort)) {{ {self.ctx.drop} }}"]
        return []

    def primitive(self, p: Json, ind: str, out: list[str]) -> None:
        op = p.get("op")
        handler = getattr(self, "p_" + str(op), None)
        if handler is None:
            self.unsupported(f"unsupported primitive {op!r}")
        self.x.uses_index = False
        handler(p.get("parameters", []), ind, out)
        out.extend(self._after(ind))

    # ---- helpers ---------------------------------------------------------------------------
    def sm(self, name: str) -> Lv:
        return self.x.lvalue({"type": "field", "value": ["standard_metadata", name]})

    def hidden(self, name: str) -> str:
        return f"{self.ptr}->{self.layout.hidden[name].access}"

    def named(self, kind: str, table: dict[str, T], node: Any) -> T:
        name = node.get("value") if isinstance(node, dict) else None
        if not isinstance(node, dict) or node.get("type") != kind or name not in table:
            self.unsupported(f"expected a {kind} name, got {node!r}")
        return table[name]

    def int_arg(self, ps: list[Json], i: int, what: str) -> str:
        if len(ps) <= i:
            return "0"
        return self.x.i64_code(ps[i], what)

    # ---- primitives ------------------------------------------------------------------------
    def p_assign(self, ps: list[Json], ind: str, out: list[str]) -> None:
        out.append(ind + self.x.store(self.x.lvalue(ps[0]), ps[1]))

    p_modify_field = p_assign

    def _update(self, ps, ind, out, op):
        lv = self.x.lvalue(ps[0])
        node = {"type": "expression", "value": {"op": op, "left": ps[0], "right": ps[1]}}
        out.append(ind + self.x.store(lv, node))

    def p_add_to_field(self, ps: list[Json], ind: str, out: list[str]) -> None:
        self._update(ps, ind, out, "+")

    def p_subtract_from_field(self, ps: list[Json], ind: str, out: list[str]) -> None:
        self._update(ps, ind, out, "-")

    def p_assign_header(self, ps: list[Json], ind: str, out: list[str]) -> None:
        d, dt = self.x.header(ps[0])
        s, st = self.x.header(ps[1])
        if dt is not st:
            self.unsupported("assign_header between different header types")
        out.append(f"{ind}{d} = {s};")

    def p_assign_header_stack(self, ps: list[Json], ind: str, out: list[str]) -> None:
        d, s = self.x.stack(ps[0]), self.x.stack(ps[1])
        if d.htype is not s.htype or d.size != s.size:
            self.unsupported("assign_header_stack between different stacks")
        out.append(f"{ind}memcpy({self.ptr}->{d.array}, {self.ptr}->{s.array}, sizeof {self.ptr}->{d.array}); "
                   f"{self.ptr}->{d.next} = {self.ptr}->{s.next};")

    def p_add_header(self, ps: list[Json], ind: str, out: list[str]) -> None:
        h, _ = self.x.header(ps[0])
        out.append(f"{ind}if (!{h}.valid) {{ memset(&{h}, 0, sizeof {h}); {h}.valid = 1; }}")

    def p_remove_header(self, ps: list[Json], ind: str, out: list[str]) -> None:
        h, _ = self.x.header(ps[0])
        out.append(f"{ind}{h}.valid = 0;")

    def _stack_shift(self, ps, ind, out, push):
        cs = self.x.stack(ps[0])
        n = self.x.i64_code(ps[1], "push/pop count")
        a, nxt, size = f"{self.ptr}->{cs.array}", f"{self.ptr}->{cs.next}", cs.size
        lines = [f"{ind}{{ int64_t n_ = {n};", f"{ind}  if (n_ > 0) {{", f"{ind}    if (n_ > {size}) n_ = {size};"]
        if push:
            lines += [f"{ind}    memmove(&{a}[n_], &{a}[0], ({size} - n_) * sizeof {a}[0]);",
                      f"{ind}    for (int64_t i_ = 0; i_ < n_; i_++) {a}[i_].valid = 0;",
                      f"{ind}    {nxt} = {nxt} + n_ > {size} ? {size} : (uint32_t)({nxt} + n_);"]
        else:
            lines += [f"{ind}    memmove(&{a}[0], &{a}[n_], ({size} - n_) * sizeof {a}[0]);",
                      f"{ind}    for (int64_t i_ = {size} - n_; i_ < {size}; i_++) {a}[i_].valid = 0;",
                      f"{ind}    {nxt} = {nxt} > n_ ? (uint32_t)({nxt} - n_) : 0;"]
        lines.append(f"{ind}  }} }}")
        out.extend(lines)

    def p_push(self, ps: list[Json], ind: str, out: list[str]) -> None:
        self._stack_shift(ps, ind, out, True)

    def p_pop(self, ps: list[Json], ind: str, out: list[str]) -> None:
        self._stack_shift(ps, ind, out, False)

    def p_register_read(self, ps: list[Json], ind: str, out: list[str]) -> None:
        lv = self.x.lvalue(ps[0])
        reg = self.named("register_array", self.prog.registers, ps[1])
        idx = self.x.index_code(ps[2])
        value = self.x.register_value(reg, "i_")
        out.append(f"{ind}{{ uint64_t i_ = {idx}; {self._check()}{self.x.store_value(lv, value)} }}")

    def p_register_write(self, ps: list[Json], ind: str, out: list[str]) -> None:
        reg = self.named("register_array", self.prog.registers, ps[0])
        idx = self.x.index_code(ps[1])
        cells = f"sw->regs[{self.cg.reg_index(reg.name)}].cells"
        if reg.width > 64:
            limbs = (reg.width + 63) // 64
            self.cg.need_bits(reg.width)
            v = self.x.gen(ps[2], reg.width)
            out.append(f"{ind}{{ uint64_t i_ = {idx}; wide_t v_ = w_trunc({self.x.as_wide(v)}, {reg.width}); "
                       f"{self._check()}if (i_ < {reg.size}ULL) w_store((uint64_t *){cells} + i_ * {limbs}, "
                       f"{limbs}, v_); }}")
            return
        v = self.x.gen(ps[2], reg.width)
        ctype = self.cg.cell_type(reg.width)
        mask = (1 << reg.width) - 1
        out.append(f"{ind}{{ uint64_t i_ = {idx}; uint64_t v_ = {self.x.as_u64(v)} & {mask:#x}ULL; "
                   f"{self._check()}if (i_ < {reg.size}ULL) (({ctype} *){cells})[i_] = ({ctype})v_; }}")

    def p_count(self, ps: list[Json], ind: str, out: list[str]) -> None:
        c = self.named("counter_array", self.prog.counters, ps[0])
        if c.direct:
            self.unsupported(f"count() on direct counter {c.name}")
        idx = self.x.index_code(ps[1])
        k = f"sw->ctrs[{self.cg.counter_index(c.name)}]"
        plen = self.x.as_u64(self.x.read(self.sm("packet_length")))
        out.append(f"{ind}{{ uint64_t i_ = {idx}; {self._check()}if (i_ < {c.size}ULL) {{ {k}.packets[i_]++; "
                   f"{k}.bytes[i_] += {plen}; }} }}")

    def p_execute_meter(self, ps: list[Json], ind: str, out: list[str]) -> None:
        m = self.named("meter_array", self.prog.meters, ps[0])
        if m.direct:
            self.unsupported(f"execute_meter on direct meter {m.name}")
        idx = self.x.index_code(ps[1])
        lv = self.x.lvalue(ps[2])
        plen = self.x.as_u64(self.x.read(self.sm("packet_length")))
        color = {"type": "$c", "code": "c_", "ct": "u64", "lo": 0, "hi": 2}
        out.append(f"{ind}{{ uint64_t i_ = {idx}; {self._check()}uint64_t c_ = (uint64_t)rt_meter_exec(sw, "
                   f"{self.cg.meter_index(m.name)}, i_ > INT64_MAX ? -1 : (int64_t)i_, {plen}); "
                   f"{self.x.store(lv, color)} }}")

    def _drop(self, ind, out):
        espec = self.sm("egress_spec")
        mgrp = self.sm("mcast_grp")
        out.append(f"{ind}{espec.code} = sw->drop_port; {mgrp.code} = 0;")
        out.append(f'{ind}RT_TRACE(sw, "Primitive mark_to_drop: packet marked to be dropped");')

    def p_mark_to_drop(self, ps: list[Json], ind: str, out: list[str]) -> None:
        self._drop(ind, out)

    def p_drop(self, ps: list[Json], ind: str, out: list[str]) -> None:
        self._drop(ind, out)

    def _flags(self, ind, out, flag, value_name, fl_name, ps, session):
        parts = [f"{self.hidden(flag)} = 1;"]
        if session:
            parts.append(f"{self.hidden(value_name)} = {self.int_arg(ps, 0, 'clone session')};")
            parts.append(f"{self.hidden(fl_name)} = {self.int_arg(ps, 1, 'field list')};")
        else:
            parts.append(f"{self.hidden(fl_name)} = {self.int_arg(ps, 0, 'field list')};")
        out.append(ind + " ".join(parts))

    def p_clone_ingress_pkt_to_egress(self, ps: list[Json], ind: str, out: list[str]) -> None:
        self._flags(ind, out, "clone_pending", "clone_session", "clone_field_list", ps, True)

    p_clone_egress_pkt_to_egress = p_clone_ingress_pkt_to_egress

    def p_resubmit(self, ps: list[Json], ind: str, out: list[str]) -> None:
        self._flags(ind, out, "resubmit", None, "resubmit_field_list", ps, False)

    def p_recirculate(self, ps: list[Json], ind: str, out: list[str]) -> None:
        self._flags(ind, out, "recirculate", None, "recirculate_field_list", ps, False)

    def p_truncate(self, ps: list[Json], ind: str, out: list[str]) -> None:
        out.append(f"{ind}{self.hidden('truncate')} = {self.x.i64_code(ps[0], 'truncate length')};")

    def p_exit(self, ps: list[Json], ind: str, out: list[str]) -> None:
        out.append(f"{ind}{self.hidden('exit')} = 1; {self.ctx.exit}")

    def p_modify_field_with_hash_based_offset(self, ps: list[Json], ind: str, out: list[str]) -> None:
        lv = self.x.lvalue(ps[0])
        calc = ps[2].get("value") if isinstance(ps[2], dict) else None
        fn, bits = self.cg.calculation(calc, self.where)
        h = {"type": "$c", "code": "h_", "ct": "u64", "lo": 0, "hi": (1 << bits) - 1}
        size = ps[3]
        value = {"type": "expression", "value": {
            "op": "+", "left": ps[1], "right": {"type": "expression", "value": {
                "op": "?", "cond": {"type": "expression", "value": {
                    "op": "!=", "left": size, "right": {"type": "hexstr", "value": "0x0"}}},
                "left": {"type": "expression", "value": {"op": "%", "left": h, "right": size}},
                "right": h}}}}
        out.append(f"{ind}{{ uint64_t h_ = {fn}(sw, {self.ptr}, NULL, 0); {self.x.store(lv, value)} }}")

    def p_modify_field_rng_uniform(self, ps: list[Json], ind: str, out: list[str]) -> None:
        lv = self.x.lvalue(ps[0])
        lo, hi = self.x.exact(ps[1]), self.x.exact(ps[2])
        if not (-(1 << 63) <= min(lo.lo, hi.lo) and max(lo.hi, hi.hi) < (1 << 63)):
            self.unsupported("random() bounds wider than 64 bits")
        value = {"type": "$c", "code": "r_", "ct": "i64", "lo": lo.lo, "hi": hi.hi}
        out.append(f"{ind}{{ int64_t lo_ = {self.x.convert(lo, 'i64')}, hi_ = {self.x.convert(hi, 'i64')}; "
                   f"if (lo_ > hi_) {{ rt_set_error(sw, {c_string(self.where + ': random() with lo > hi')}); "
                   f"{self.ctx.abort} }} int64_t r_ = (int64_t)((uint64_t)lo_ + rt_rand_u64(sw, "
                   f"(uint64_t)hi_ - (uint64_t)lo_)); {self.x.store(lv, value)} }}")

    def p_log_msg(self, ps: list[Json], ind: str, out: list[str]) -> None:
        fmt = ps[0].get("value", "") if ps else ""
        args = []
        if len(ps) > 1 and ps[1].get("type") == "parameters_vector":
            args = ps[1]["value"]
        vals, negs = [], []
        for a in args:
            v = self.x.exact(a)
            if v.ct == "i64":
                vals.append(v.code)
                negs.append("1")
            else:
                vals.append(f"(int64_t){self.x.as_u64(v)}")
                negs.append("0")
        n = len(vals)
        arrays = (f"int64_t v_[{max(n, 1)}] = {{{', '.join(vals) or '0'}}}; "
                  f"int n_[{max(n, 1)}] = {{{', '.join(negs) or '0'}}};")
        out.append(f"{ind}if (UNLIKELY(sw->trace_on)) {{ {arrays} "
                   f"rt_trace_log(sw, {c_string(str(fmt))}, {n}, v_, n_); }}")

    def _assert(self, ps, ind, out, what):
        cond = self.x.cond(ps[0])
        msg = c_string(f"{self.where}: {what} failed")
        out.append(f"{ind}if (!{cond}) {{ {self._check()}sw->drop_msg = {msg}; rt_set_error(sw, {msg}); "
                   f"{self.ctx.drop} }}")

    def p_assert(self, ps: list[Json], ind: str, out: list[str]) -> None:
        self._assert(ps, ind, out, "assert")

    def p_assume(self, ps: list[Json], ind: str, out: list[str]) -> None:
        self._assert(ps, ind, out, "assume")

    def p_no_op(self, ps: list[Json], ind: str, out: list[str]) -> None:
        pass

    def p_generate_digest(self, ps: list[Json], ind: str, out: list[str]) -> None:
        out.append(f'{ind}RT_TRACE(sw, "generate_digest: digests are not supported, ignored");')
