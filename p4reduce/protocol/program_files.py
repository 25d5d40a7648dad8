"""The aggregation program's build outputs: where its source is, how its outputs are named
(build/p4reduce.json beside build/p4reduce.p4info.txtpb), and the packet layout a built program
parses. Compiling it is p4reduce.p4src.build's (the protocol runs no compiler).
"""
from __future__ import annotations

import json
import pathlib

from p4reduce import P4SRC_DIR
from p4reduce.protocol.p4names import lane_layout
from p4reduce.protocol.wire import Layout, WireError

SOURCE = P4SRC_DIR / "p4reduce.p4"


def p4info_for(json_path: str | pathlib.Path) -> pathlib.Path:
    """build/p4reduce.json -> build/p4reduce.p4info.txtpb: where the P4Info of a JSON sits."""
    path = pathlib.Path(json_path)
    return path.with_name(path.stem + ".p4info.txtpb")


def packet_layout(json_path: str | pathlib.Path) -> Layout:
    """The packet layout a built program parses, from the lane registers of its BMv2 JSON (the
    controller reads the same grid from the P4Info). Raises ValueError naming the file and what
    is wrong with it."""
    path = pathlib.Path(json_path)
    try:
        with open(path, "rb") as f:
            program = json.load(f)
        names = [r["name"] for r in program["register_arrays"]]
        num_subblocks, subblock = lane_layout(names)
        return Layout(num_subblocks * subblock, subblock)
    except OSError as e:
        raise ValueError(f"{path}: cannot read it: {e.strerror}") from None
    except (ValueError, KeyError, TypeError, WireError) as e:   # json's errors are ValueErrors
        raise ValueError(f"{path}: not a p4reduce program's BMv2 JSON ({e})") from None
