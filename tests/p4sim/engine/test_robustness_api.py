"""Robustness (malformed packets, odd ports, bad JSON), the lock under concurrent use, value parsing,
and the register/counter API errors."""
import json
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4sim.engine import EngineError, NotFoundError, ProgramError, Switch
from p4sim.engine.values import parse_match, parse_value

from .bmv2 import SM, C, E, F, P, Program, extract
from .test_parser import program as parser_program
from .test_primitives import register_program
from .test_tables import program as table_program

_FUZZ = []


def _fuzz_switch():
    if not _FUZZ:
        _FUZZ.append(parser_program(peek=True))
    return _FUZZ[0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(port=st.integers(min_value=-5, max_value=1 << 20), frame=st.binary(max_size=64))
def test_random_frames_never_crash(port, frame):
    sw = _fuzz_switch()
    out = sw.process(port, frame)
    assert isinstance(out, list)
    assert sw.stats["internal_errors"] == 0, sw.last_internal_error


def test_frames_on_the_reference_programs_never_crash(reference_dir):
    import random
    rnd = random.Random(7)
    for name in ("fwd_basic", "parse_mix", "agg_mini"):
        sw = Switch(reference_dir / "p4c-out" / f"{name}.json")
        for _ in range(300):
            frame = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 80)))
            sw.process(rnd.randrange(0, 600), frame)
        assert sw.stats["internal_errors"] == 0, sw.last_internal_error


@pytest.mark.parametrize("source,message", [
    ("{not json", "invalid JSON"),
    ("[1, 2]", "top level"),
    ("/nonexistent/prog.json", "cannot read"),
])
def test_bad_json_sources(source, message):
    with pytest.raises(ProgramError, match=message):
        Switch(source)


def test_unsupported_content_is_a_program_error_naming_it():
    p = Program()
    p.header("h", [("a", 8)])
    p.state("start", [extract("h")])
    p.deparse("h")
    p.run("ingress", "ing", [P("frobnicate", F("h", "a"))])
    with pytest.raises(ProgramError, match="action ing: unsupported primitive 'frobnicate'"):
        Switch(p.build())
    j = p.build()
    j["pipelines"][0]["tables"][0]["base_default_next"] = "missing_node"
    j["actions"][0]["primitives"] = []
    with pytest.raises(ProgramError, match="missing_node"):
        Switch(j)


def test_json_as_string_bytes_and_path(tmp_path):
    j = table_program("exact").program.json
    text = json.dumps(j)
    path = tmp_path / "prog.json"
    path.write_text(text)
    for source in (text, text.encode(), path, str(path)):
        assert "t" in Switch(source).program.tables


def test_concurrent_control_plane_and_packets_see_consistent_state():
    """Writers replace entries while readers push packets; every packet sees a whole entry."""
    sw = table_program("exact")
    stop = threading.Event()
    errors = []

    def writer():
        v = 0
        while not stop.is_set():
            v = (v + 1) % 200
            h = sw.table_add("t", {"hdr.h.k1": 1, "hdr.h.k2": 1}, "set_out", {"v": v})
            sw.table_modify("t", h, "set_out", {"v": v + 1})
            sw.table_delete("t", h)

    def reader():
        for _ in range(2000):
            out = sw.process(1, (1).to_bytes(4, "big") + bytes([1, 0, 0]))
            if len(out) != 1:
                errors.append(out)
    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads[1:]:
        t.join()
    stop.set()
    threads[0].join()
    assert errors == []
    assert sw.stats["internal_errors"] == 0
    assert sw.table_entries("t") == []


def test_every_public_method_holds_the_lock():
    sw = register_program()
    acquired = threading.Event()
    done = []

    def other():
        acquired.wait()
        sw.register_write("r", 0, 5)
        done.append(True)
    with sw.lock:
        t = threading.Thread(target=other)
        t.start()
        acquired.set()
        t.join(0.2)
        assert done == []  # blocked while we hold sw.lock
    t.join(2)
    assert done == [True]


def test_register_and_counter_api_errors():
    sw = register_program()
    with pytest.raises(NotFoundError, match="register 'nope'"):
        sw.register_read("nope", 0)
    with pytest.raises(EngineError, match="register r: index 4 out of range"):
        sw.register_read("r", 4)
    with pytest.raises(EngineError, match="register r, value"):
        sw.register_write("r", 0, 1 << 16)
    sw.register_write("r", 1, -1)  # two's complement of the cell width
    assert sw.register_read("r", 1) == 0xFFFF
    sw.register_write("r", None, 7)
    assert sw.register_read("r") == [7] * 4
    with pytest.raises(NotFoundError):
        sw.counter_read("r", 0)
    with pytest.raises(EngineError, match="index"):
        sw.counter_read("c", -1)


@pytest.mark.parametrize("text,width,value", [
    ("10.0.0.1", 32, 0x0A000001), ("00:11:22:33:44:55", 48, 0x001122334455), ("0x1f", 8, 31),
    ("255", 8, 255), ("::1", 128, 1), (b"\x01\x02", 16, 0x102), (-1, 8, 0xFF), ("0b101", 4, 5),
])
def test_value_parsing(text, width, value):
    assert parse_value(text, width, "x") == value


def test_value_parsing_errors():
    with pytest.raises(EngineError, match="x: value 0x100 does not fit in 8 bits"):
        parse_value(256, 8, "x")
    with pytest.raises(EngineError, match="cannot parse"):
        parse_value("ten", 8, "x")
    with pytest.raises(EngineError, match="prefix length"):
        parse_match("10.0.0.0/33", "lpm", 32, "x")
    with pytest.raises(EngineError, match="empty range"):
        parse_match("5..1", "range", 8, "x")
    assert parse_match("10.1.2.3/16", "lpm", 32, "x") == (0x0A010000, 16)
    assert parse_match("0x0a&&&0x0f", "ternary", 8, "x") == (0x0A, 0x0F)
    assert parse_match(7, "ternary", 8, "x") == (7, 0xFF)
    assert parse_match(None, "optional", 8, "x") == (0, 0)


def test_trace_reports_drops_and_table_results():
    sw = table_program("exact")
    lines = []
    sw.trace = lines.append
    sw.table_set_default("t", "set_out", {"v": 1})
    sw.process(1, bytes(7))
    text = "\n".join(lines)
    assert "Applying table 't'" in text
    assert "Table 't': miss" in text
    assert "Action entry is set_out - 0x1" in text
    assert "Transmitting packet of size 7 out of port 0" in text
    p = Program()
    p.header("h", [("a", 8)])
    p.state("start", [extract("h")])
    p.deparse("h")
    p.run("ingress", "ing", [P("mark_to_drop", {"type": "header", "value": "standard_metadata"})])
    sw2 = Switch(p.build())
    lines.clear()
    sw2.trace = lines.append
    assert sw2.process(1, b"\x01") == []
    assert any("Dropping packet at the end of ingress" in line for line in lines)


def test_deeply_nested_conditions_compile():
    """A chain of 150 nested ifs exceeds what one Python function may nest; it must still run."""
    p = Program()
    p.header("h", [("a", 8), ("b", 8)])
    p.state("start", [extract("h")])
    p.deparse("h")
    depth = 150
    for i in range(depth):
        nxt = f"c{i + 1}" if i + 1 < depth else "tbl_mark"
        p.cond("ingress", f"c{i}", E(">=", F("h", "a"), C(i % 200)), nxt, None)
    p.run("ingress", "mark", [P("assign", F("h", "b"), C(1)), P("assign", SM("egress_spec"), C(1))])
    p.init("ingress", "c0")
    sw = Switch(p.build())
    assert sw.process(1, b"\xff\x00") == [(1, b"\xff\x01")]
    out = sw.process(1, b"\x05\x00")  # fails the 7th condition: no egress_spec set, port 0
    assert out == [(0, b"\x05\x00")]


def test_long_straight_line_pipeline_compiles():
    p = Program()
    p.header("h", [("a", 16)])
    p.state("start", [extract("h")])
    p.deparse("h")
    n = 1200
    for i in range(n):
        p.run("ingress", f"inc{i}", [P("assign", F("h", "a"), E("&", E("+", F("h", "a"), C(1)), C(0xFFFF)))],
              next_node=f"tbl_inc{i + 1}" if i + 1 < n else None)
    p.init("ingress", "tbl_inc0")
    sw = Switch(p.build())
    assert sw.process(1, b"\x00\x00") == [(0, n.to_bytes(2, "big"))]


def test_process_argument_errors():
    sw = register_program()
    with pytest.raises(EngineError, match="ingress_port"):
        sw.process("1", b"\x00\x00\x00")
    with pytest.raises(EngineError, match="frame"):
        sw.process(1, "abc")
    assert sw.process(1, bytearray(b"\x00\x00\x00")) == [(1, b"\x00\x00\x00")]


def test_a_program_asking_for_unbounded_state_is_refused():
    """Registers, counters and meters are allocated at load (as BMv2 does): a JSON asking for
    billions of cells is refused by name instead of exhausting memory."""
    p = Program()
    p.register("Ing.small", 16, 32)
    p.register("Ing.huge", 1 << 32, 32)
    with pytest.raises(ProgramError, match=r"register Ing.huge: size 4294967296 takes the program's registers, "
                                            r"counters and meters past the 67108864 cells p4sim allocates"):
        Switch(p.build())
    p = Program()
    p.counter("Ing.c", -1)
    with pytest.raises(ProgramError, match=r"counter Ing.c: size -1 is negative"):
        Switch(p.build())
