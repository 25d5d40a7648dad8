"""Translate BMv2 action primitives (and _jump/_jump_if_zero control flow) into Python statements."""
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, TypeVar

from .errors import ProgramError
from .exprs import ExprGen, Lvalue
from .program import Json, Program
from .program_loader import parse_hexstr

T = TypeVar("T")


class _Unstructured(Exception):
    """Jumps that do not nest as if/else; fall back to a program-counter loop."""


class PrimitiveGen:
    """Emits Python lines for a list of primitives.

    `exit_stmt` is the statement that leaves the enclosing function after `exit` ("return 1" in an
    action function).  `traced` adds trace calls (log_msg).
    """

    def __init__(self, prog: Program, params: Callable[[int], str] | None, where: str, exit_stmt: str = "return 1",
                 traced: bool = False) -> None:
        self.prog = prog
        self.x = ExprGen(prog, params, where)
        self.where = where
        self.exit_stmt = exit_stmt
        self.traced = traced
        self.h = prog.hidden
        self.sm = lambda name: prog.fields[("standard_metadata", name)].slot

    def err(self, msg: str) -> NoReturn:
        raise ProgramError(f"{self.where}: {msg}")

    # ---- bodies with jumps -----------------------------------------------------------------
    def body(self, prims: list[Json], indent: int) -> list[str]:
        try:
            lines: list[str] = []
            self._block(prims, 0, len(prims), indent, lines)
            return lines
        except _Unstructured:
            return self._pc_loop(prims, indent)

    def _target(self, p: Json, i: int) -> int:
        return int(parse_hexstr(p["parameters"][i]["value"]))

    def _block(self, prims: list[Json], i: int, end: int, ind: int, out: list[str]) -> None:
        start_len = len(out)
        pad = " " * ind
        while i < end:
            p = prims[i]
            op = p.get("op")
            if op == "_jump_if_zero":
                t = self._target(p, 1)
                if not i < t <= end:
                    raise _Unstructured()
                cond = self.x.int_expr(p["parameters"][0])
                last = prims[t - 1] if t - 1 > i else None
                if last is not None and last.get("op") == "_jump":
                    t2 = self._target(last, 0)
                    if not t <= t2 <= end:
                        raise _Unstructured()
                    out.append(f"{pad}if {cond}:")
                    self._block(prims, i + 1, t - 1, ind + 4, out)
                    out.append(f"{pad}else:")
                    self._block(prims, t, t2, ind + 4, out)
                    i = t2
                else:
                    out.append(f"{pad}if {cond}:")
                    self._block(prims, i + 1, t, ind + 4, out)
                    i = t
                continue
            if op == "_jump":
                if self._target(p, 0) != end:
                    raise _Unstructured()
                i += 1
                continue
            self.primitive(p, ind, out)
            i += 1
        if len(out) == start_len:
            out.append(f"{pad}pass")

    def _pc_loop(self, prims: list[Json], ind: int) -> list[str]:
        pad = " " * ind
        out = [f"{pad}pc = 0", f"{pad}while pc < {len(prims)}:"]
        for i, p in enumerate(prims):
            out.append(f"{pad}    {'if' if i == 0 else 'elif'} pc == {i}:")
            op = p.get("op")
            if op == "_jump":
                out.append(f"{pad}        pc = {self._target(p, 0)}")
            elif op == "_jump_if_zero":
                cond = self.x.int_expr(p["parameters"][0])
                out.append(f"{pad}        pc = {i + 1} if {cond} else {self._target(p, 1)}")
            else:
                self.primitive(p, ind + 8, out)
                out.append(f"{pad}        pc = {i + 1}")
        return out

    # ---- single primitives -----------------------------------------------------------------
    def assign(self, lv: Lvalue, src_code: str, pad: str, out: list[str]) -> None:
        out.append(f"{pad}f[{lv.slot}] = {store_code(lv, src_code)}")

    def primitive(self, p: Json, ind: int, out: list[str]) -> None:
        pad = " " * ind
        op: Any = p.get("op")      # not a str: reported as unsupported below
        ps = p.get("parameters", [])
        try:
            handler = getattr(self, "p_" + op)
        except (AttributeError, TypeError):
            self.err(f"unsupported primitive {op!r}")
        handler(ps, pad, out, ind)

    def p_assign(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        lv = self.x.lvalue(ps[0])
        src = self.x.int_expr(ps[1])
        rng = self.x.value_range(ps[1])
        if rng is not None and rng[0] >= (-(1 << (lv.width - 1)) if lv.signed else 0) \
                and rng[1] <= (1 << lv.width) - 1:
            out.append(f"{pad}f[{lv.slot}] = {src}")  # already a value the field keeps as is
            return
        if ps[1].get("type") == "hexstr" and not lv.signed:
            out.append(f"{pad}f[{lv.slot}] = {parse_hexstr(ps[1]['value']) & ((1 << lv.width) - 1)}")
        elif ps[1].get("type") == "field" and not self.x.lvalue(ps[1]).signed and \
                self.x.lvalue(ps[1]).width <= lv.width:
            out.append(f"{pad}f[{lv.slot}] = {src}")
        else:
            self.assign(lv, src, pad, out)

    p_modify_field = p_assign

    def p_add_to_field(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        lv = self.x.lvalue(ps[0])
        self.assign(lv, f"({self.x.read(lv)} + {self.x.int_expr(ps[1])})", pad, out)

    def p_subtract_from_field(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        lv = self.x.lvalue(ps[0])
        self.assign(lv, f"({self.x.read(lv)} - {self.x.int_expr(ps[1])})", pad, out)

    def p_assign_header(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        d, hd = self.x.header(ps[0])
        s, _hs = self.x.header(ps[1])
        n = len(hd.fields) + 1
        out.append(f"{pad}_d = {d}; _s = {s}; f[_d:_d + {n}] = f[_s:_s + {n}]")

    def p_assign_header_stack(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        d = self.x.stack(ps[0])
        s = self.x.stack(ps[1])
        n = d.size * d.stride
        out.append(f"{pad}f[{d.base}:{d.base + n}] = f[{s.base}:{s.base + n}]; "
                   f"f[{d.next_slot}] = f[{s.next_slot}]")

    def p_add_header(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        v, h = self.x.header(ps[0])
        n = len(h.fields)
        out.append(f"{pad}_v = {v}")
        out.append(f"{pad}if not f[_v]:")
        out.append(f"{pad}    f[_v:_v + {n + 1}] = _ONE_ZEROS[{n}]")

    def p_remove_header(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        v, _ = self.x.header(ps[0])
        out.append(f"{pad}f[{v}] = 0")

    def p_push(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        st = self.x.stack(ps[0])
        n = self.x.int_expr(ps[1])
        out.append(f"{pad}_stk_push(f, {st.base}, {st.stride}, {st.size}, {st.next_slot}, {n})")

    def p_pop(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        st = self.x.stack(ps[0])
        n = self.x.int_expr(ps[1])
        out.append(f"{pad}_stk_pop(f, {st.base}, {st.stride}, {st.size}, {st.next_slot}, {n})")

    def _named(self, kind: str, table: dict[str, T], node: Json) -> T:
        name = node.get("value")
        if node.get("type") != kind or name not in table:
            self.err(f"expected a {kind} name, got {node!r}")
        return table[name]

    def p_register_read(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        lv = self.x.lvalue(ps[0])
        reg = self._named("register_array", self.prog.registers, ps[1])
        idx = self.x.int_expr(ps[2])
        out.append(f"{pad}_i = {idx}")
        value = f"(R_{reg.id}[_i] if 0 <= _i < {reg.size} else 0)"
        if reg.width <= lv.width:  # cells are unsigned and narrower: every field keeps them as is
            out.append(f"{pad}f[{lv.slot}] = {value}")
        else:
            self.assign(lv, value, pad, out)

    def p_register_write(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        reg = self._named("register_array", self.prog.registers, ps[0])
        idx = self.x.int_expr(ps[1])
        val = self.x.int_expr(ps[2])
        out.append(f"{pad}_i = {idx}")
        out.append(f"{pad}if 0 <= _i < {reg.size}: R_{reg.id}[_i] = {val} & {(1 << reg.width) - 1}")

    def p_count(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        c = self._named("counter_array", self.prog.counters, ps[0])
        idx = self.x.int_expr(ps[1])
        plen = self.sm("packet_length")
        out.append(f"{pad}_i = {idx}")
        out.append(f"{pad}if 0 <= _i < {c.size}: CP_{c.id}[_i] += 1; CB_{c.id}[_i] += f[{plen}]")

    def p_execute_meter(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        m = self._named("meter_array", self.prog.meters, ps[0])
        idx = self.x.int_expr(ps[1])
        lv = self.x.lvalue(ps[2])
        plen = self.sm("packet_length")
        self.assign(lv, f"M_{m.id}.execute({idx}, f[{plen}])", pad, out)

    def _drop(self, pad: str, out: list[str]) -> None:
        out.append(f"{pad}f[{self.sm('egress_spec')}] = DROP_PORT; f[{self.sm('mcast_grp')}] = 0")
        if self.traced:
            out.append(f"{pad}TR('Primitive mark_to_drop: packet marked to be dropped')")

    def p_mark_to_drop(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        self._drop(pad, out)

    def p_drop(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        self._drop(pad, out)

    def _field_list_arg(self, ps: list[Json], i: int) -> str:
        if len(ps) <= i:
            return "0"
        return self.x.int_expr(ps[i])

    def _clone(self, ps: list[Json], pad: str, out: list[str]) -> None:
        h = self.h
        out.append(f"{pad}f[{h['clone_pending']}] = 1; f[{h['clone_session']}] = {self.x.int_expr(ps[0])}; "
                   f"f[{h['clone_field_list']}] = {self._field_list_arg(ps, 1)}")

    def p_clone_ingress_pkt_to_egress(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        self._clone(ps, pad, out)

    def p_clone_egress_pkt_to_egress(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        self._clone(ps, pad, out)

    def p_resubmit(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        h = self.h
        out.append(f"{pad}f[{h['resubmit']}] = 1; f[{h['resubmit_field_list']}] = {self._field_list_arg(ps, 0)}")

    def p_recirculate(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        h = self.h
        out.append(f"{pad}f[{h['recirculate']}] = 1; "
                   f"f[{h['recirculate_field_list']}] = {self._field_list_arg(ps, 0)}")

    def p_truncate(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        out.append(f"{pad}f[{self.h['truncate']}] = {self.x.int_expr(ps[0])}")

    def p_exit(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        out.append(f"{pad}f[{self.h['exit']}] = 1")
        out.append(f"{pad}{self.exit_stmt}")

    def p_modify_field_with_hash_based_offset(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        lv = self.x.lvalue(ps[0])
        base = self.x.int_expr(ps[1])
        calc = ps[2].get("value")
        if calc not in self.prog_calcs():
            self.err(f"unknown calculation {calc!r}")
        size = self.x.int_expr(ps[3])
        out.append(f"{pad}_h = CALC[{calc!r}](f, b''); _n = {size}")
        self.assign(lv, f"({base} + (_h % _n if _n else _h))", pad, out)

    def prog_calcs(self) -> set[str]:
        return {c["name"] for c in self.prog.json.get("calculations", [])}

    def p_modify_field_rng_uniform(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        lv = self.x.lvalue(ps[0])
        self.assign(lv, f"_randint({self.x.int_expr(ps[1])}, {self.x.int_expr(ps[2])})", pad, out)

    def p_log_msg(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        if not self.traced:
            return
        fmt = ps[0].get("value", "")
        args = []
        if len(ps) > 1 and ps[1].get("type") == "parameters_vector":
            args = [self.x.int_expr(a) for a in ps[1]["value"]]
        out.append(f"{pad}TR(_fmt_log({fmt!r}, ({', '.join(args)}{',' if args else ''})))")

    def p_assert(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        cond = self.x.cond(ps[0])
        out.append(f"{pad}if not {cond}: raise AssertFail({self.where + ': assert failed'!r})")

    def p_assume(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        cond = self.x.cond(ps[0])
        out.append(f"{pad}if not {cond}: raise AssertFail({self.where + ': assume failed'!r})")

    def p_no_op(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        pass

    def p_generate_digest(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        if self.traced:
            out.append(f"{pad}TR('generate_digest: digests are not supported, ignored')")

    def p__jump(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        raise _Unstructured()

    def p__jump_if_zero(self, ps: list[Json], pad: str, out: list[str], ind: int) -> None:
        raise _Unstructured()


def store_code(lv: Lvalue, src_code: str) -> str:
    """Source of the value a field keeps when `src_code` is written to it (BMv2 export_bytes)."""
    m = (1 << lv.width) - 1
    if lv.signed:
        return f"_sstore({src_code}, {-(1 << (lv.width - 1))}, {m})"
    return f"{src_code} & {m}"


def stk_push(f: list[int], base: int, stride: int, size: int, next_slot: int, n: int) -> None:
    """push_front(n): shift elements up by n; the first n become invalid."""
    if n <= 0:
        return
    n = min(n, size)
    end = base + size * stride
    f[base + n * stride:end] = f[base:end - n * stride]
    for i in range(n):
        f[base + i * stride] = 0
    f[next_slot] = min(f[next_slot] + n, size)


def stk_pop(f: list[int], base: int, stride: int, size: int, next_slot: int, n: int) -> None:
    """pop_front(n): shift elements down by n; the last n become invalid."""
    if n <= 0:
        return
    n = min(n, size)
    end = base + size * stride
    f[base:end - n * stride] = f[base + n * stride:end]
    for i in range(size - n, size):
        f[base + i * stride] = 0
    f[next_slot] = max(f[next_slot] - n, 0)


def reg_get(reg: Sequence[int], idx: int) -> int:
    return reg[idx] if 0 <= idx < len(reg) else 0


def fmt_log(fmt: str, args: Iterable[object]) -> str:
    out = fmt
    for a in args:
        out = out.replace("{}", str(a), 1)
    return out
