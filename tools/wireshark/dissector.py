"""Write the Wireshark/tshark Lua dissector of the p4reduce header (`make wireshark` installs it).

The Lua is generated from the protocol's own definitions (protocol/wire.py's HEADER_DTYPE, the
message types, flags and the aggregation UDP port of protocol/constants.py), so it decodes what
the workers and the switch really send, field for field, after any change to the header.

    python tools/wireshark/dissector.py                    # install for this user (Wireshark, tshark)
    python tools/wireshark/dissector.py --out FILE.lua     # write it elsewhere
    tshark -X lua_script:FILE.lua -r pcaps/s1-eth1_in.pcap # use it without installing

The dissector registers on UDP port 48864 (changeable in Wireshark: Preferences > Protocols >
P4REDUCE), names every header field (display filters `p4reduce.job_id == 1`, `p4reduce.slot`,
`p4reduce.flags.retx`, ...), and lists the lanes of every sub-block the bitmap says is present;
the sub-block size is the payload length over the present sub-blocks, so programs built with any
LANES/SUBBLOCK are decoded.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys

from p4reduce.protocol import constants as C
from p4reduce.protocol import wire
from p4reduce.worker.quantize import EXP_MIN

# Wireshark's per-user Lua plugin folder (Wireshark >= 2.6 on Linux); tshark reads it too.
USER_PLUGINS = pathlib.Path("~/.local/lib/wireshark/plugins").expanduser()
FILE_NAME = "p4reduce.lua"

# How the named fields are shown; any other header field is shown as an unsigned number.
FIELD_TITLES = {
    "msg_type": "Message type", "flags": "Flags", "job_id": "Job id", "rank": "Rank",
    "count": "Count (workers summed in a result)", "offset": "Offset (element of the tensor)",
    "next_offset": "Next offset (of this stream)", "exponent": "Exponent (shared scale)",
    "reserved": "Reserved", "bitmap": "Sub-block bitmap", "wire_token": "Wire token (the job's secret)",
}


def _lua_table(values: dict[int, str]) -> str:
    return "{ " + ", ".join(f'[{k}] = "{v}"' for k, v in sorted(values.items())) + " }"


def generate() -> str:
    """The dissector's Lua source."""
    fields = wire.HEADER_DTYPE.fields or {}
    msg_types = {int(m): m.name for m in C.MsgType}
    flags = [(f.name or "", int(f)) for f in C.Flags if int(f)]
    decl, adds, names = [], [], []
    for name, (dtype, offset, *_) in fields.items():
        size = dtype.itemsize
        bits = size * 8
        if name == "slot_ver":
            decl.append(f'f.slot = ProtoField.uint{bits}("p4reduce.slot", "Slot", base.DEC, nil, '
                        f'{wire.SLOT_MASK:#x})')
            decl.append(f'f.ver = ProtoField.uint{bits}("p4reduce.ver", "Shadow copy (ver)", base.DEC, nil, '
                        f'{1 << wire.SLOT_BITS:#x})')
            adds.append(f"  tree:add(f.slot, buf({offset}, {size}))")
            adds.append(f"  tree:add(f.ver, buf({offset}, {size}))")
            names += ["slot", "ver"]
            continue
        title = FIELD_TITLES.get(name, name.replace("_", " ").capitalize())
        if name == "msg_type":
            decl.append(f'f.msg_type = ProtoField.uint{bits}("p4reduce.msg_type", "{title}", base.DEC, '
                        f'{_lua_table(msg_types)})')
        elif name == "flags":
            decl.append(f'f.flags = ProtoField.uint{bits}("p4reduce.flags", "{title}", base.HEX)')
            for fname, value in flags:
                decl.append(f'f.flag_{fname.lower()} = ProtoField.bool("p4reduce.flags.{fname.lower()}", '
                            f'"{fname}", {bits}, nil, {value:#x})')
        elif name == "next_offset":
            decl.append(f'f.next_offset = ProtoField.uint{bits}("p4reduce.next_offset", "{title}", base.DEC)')
        elif name in ("bitmap", "wire_token"):
            decl.append(f'f.{name} = ProtoField.uint{bits}("p4reduce.{name}", "{title}", base.HEX)')
        elif size in (1, 2, 4):
            decl.append(f'f.{name} = ProtoField.uint{bits}("p4reduce.{name}", "{title}", base.DEC)')
        else:
            decl.append(f'f.{name} = ProtoField.bytes("p4reduce.{name}", "{title}")')
        names.append(name)
        if name == "flags":
            adds.append(f"  local flags_item = tree:add(f.flags, buf({offset}, {size}))")
            adds += [f"  flags_item:add(f.flag_{fname.lower()}, buf({offset}, {size}))" for fname, _ in flags]
        elif name == "next_offset":
            adds.append(f"  local next_item = tree:add(f.next_offset, buf({offset}, {size}))")
            adds.append(f"  if buf({offset}, {size}):uint() == {C.NEXT_NONE} then "
                        "next_item:append_text(\" (none: the stream's last block)\") end")
        elif name == "exponent":
            # a scale only where one applies: float blocks propose codes >= EXP_BIAS + EXP_MIN;
            # exact int32 streams carry code 0 (no exponent)
            adds.append(f"  local exp_item = tree:add(f.exponent, buf({offset}, {size}))")
            adds.append(f"  local exp_code = buf({offset}, {size}):uint()")
            adds.append(f"  if exp_code >= {C.EXP_BIAS + EXP_MIN} then exp_item:append_text("
                        f'string.format(" (scale 2^%d)", exp_code - {C.EXP_BIAS})) '
                        'else exp_item:append_text(" (no scale: exact integers)") end')
        else:
            adds.append(f"  tree:add(f.{name}, buf({offset}, {size}))")
    o = {name: off for name, (_, off, *_) in fields.items()}
    s = {name: dt.itemsize for name, (dt, *_) in fields.items()}

    def read(name: str) -> str:
        return f"buf({o[name]}, {s[name]}):uint()"

    flag_names = ", ".join(f'{{ {value:#x}, "{fname}" }}' for fname, value in flags)
    return f'''-- p4reduce: Wireshark/tshark dissector for the p4reduce aggregation header.
-- Generated by tools/wireshark/dissector.py from protocol/wire.py and protocol/constants.py:
-- regenerate (`make wireshark`) rather than edit. Layout: docs/protocol.md.

local p4reduce = Proto("p4reduce", "p4reduce in-network aggregation")
local f = p4reduce.fields
{chr(10).join(decl)}
f.subblock = ProtoField.bytes("p4reduce.subblock", "Sub-block")
f.lane = ProtoField.int32("p4reduce.lane", "Lane", base.DEC)

local e_length = ProtoExpert.new("p4reduce.bad_length", "Payload length does not match the bitmap",
                                 expert.group.MALFORMED, expert.severity.ERROR)
local e_short = ProtoExpert.new("p4reduce.short", "Shorter than the {C.HEADER_BYTES}-byte p4reduce header",
                                expert.group.MALFORMED, expert.severity.ERROR)
p4reduce.experts = {{ e_length, e_short }}

local HEADER_BYTES = {C.HEADER_BYTES}
local MSG_TYPES = {_lua_table(msg_types)}
local FLAGS = {{ {flag_names} }}
p4reduce.prefs.port = Pref.uint("UDP port", {C.AGG_UDP_PORT}, "the switch's aggregation UDP port")

local function popcount(x)
  local n = 0
  while x > 0 do n = n + (x % 2); x = math.floor(x / 2) end
  return n
end

function p4reduce.dissector(buf, pinfo, root)
  local length = buf:len()
  pinfo.cols.protocol = "p4reduce"
  local tree = root:add(p4reduce, buf(0, math.min(length, HEADER_BYTES)))
  if length < HEADER_BYTES then
    tree:add_proto_expert_info(e_short)
    return
  end
{chr(10).join(adds)}
  local msg = {read("msg_type")}
  local flags = {read("flags")}
  local slot_ver = {read("slot_ver")}
  local bitmap = {read("bitmap")}
  local shown = {{}}
  for _, fl in ipairs(FLAGS) do
    if math.floor(flags / fl[1]) % 2 == 1 then shown[#shown + 1] = fl[2] end
  end
  pinfo.cols.info = string.format("%s job=%d rank=%d slot=%d/v%d off=%d bitmap=0x%04x%s",
    MSG_TYPES[msg] or ("type" .. msg), {read("job_id")}, {read("rank")}, slot_ver % {1 << wire.SLOT_BITS},
    math.floor(slot_ver / {1 << wire.SLOT_BITS}), {read("offset")}, bitmap,
    #shown > 0 and (" [" .. table.concat(shown, ",") .. "]") or "")
  local present = popcount(bitmap)
  local body = length - HEADER_BYTES
  if present == 0 then
    if body ~= 0 then tree:add_proto_expert_info(e_length) end
    return
  end
  if body % (present * 4) ~= 0 or body == 0 then
    tree:add_proto_expert_info(e_length)
    return
  end
  local sub = body / (present * 4)          -- lanes per sub-block, from the length
  tree:set_len(length)
  local at = HEADER_BYTES
  for k = 0, 15 do
    if math.floor(bitmap / 2 ^ k) % 2 == 1 then
      local block = tree:add(f.subblock, buf(at, sub * 4))
      block:set_text(string.format("Sub-block %d: lanes %d..%d", k, k * sub, k * sub + sub - 1))
      for j = 0, sub - 1 do
        block:add(f.lane, buf(at + 4 * j, 4)):prepend_text(string.format("[%d] ", k * sub + j))
      end
      at = at + sub * 4
    end
  end
end

local registered_port = nil
function p4reduce.init()
  local udp = DissectorTable.get("udp.port")
  if registered_port ~= nil then udp:remove(registered_port, p4reduce) end
  registered_port = p4reduce.prefs.port
  udp:add(registered_port, p4reduce)
end
DissectorTable.get("udp.port"):add({C.AGG_UDP_PORT}, p4reduce)
registered_port = {C.AGG_UDP_PORT}
'''


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tools/wireshark/dissector.py", description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", metavar="FILE",
                    help=f"where to write the Lua (default: {USER_PLUGINS / FILE_NAME}, which Wireshark and "
                         "tshark load for this user)")
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out) if args.out else USER_PLUGINS / FILE_NAME
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        tmp.write_text(generate())
        tmp.replace(out)
    except OSError as e:
        print(f"dissector: cannot write {out}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(f"p4reduce dissector written to {out}")
    if not args.out:
        print("Wireshark and tshark now decode UDP port "
              f"{C.AGG_UDP_PORT} as p4reduce (restart Wireshark if it is open); e.g.\n"
              "  tshark -r pcaps/s1-eth1_in.pcap -Y p4reduce -O p4reduce")
    return 0


if __name__ == "__main__":
    sys.exit(main())
