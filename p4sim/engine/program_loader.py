"""Loading BMv2 JSON into a program.Program: read and validate the document, lay out the slots.

`load_json` accepts what `Switch` accepts (a dict, JSON text or bytes, a path); `build_program`
checks the shape BMv2 expects and assigns every header, field and stack its slot.
"""
import json
import os

from .errors import ProgramError
from .program import (
    HIDDEN_SLOTS,
    STANDARD_FIELDS,
    ActionInfo,
    CounterInfo,
    DefaultEntryInfo,
    FieldInfo,
    HeaderInfo,
    KeyInfo,
    MeterInfo,
    ParamInfo,
    Program,
    RegisterInfo,
    StackInfo,
    TableInfo,
)


def load_json(source: dict | str | bytes | bytearray | os.PathLike) -> dict:
    """Accept a dict, a JSON string/bytes, or a path; return the dict."""
    if isinstance(source, dict):
        return source
    if isinstance(source, (bytes, bytearray)):
        source = source.decode("utf-8")
    if isinstance(source, os.PathLike) or (isinstance(source, str) and source.lstrip()[:1] not in ("{", "[")):
        path = os.fspath(source)
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise ProgramError(f"cannot read BMv2 JSON {path}: {exc.strerror}") from None
        source = text
    try:
        data = json.loads(source)
    except json.JSONDecodeError as exc:
        raise ProgramError(f"BMv2 JSON: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ProgramError("BMv2 JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise ProgramError("BMv2 JSON: top level must be an object")
    return data


def parse_hexstr(text: str | int) -> int:
    """BMv2 hexstr (may be negative) -> int."""
    if isinstance(text, int):
        return text
    neg = text.startswith("-")
    value = int(text[1:] if neg else text, 16)
    return -value if neg else value


# What a loaded program may ask the switch to allocate: the engine keeps every register, counter
# and meter cell and every packet-state slot in memory up front, as BMv2 does, so a hostile JSON
# (pushed over P4Runtime, say) could otherwise make it allocate without bound.
MAX_STATE_CELLS = 1 << 26      # register, counter and meter cells together (~0.5 GB of ints)
MAX_SLOTS = 1 << 20            # header fields, validity bits and metadata of one packet


def build_program(data: dict) -> Program:
    """Validate the JSON's shape and build the Program with its slot layout."""
    prog = Program(json=data)
    try:
        _layout(prog, data)
        _objects(prog, data)
        _check_sizes(prog)
    except ProgramError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ProgramError(f"BMv2 JSON: malformed or unsupported content ({type(exc).__name__}: {exc})") from None
    return prog


def _check_sizes(prog: Program) -> None:
    if prog.nslots > MAX_SLOTS:
        raise ProgramError(f"BMv2 JSON: {prog.nslots} header fields and metadata per packet are more than "
                           f"p4sim holds ({MAX_SLOTS})")
    total = 0
    for kind, objs in (("register", prog.registers), ("counter", prog.counters), ("meter", prog.meters)):
        for o in objs.values():
            if o.size < 0:
                raise ProgramError(f"{kind} {o.name}: size {o.size} is negative")
            total += o.size
            if total > MAX_STATE_CELLS:
                raise ProgramError(f"{kind} {o.name}: size {o.size} takes the program's registers, counters "
                                   f"and meters past the {MAX_STATE_CELLS} cells p4sim allocates")


def _layout(prog: Program, data: dict) -> None:
    htypes = {}
    for ht in data.get("header_types", []):
        fields = []
        for fdesc in ht["fields"]:
            name, width = fdesc[0], fdesc[1]
            signed = bool(fdesc[2]) if len(fdesc) > 2 else False
            if width == "*":
                raise ProgramError(f"header type {ht['name']}: variable-length field {name!r} is not supported")
            fields.append((name, int(width), signed))
        htypes[ht["name"]] = fields
    by_id = {h["id"]: h for h in data.get("headers", [])}
    slot = 0
    in_stack = {}
    for st in data.get("header_stacks", []):
        for i, hid in enumerate(st["header_ids"]):
            in_stack[hid] = (st["name"], i)

    def place(h, stack=None, index=0):
        nonlocal slot
        if h["header_type"] not in htypes:
            raise ProgramError(f"header {h['name']}: unknown header_type {h['header_type']!r}")
        vslot = slot
        slot += 1
        finfos = []
        for name, width, signed in htypes[h["header_type"]]:
            finfos.append(FieldInfo(h["name"], name, width, signed, slot))
            slot += 1
        info = HeaderInfo(h["name"], h["id"], h["header_type"], bool(h.get("metadata")), vslot,
                          tuple(finfos), stack, index)
        prog.headers[h["name"]] = info
        prog.header_ids[h["id"]] = info
        for fi in finfos:
            prog.fields[(h["name"], fi.name)] = fi

    for h in data.get("headers", []):
        if h["id"] not in in_stack:
            place(h)
    for st in data.get("header_stacks", []):
        members = [by_id[hid] for hid in st["header_ids"]]
        base = slot
        for i, h in enumerate(members):
            place(h, st["name"], i)
        stride = (slot - base) // max(1, len(members))
        prog.stacks[st["name"]] = StackInfo(st["name"], st["id"], len(members),
                                            tuple(h["name"] for h in members), slot, base, stride)
        slot += 1
    # v1model standard metadata: use the program's, or hidden slots when a hand-written JSON lacks them
    aliases = {a[0]: tuple(a[1]) for a in data.get("field_aliases", [])}
    for fname, width in STANDARD_FIELDS.items():
        key = ("standard_metadata", fname)
        if key in prog.fields:
            continue
        alias = aliases.get(f"standard_metadata.{fname}") or aliases.get(f"intrinsic_metadata.{fname}")
        if alias and alias in prog.fields:
            prog.fields[key] = prog.fields[alias]
            continue
        prog.fields[key] = FieldInfo("standard_metadata", fname, width, False, slot)
        slot += 1
    for name in HIDDEN_SLOTS:
        prog.hidden[name] = slot
        slot += 1
    prog.nslots = slot


def _objects(prog: Program, data: dict) -> None:
    for name, value in data.get("errors", []):
        prog.errors[name] = value
    for name, value in (("NoError", 0), ("PacketTooShort", 1), ("NoMatch", 2), ("StackOutOfBounds", 3),
                        ("HeaderTooShort", 4), ("ParserTimeout", 5), ("ParserInvalidArgument", 6)):
        prog.errors.setdefault(name, value)
    for a in data.get("actions", []):
        prog.actions[a["id"]] = ActionInfo(a["name"], a["id"], tuple(
            ParamInfo(p["name"], int(p["bitwidth"])) for p in a.get("runtime_data", [])))
    for vs in data.get("parse_vsets", []):
        prog.parse_vsets[vs["name"]] = int(vs["compressed_bitwidth"])
    for fl in data.get("field_lists", []):
        elems = []
        for e in fl.get("elements", []):
            if e.get("type") == "field":
                elems.append(tuple(e["value"]))
        prog.field_lists[fl["id"]] = elems
    for r in data.get("register_arrays", []):
        prog.registers[r["name"]] = RegisterInfo(r["name"], r["id"], int(r["size"]), int(r["bitwidth"]))
    for c in data.get("counter_arrays", []):
        prog.counters[c["name"]] = CounterInfo(c["name"], c["id"], int(c.get("size", 0) or 0),
                                               bool(c.get("is_direct")), c.get("binding"))
    for m in data.get("meter_arrays", []):
        prog.meters[m["name"]] = MeterInfo(m["name"], m["id"], int(m.get("size", 0) or 0),
                                           bool(m.get("is_direct")), m.get("binding"),
                                           tuple(m["result_target"]) if m.get("result_target") else None,
                                           m.get("type", "bytes"))
    direct = {c.binding: c.name for c in prog.counters.values() if c.direct}
    direct_m = {m.binding: m.name for m in prog.meters.values() if m.direct}
    for pipe in data.get("pipelines", []):
        for t in pipe.get("tables", []):
            if t.get("type", "simple") != "simple":
                raise ProgramError(f"table {t['name']}: implementation {t['type']!r} (action profiles/"
                                   f"selectors) is not supported")
            keys = []
            for k in t.get("key", []):
                mt = k["match_type"]
                if mt == "valid":
                    target = k["target"]
                    width = 1
                    kname = k.get("name") or f"{target}.$valid$"
                else:
                    target = tuple(k["target"])
                    if target not in prog.fields and target[1] != "$valid$":
                        raise ProgramError(f"table {t['name']}: key field {'.'.join(target)} is not declared")
                    width = 1 if target[1] == "$valid$" else prog.fields[target].width
                    kname = k.get("name") or ".".join(target)
                mask = parse_hexstr(k["mask"]) if k.get("mask") else None
                keys.append(KeyInfo(kname, mt, target, width, mask))
            de = t.get("default_entry")
            dinfo = None
            if de is not None:
                aid = de["action_id"]
                if aid not in prog.actions:
                    raise ProgramError(f"table {t['name']}: default action id {aid} is not declared")
                dinfo = DefaultEntryInfo(aid, prog.actions[aid].name,
                                         tuple(parse_hexstr(x) for x in de.get("action_data", [])),
                                         bool(de.get("action_const", False)),
                                         bool(de.get("action_entry_const", False)))
            for aid in t.get("action_ids", []):
                if aid not in prog.actions:
                    raise ProgramError(f"table {t['name']}: action id {aid} is not declared")
            prog.tables[t["name"]] = TableInfo(
                t["name"], t["id"], pipe["name"], t.get("match_type", "exact"), tuple(keys),
                tuple(t.get("action_ids", [])), tuple(prog.actions[a].name for a in t.get("action_ids", [])),
                int(t.get("max_size", 1024)),
                direct.get(t["name"]) if t.get("with_counters") else None,
                direct_m.get(t["name"]) or t.get("direct_meters"), dinfo,
                tuple(t.get("entries", []) or []), dict(t.get("next_tables", {})),
                t.get("base_default_next"))
