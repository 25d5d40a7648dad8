"""The project's own P4 program (p4src/p4reduce.p4): its generated iteration macros are up to date,
it compiles without warnings at every packet layout it supports (each value of SUBBLOCK and of
NUM_SUBBLOCKS), refuses the others with a message naming the limit, loads in the engine, and
`make build LANES=.. SUBBLOCK=..` builds the layout asked for."""
import importlib.util
import pathlib
import subprocess

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4reduce.protocol import p4names as N
from p4sim.compiler import CompileError, compile_file

REPO = pathlib.Path(__file__).resolve().parents[3]
P4DIR = REPO / "p4reduce" / "p4src"
P4SRC = P4DIR / "p4reduce.p4"


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_iteration", P4DIR / "gen_iteration.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def result():
    return compile_file(str(P4SRC))


def test_p4reduce_compiles_without_warnings(result):
    assert result.warnings == []
    names = {t.preamble.name for t in result.p4info.tables}
    assert names, "p4reduce has control-plane tables"
    assert all(n.count(".") >= 1 for n in names)
    assert result.p4info.registers, "p4reduce keeps its aggregation state in registers"


def test_p4reduce_loads_in_engine(result):
    from p4sim import engine
    sw = engine.Switch(result.bmv2)
    assert set(sw.program.registers) == {r.preamble.name for r in result.p4info.registers}
    assert {t.preamble.name for t in result.p4info.tables} <= set(sw.program.tables)


def test_iteration_p4_is_what_the_generator_writes():
    assert load_generator().main(["--check"]) == 0, "run: python3 p4src/gen_iteration.py"


def test_a_stale_iteration_p4_fails_the_check(tmp_path, monkeypatch, capsys):
    gen = load_generator()
    stale = tmp_path / "iteration.p4"
    stale.write_text(gen.render().replace("M(14) M(15)", "M(14)"))     # a hand edit, say
    monkeypatch.setattr(gen, "TARGET", stale)
    assert gen.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0            # regenerating fixes it


# Every FOR_EACH_LANE case up to SUBBLOCK 32 and every FOR_EACH_SUBBLOCK case (NUM_SUBBLOCKS
# 1..16), paired so that packets stay small: the cases of the two macros are independent of each
# other, so this covers the expansion of every layout of a 1500-byte MTU. The wide sub-blocks of
# jumbo-frame builds (33..128 lanes, written by the same generator loop) are sampled, up to the
# widest packets (1024 lanes at 64 a sub-block, 2048 at 128). tests/dataplane runs full-size
# layouts (256 and 352 lanes among them) through the data-plane tests.
SWEEP = [(s * (17 - s), s) for s in range(1, 17)] + [(s * (1 + s % 4), s) for s in range(17, 33)]
SWEEP += [(33, 33), (96, 48), (1024, 64), (300, 100), (254, 127), (2048, 128)]


@pytest.mark.parametrize("lanes,subblock", SWEEP, ids=[f"{lanes}x{sb}" for lanes, sb in SWEEP])
def test_every_layout_compiles_without_warnings(lanes, subblock):
    mtu = ("IPV4_MTU=9000",) if 52 + 4 * lanes > 1500 else ()
    r = compile_file(str(P4SRC), defines=(f"LANES={lanes}", f"SUBBLOCK={subblock}") + mtu)
    assert r.warnings == []
    num_subblocks = lanes // subblock
    registers = [reg["name"] for reg in r.bmv2["register_arrays"]]
    assert N.lane_layout(registers) == (num_subblocks, subblock)
    subblock_type = next(t for t in r.bmv2["header_types"] if t["name"] == "subblock_t")
    assert [f[0] for f in subblock_type["fields"]] == [f"l{j}" for j in range(subblock)]
    order = r.bmv2["deparsers"][0]["order"]
    assert order == ["ethernet", "arp", "ipv4", "udp", "p4r"] + [f"sb{k}" for k in range(num_subblocks)]


def test_the_warnings_p4src_avoids_are_reported(tmp_path):
    """The sweep's "no warnings" means something: p4sim-compile reports what real p4c reported on
    the former p4src (a 16-bit 1 shifted by 16 in FULL_BITMAP at 16 sub-blocks, unused consts)."""
    import shutil
    copy = shutil.copytree(P4DIR, tmp_path / "p4src")
    config, constants = copy / "config.p4", copy / "constants.p4"
    config.write_text(config.read_text().replace("(16w0xFFFF >> (16 - NUM_SUBBLOCKS))",
                                                 "((16w1 << NUM_SUBBLOCKS) - 1)"))
    constants.write_text(constants.read_text().replace("#define MODE_SPARSE 1", "const bit<8> MODE_SPARSE = 1;"))
    warnings = [str(w) for w in compile_file(str(copy / "p4reduce.p4"), defines=("LANES=256", "SUBBLOCK=16")).warnings]
    assert any("shifting value with 16 bits by 16" in w for w in warnings), warnings
    assert any("'MODE_SPARSE' is unused" in w for w in warnings), warnings
    below16 = [str(w) for w in compile_file(str(copy / "p4reduce.p4"), defines=("LANES=64",)).warnings]
    assert below16 and not any("shifting" in w for w in below16), below16


@pytest.mark.parametrize("defines,message", [
    (("SUBBLOCK=0",), "SUBBLOCK must be 1..128"),
    (("SUBBLOCK=129", "LANES=129"), "SUBBLOCK must be 1..128"),
    (("LANES=30",), "LANES must be a positive multiple of SUBBLOCK"),
    (("LANES=0",), "LANES must be a positive multiple of SUBBLOCK"),
    (("LANES=136", "SUBBLOCK=8"), r"LANES / SUBBLOCK must be 1\.\.16"),
    (("LANES=368", "SUBBLOCK=23"), "exceeds IPV4_MTU"),               # 1520-byte dense packet
    (("SLOTS=0",), "SLOTS must be"),
    (("MAX_WORKERS=256",), "MAX_WORKERS must be 1..255"),
])
def test_unsupported_settings_are_refused_by_name(defines, message):
    with pytest.raises(CompileError, match=message):
        compile_file(str(P4SRC), defines=defines)


def test_jumbo_frames_allow_wider_packets():
    r = compile_file(str(P4SRC), defines=("LANES=368", "SUBBLOCK=23", "IPV4_MTU=9000"))
    assert N.lane_layout(reg["name"] for reg in r.bmv2["register_arrays"]) == (16, 23)


def make_build(build_dir, *settings):
    return subprocess.run(["make", "--no-print-directory", "build", f"BUILD={build_dir}", *settings],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def built_layout(build_dir):
    p4info = text_format.Parse((build_dir / "p4reduce.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    return N.lane_layout(r.preamble.name for r in p4info.registers)


def test_make_build_builds_the_layout_asked_for_and_rebuilds_when_it_changes(tmp_path):
    first = make_build(tmp_path, "LANES=64", "SUBBLOCK=16")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "-DLANES=64 -DSUBBLOCK=16" in first.stdout                  # handed to the compiler
    assert f"{tmp_path}/p4reduce.json: 64 lanes per packet (4 sub-blocks of 16), 4096 slots, " \
           "up to 32 workers" in first.stdout
    assert built_layout(tmp_path) == (4, 16)
    again = make_build(tmp_path, "LANES=64", "SUBBLOCK=16")             # up to date: no compile,
    assert "-DLANES" not in again.stdout and "64 lanes per packet" in again.stdout   # still says
    default = make_build(tmp_path, "SLOTS=64")                           # changed settings rebuild
    assert default.returncode == 0, default.stdout + default.stderr
    assert "-DSLOTS=64 " in default.stdout and "256 lanes per packet (16 sub-blocks of 16), 64 slots" in default.stdout
    assert built_layout(tmp_path) == (16, 16)
    jumbo = make_build(tmp_path, "MTU=9000", "LANES=1024", "SUBBLOCK=64")  # MTU is the program's IPV4_MTU
    assert jumbo.returncode == 0, jumbo.stdout + jumbo.stderr
    assert "-DLANES=1024 -DSUBBLOCK=64 -DIPV4_MTU=9000" in jumbo.stdout
    assert "1024 lanes per packet (16 sub-blocks of 64), 4096 slots, up to 32 workers, built for links of " \
           "MTU 9000" in jumbo.stdout
    assert built_layout(tmp_path) == (16, 64)


@pytest.mark.parametrize("setting,message", [
    ("MTU=9k", "MTU=9k: must be a positive decimal number"),
    ("LANES=1024", "a dense packet of LANES lanes (52 + 4 * LANES bytes of IPv4) exceeds IPV4_MTU"),
    ("LANES=abc", "LANES=abc: must be a positive decimal number"),
    ("SUBBLOCK=08", "SUBBLOCK=08: must be a positive decimal number"),
    ("MAX_WORKERS=", "MAX_WORKERS=: must be a positive decimal number"),
    ("LANES=1 2", "LANES=1 2: must be a positive decimal number"),
    ("LANES=30", "LANES must be a positive multiple of SUBBLOCK"),      # the compiler's #error
])
def test_make_build_refuses_bad_settings_by_name(tmp_path, setting, message):
    out = make_build(tmp_path, setting)
    assert out.returncode != 0 and message in out.stdout + out.stderr
    assert not (tmp_path / "p4reduce.json").exists()
