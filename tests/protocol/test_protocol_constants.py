"""protocol/constants.py and p4src/{config,constants}.p4 define the same values."""
import pathlib
import re

from p4reduce.protocol import constants as C
from p4reduce.protocol import p4names

P4SRC = pathlib.Path(__file__).resolve().parents[2] / "p4reduce" / "p4src"


def p4_defines():
    text = (P4SRC / "config.p4").read_text() + (P4SRC / "constants.p4").read_text()
    values = {m[0]: int(m[1], 0) for m in re.findall(r"#define (\w+) (\d+|0x[0-9a-fA-F]+)\b", text)}
    values.update({m[0]: int(m[1], 0) for m in re.findall(r"const bit<\d+>\s+(\w+)\s*=\s*(\w+);", text)})
    return values


def test_sizes_agree():
    d = p4_defines()
    assert d["LANES"] == C.LANES
    assert d["SUBBLOCK"] == C.SUBBLOCK
    assert d["SLOTS"] == C.SLOTS
    assert d["MAX_WORKERS"] == C.MAX_WORKERS
    assert d["AGG_UDP_PORT"] == C.AGG_UDP_PORT
    assert d["P4R_HEADER_BYTES"] == C.HEADER_BYTES
    assert d["NEXT_NONE"] == C.NEXT_NONE
    assert d["RESULT_TTL"] == C.RESULT_TTL
    assert d["DROP_REASONS_SIZE"] == C.DROP_REASONS_SIZE
    assert d["AGG_EVENTS_SIZE"] == C.AGG_EVENTS_SIZE


def test_enums_agree():
    d = p4_defines()
    assert d["MSG_CONTRIB"] == C.MsgType.CONTRIB and d["MSG_RESULT"] == C.MsgType.RESULT
    assert d["FLAG_EOT"] == C.Flags.EOT and d["FLAG_RETX"] == C.Flags.RETX
    assert d["MODE_DENSE"] == C.Mode.DENSE and d["MODE_SPARSE"] == C.Mode.SPARSE
    for reason in C.DropReason:
        assert d[f"DROP_{reason.name}"] == reason, reason
    for event in C.AggEvent:
        assert d[f"EVENT_{event.name}"] == event, event
    assert max(C.DropReason) < C.DROP_REASONS_SIZE
    assert C.DropReason.SPOOFED_SOURCE == 17 and C.DropReason.BAD_WIRE_TOKEN == 18   # appended, others unchanged
    assert C.DropReason.STALE_RESULT == 19 and C.DROP_REASONS_SIZE == 20
    assert (C.AggEvent.SENT_UP, C.AggEvent.RESENT_UP, C.AggEvent.RESULT_DOWN) == (4, 5, 6)
    assert C.AGG_EVENTS_SIZE == 7 and max(C.AggEvent) < C.AGG_EVENTS_SIZE


def test_p4_names_exist_in_the_source():
    text = "".join(p.read_text() for p in P4SRC.glob("*.p4"))
    for name in (p4names.JOBS, p4names.WORKERS, p4names.IPV4_ROUTES, p4names.L2_FORWARD,
                 p4names.WORKER_ADDRS, p4names.SET_JOB, p4names.SET_RANK, p4names.ROUTE,
                 p4names.FORWARD, p4names.FLOOD, p4names.SET_WORKER_ADDR, p4names.DROP_REASONS,
                 p4names.AGG_EVENTS, p4names.SEEN, p4names.COUNT, p4names.ROUND_OFFSET,
                 p4names.UNION_BITMAP, p4names.MIN_NEXT, p4names.MAX_EXP, p4names.SOURCE_GUARD,
                 p4names.HOST_SOURCE, p4names.TREE, p4names.AGGREGATE_ROOT, p4names.AGGREGATE_CHILD,
                 p4names.HAVE_RESULT):
        for part in name.split(".")[1:]:        # stage instance (if any), then the object
            assert re.search(rf"\b{part}\b", text), name
