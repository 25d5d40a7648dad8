"""Hostile and careless inputs (issue #13): each gets `file:line:col: error:` and a non-zero exit
from p4sim-compile, within limits as p4c and BMv2 have them, never an internal error, a traceback,
a hang or unbounded memory. Also the grammar cache: only in a private per-user directory."""
import os
import pathlib
import stat
import subprocess
import sys

import pytest
from compiler_helpers import compile_error, compile_text, line_of, program

from p4sim.compiler.cli import main

REPO = pathlib.Path(__file__).resolve().parents[3]


def err(tmp_path, text, needle, message, nth=0):
    got = compile_error(tmp_path, text)
    line, col = line_of(text, needle, nth)
    assert got == f"prog.p4:{line}:{col}: error: {message}"


def test_a_5000_digit_literal(tmp_path):
    text = program(ingress="apply { meta.c = " + "9" * 5000 + "; }")
    err(tmp_path, text, "9999", "integer literal 9999999999...9999999999 is wider than 2048 bits")
    text = program(ingress="apply { meta.c = 0x" + "f" * 600 + "; }")
    err(tmp_path, text, "0xfff", "integer literal 0xffffffff...ffffffffff is wider than 2048 bits")
    text = program(ingress="apply { meta.c = 99999w1; }")
    err(tmp_path, text, "99999w1", "integer literal 99999w1: width 99999 is larger than 2048 bits (p4c's limit)")


def test_shifts_that_would_build_huge_numbers(tmp_path):
    text = program(ingress="apply { meta.c = (bit<32>)(1 << 100000000); }")
    err(tmp_path, text, "1 << 100000000", "1 << 100000000 is wider than 2048 bits")
    text = program(ingress="apply { meta.a = 8w1 << -1; }")
    err(tmp_path, text, "-1", "shift amount -1 is negative")
    # a sized value shifted past its width is 0, with p4c's warning, and no huge intermediate
    res = compile_text(tmp_path, program(ingress="apply { meta.c = 32w1 << 32w4000000000; }"))
    line, col = line_of(program(ingress="apply { meta.c = 32w1 << 32w4000000000; }"), "32w1 <<")
    assert [w.split("/")[-1] for w in res.warnings] == [f"prog.p4:{line}:{col}: warning: shifting value with 32 bits "
                                                        f"by 4000000000"]


def test_sizes_past_2_to_the_32(tmp_path):
    err(tmp_path, program(ingress="register<bit<8>>(8589934592) r; apply { r.write(0, 1); }"), "8589934592",
        "register size 8589934592 is out of range (1 to 4294967295; v1model sizes are bit<32>)")
    err(tmp_path, program(ingress="counter(0, CounterType.packets) c; apply { c.count(0); }"), "0, Counter",
        "counter size 0 is out of range (1 to 4294967295; v1model sizes are bit<32>)")
    err(tmp_path, program(ingress="table t { key = { meta.a: exact; } actions = { NoAction; } size = 1099511627776; } "
                                  "apply { t.apply(); }"), "1099511627776",
        "table size 1099511627776 is out of range (0 to 4294967295)")


def test_a_define_on_the_command_line_that_overflows_a_size(tmp_path, capsys):
    src = tmp_path / "p.p4"
    text = program(ingress="register<bit<32>>(2 * SLOTS) cells; apply { cells.write(0, 1); }")
    src.write_text(text)
    assert main(["-DSLOTS=99999999999", "-o", str(tmp_path / "o.json"), str(src)]) == 1
    line, col = line_of(text, "2 * SLOTS")
    assert capsys.readouterr().err == (f"{src}:{line}:{col}: error: register size 199999999998 is out of range "
                                       f"(1 to 4294967295; v1model sizes are bit<32>)\n")


def test_widths_and_stacks_have_limits(tmp_path):
    err(tmp_path, program(meta_fields="bit<100000000> huge;"), "bit<100000000>",
        "bit<100000000> is wider than 2048 bits (p4c's limit)")
    err(tmp_path, program(meta_fields="int<4096> huge;"), "int<4096>", "int<4096> is wider than 2048 bits (p4c's limit)")
    err(tmp_path, program(decls="header s_t { bit<8> x; }", hdr_fields="s_t[100000000] ss;"), "100000000",
        "header stack size 100000000 is larger than 4096 (BMv2 allocates every element as a header)")
    err(tmp_path, program(meta_fields="bit<2048> w;", ingress="apply { meta.w = meta.w ++ meta.w; }"),
        "meta.w ++", "'++' makes a value wider than 2048 bits")
    err(tmp_path, program(ingress="apply { meta.c = (bit<32>)(5[100000000:0]); }"), "5[1",
        "slice [100000000:0] is out of range")


def test_duplicates_are_refused(tmp_path):
    err(tmp_path, program(decls="enum Color { Red, Green, Red }"), "Red }", "enum 'Color' declares 'Red' twice")
    err(tmp_path, program(decls="enum bit<8> Color { Red = 1, Green = 2, Red = 3 }"), "Red = 3",
        "enum 'Color' declares 'Red' twice")
    err(tmp_path, program(decls="header d_t { bit<8> x; bit<8> x; }"), "bit<8> x; }",
        "header 'd_t' has two fields named 'x'")
    text = program(decls="struct s_t { bit<8> y; bit<16> y; }")
    err(tmp_path, text, "bit<16> y", "struct 's_t' has two fields named 'y'")
    err(tmp_path, program(decls="error { Oops, Oops }"), "Oops }", "error 'Oops' is declared twice")


def test_a_sized_literal_that_does_not_fit_warns(tmp_path):
    text = program(ingress="apply { meta.a = 8w300; }")
    line, col = line_of(text, "8w300")
    assert [w.split("/")[-1] for w in compile_text(tmp_path, text).warnings] == [
        f"prog.p4:{line}:{col}: warning: 8w300: value does not fit in 8 bits; it is truncated to 44"]


def test_errors_that_had_no_position(tmp_path):
    """The errors that used to come without line:column."""
    text = program(ingress="apply { " + "if (meta.a == 1) { " * 1200 + "meta.b = 1;" + " }" * 1200 + " }")
    got = compile_error(tmp_path, text)
    assert got.startswith("prog.p4:12:") and got.endswith(": error: expressions or statements nested more than "
                                                          "1000 levels deep (split the expression or the statement)")
    text = program().replace("V1Switch(P(), VC(), Ing(), Egr(), CC(), D()) main;", "")
    last = len(text.rstrip("\n").split("\n"))
    got = compile_error(tmp_path, text)       # at the end of the program, where main belongs
    assert got == f"prog.p4:{last}:1: error: the program has no 'main' instance (expected: V1Switch(...) main;)"
    err(tmp_path, program(ingress='apply { log_msg("\\x"); }'), '"\\x"',
        "bad escape sequence in string literal (truncated \\xXX escape)")


def test_an_id_that_does_not_fit_p4runtime(tmp_path, capsys):
    src = tmp_path / "p.p4"
    text = program(ingress="@id(99999999999999) action a() {} table t { key = { meta.a: exact; } "
                           "actions = { a; } } apply { t.apply(); }")
    src.write_text(text)
    assert main(["--p4runtime-files", str(tmp_path / "p.txtpb"), "-o", str(tmp_path / "o.json"), str(src)]) == 1
    line, col = line_of(text, "@id")
    assert capsys.readouterr().err == f"{src}:{line}:{col}: error: @id 99999999999999 of 'Ing.a' is not a 32-bit id\n"


def test_long_expressions_compile(tmp_path):
    """Nesting up to the limit compiles (the compiler runs on a thread with a stack for it)."""
    text = program(ingress="apply { meta.a = meta.b" + " + meta.b" * 900 + "; }")
    res = compile_text(tmp_path, text)
    assert res.bmv2["actions"]


def test_the_cli_never_prints_a_traceback(tmp_path):
    src = tmp_path / "p.p4"
    src.write_text(program(ingress="apply { meta.c = " + "9" * 5000 + "; }"))
    r = subprocess.run([sys.executable, "-m", "p4sim.compile", "-o", str(tmp_path / "o.json"), str(src)],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr and r.stderr.startswith(f"{src}:12:")


# ---- the grammar cache ------------------------------------------------------------------------
def _cache_path(tmp_path, monkeypatch):
    from p4sim.compiler import parse
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return parse.grammar_cache_path()


def test_the_grammar_cache_is_in_a_private_directory(tmp_path, monkeypatch):
    path = _cache_path(tmp_path, monkeypatch)
    assert path == str(tmp_path / "cache" / "p4sim" / "grammar.cache")
    assert stat.S_IMODE(os.stat(tmp_path / "cache" / "p4sim").st_mode) == 0o700


def test_an_untrusted_cache_is_not_used(tmp_path, monkeypatch):
    d = tmp_path / "cache" / "p4sim"
    d.mkdir(parents=True)
    os.chmod(d, 0o777)                                      # others can write the directory
    assert _cache_path(tmp_path, monkeypatch) is None
    os.chmod(d, 0o700)
    bait = tmp_path / "elsewhere.cache"
    bait.write_bytes(b"not a cache")
    (d / "grammar.cache").symlink_to(bait)                   # a link to a file others may write
    assert _cache_path(tmp_path, monkeypatch) is None
    (d / "grammar.cache").unlink()
    (d / "grammar.cache").write_bytes(b"x")
    os.chmod(d / "grammar.cache", 0o666)                     # a cache file others can write
    assert _cache_path(tmp_path, monkeypatch) is None
    if os.geteuid() == 0:
        os.chmod(d / "grammar.cache", 0o644)
        os.chown(d / "grammar.cache", 65534, 65534)          # someone else's file
        assert _cache_path(tmp_path, monkeypatch) is None
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    from p4sim.compiler import parse
    assert parse.grammar_cache_path() is None


def test_a_planted_pickle_is_never_loaded(tmp_path):
    """A malicious pickle at the old predictable /tmp name (or anywhere others can write) is not
    read: compiling in a fresh process must not run it."""
    import pickle
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    (tmpdir / f"p4sim-grammar-{os.getuid()}.cache").write_bytes(pickle.dumps(Evil()))
    src = tmp_path / "p.p4"
    src.write_text(program())
    env = dict(os.environ, TMPDIR=str(tmpdir), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    r = subprocess.run([sys.executable, "-m", "p4sim.compile", "-o", str(tmp_path / "o.json"), str(src)],
                       capture_output=True, text=True, cwd=REPO, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert not marker.exists()
    assert (tmp_path / "xdg" / "p4sim" / "grammar.cache").exists()


@pytest.mark.parametrize("kind", ["unused", "overflow"])
def test_werror_and_wdisable_per_kind(tmp_path, capsys, kind):
    src = tmp_path / "p.p4"
    src.write_text(program(ingress="const bit<8> UNUSED = 1; apply { meta.a = 8w300; }"))
    out = str(tmp_path / "o.json")
    assert main(["-o", out, str(src)]) == 0
    err_text = capsys.readouterr().err
    assert "warning: 'UNUSED' is unused" in err_text and "warning: 8w300: value does not fit" in err_text
    assert main([f"--Werror={kind}", "-o", out, str(src)]) == 1
    lines = capsys.readouterr().err.splitlines()
    errors = [x for x in lines if ": error: " in x]
    assert len(errors) == 1 and (("is unused" in errors[0]) == (kind == "unused"))
    assert main([f"--Wdisable={kind}", "--Werror", "-o", out, str(src)]) == 1
    assert capsys.readouterr().err.count(": error: ") == 1
    assert main(["--Wdisable=unused", "--Wdisable=overflow", "--Werror", "-o", out, str(src)]) == 0
    assert capsys.readouterr().err.count(": error: ") == 0


def test_unused_declarations_warn_as_p4c_does(tmp_path):
    text = program(decls="const bit<8> NEVER = 1; const bit<8> USED = 2;",
                   ingress="counter(4, CounterType.packets) idle; register<bit<8>>(4) busy; "
                           "table lonely { key = { meta.a: exact; } actions = { NoAction; } } "
                           "apply { meta.a = USED; busy.write(0, 1); }")
    res = compile_text(tmp_path, text)
    at = {n: "prog.p4:{}:{}".format(*line_of(text, n)) for n in ("const bit<8> NEVER", "counter(4", "table lonely")}
    assert sorted(w.split("/")[-1] for w in res.warnings) == sorted([
        f"{at['const bit<8> NEVER']}: warning: 'NEVER' is unused",
        f"{at['counter(4']}: warning: 'idle': unused instance",
        f"{at['table lonely']}: warning: Table lonely is not used; removing"])
    # p4c keeps extern instances in the P4Info and removes unused tables
    assert [c.preamble.name for c in res.p4info.counters] == ["Ing.idle"]
    assert not res.p4info.tables
    # the system includes' declarations are not the user's
    assert not any("v1model" in w or "core.p4" in w for w in res.warnings)


def test_a_value_that_needs_a_temporary_it_cannot_have_is_located(tmp_path):
    text = program(ingress="apply { hdr.eth = meta.a == 1 ? hdr.eth : hdr.eth; }")
    err(tmp_path, text, "meta.a == 1 ?", "a value of type ethernet_t here (it needs a temporary, which holds only "
        "bit<N>, int<N>, bool and enums) is not supported by p4sim-compile (outside its P4_16 subset; see "
        "docs/p4-subset.md)")
