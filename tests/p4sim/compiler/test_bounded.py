"""Issue #24, point 3 and 4 (compiler): no input makes p4sim-compile run for minutes or take
gigabytes; each limit fails early with `file:line:col`; recursive types and int<1> are refused
at their declaration; Ctrl-C ends a compile with one line and exit status 130.

Hostile inputs run p4sim-compile as a process under an address-space limit and a timeout, so that
a regression fails the test instead of exhausting the machine."""
import os
import pathlib
import signal
import subprocess
import sys
import time

from compiler_helpers import V1_PRELUDE, compile_error, line_of, program

from p4sim.compiler.limits import MAX_PREPROCESSED_BYTES, MAX_TOKENS

REPO = pathlib.Path(__file__).resolve().parents[3]
MEMORY_CAP = 1536 << 20      # the compiler and its cpp must stay far below this


# p4sim-compile as `python -m`, under the memory cap, with SIGINT as a terminal leaves it (the
# test runner's parent may ignore it, and a child inherits that)
_BOOT = (f"import resource, runpy, signal, sys; resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_CAP}, {MEMORY_CAP})); "
         "signal.signal(signal.SIGINT, signal.default_int_handler); sys.argv[0] = 'p4sim-compile'; "
         "runpy.run_module('p4sim.compile', run_name='__main__')")


def compiler(*args: str) -> list[str]:
    return [sys.executable, "-c", _BOOT, *args]


def run_compiler(tmp_path: pathlib.Path, text: str, timeout: float = 20.0,
                 name: str = "prog.p4") -> tuple[int, str, float]:
    """(exit status, stderr with the temp dir removed, seconds) of p4sim-compile on `text`."""
    src = tmp_path / name
    src.write_text(text)
    t0 = time.monotonic()
    r = subprocess.run(compiler("-o", str(tmp_path / "o.json"), str(src)),
                       capture_output=True, text=True, cwd=REPO, timeout=timeout)
    return r.returncode, r.stderr.replace(str(src), name), time.monotonic() - t0


def doubling_macro(times: int) -> str:
    lines = [f"#define X{i} X{i - 1}+X{i - 1}" for i in range(1, times + 1)]
    return program(decls="#define X0 1\n" + "\n".join(lines) + f"\nconst bit<32> BIG = X{times};")


def test_a_macro_that_doubles_22_times_fails_fast(tmp_path):
    text = doubling_macro(22)
    rc, err, took = run_compiler(tmp_path, text)
    line, _ = line_of(text, "const bit<32> BIG")
    assert rc == 1, err
    assert err == (f"prog.p4:{line}:1: error: the preprocessed program is larger than "
                   f"{MAX_PREPROCESSED_BYTES >> 20} MiB (a macro that expands too much?)\n")
    assert took < 15


def test_a_macro_in_an_included_file_is_located_there(tmp_path):
    inc = tmp_path / "big.p4"
    inc.write_text("#define X0 1\n" + "\n".join(f"#define X{i} X{i - 1}+X{i - 1}" for i in range(1, 26))
                   + "\nconst bit<32> BIG = X25;\n")
    rc, err, _ = run_compiler(tmp_path, program(decls='#include "big.p4"'))
    assert rc == 1
    assert err == (f"{inc}:27:1: error: the preprocessed program is larger than "
                   f"{MAX_PREPROCESSED_BYTES >> 20} MiB (a macro that expands too much?)\n")


def test_too_many_tokens_fail_before_the_parser(tmp_path):
    n = MAX_TOKENS // 2 + 1000          # "1 + 1 + ...": two tokens per term
    text = program(ingress="apply { meta.c = " + " + ".join(["1"] * n) + "; }")
    rc, err, took = run_compiler(tmp_path, text)
    # the first token past the limit: prelude and template tokens come first, so locate it by count
    from p4sim.compiler.parse import _TOKEN
    from p4sim.compiler.preprocess import preprocess
    pre = preprocess(str(tmp_path / "prog.p4"))
    m = list(_TOKEN.finditer(pre.text))[MAX_TOKENS]
    off = m.start()
    col = off - pre.text.rfind("\n", 0, off)
    line, _ = line_of(text, "meta.c = 1")
    assert rc == 1
    assert err == (f"prog.p4:{line}:{col}: error: the program has more than {MAX_TOKENS} tokens after "
                   f"preprocessing (p4sim-compile's limit; a macro that expands too much?)\n")
    assert took < 10


def test_a_program_just_under_the_token_limit_compiles_in_bounded_memory(tmp_path):
    text = program(ingress="apply { " + "meta.a = meta.b + meta.a;" * 2000 + " }")
    rc, err, took = run_compiler(tmp_path, text)
    assert rc == 0, err
    assert (tmp_path / "o.json").stat().st_size > 0


def test_a_struct_that_contains_itself_is_refused_at_its_declaration(tmp_path):
    text = program(decls="struct rec_t { bit<8> a; rec_t inner; }", meta_fields="rec_t r;")
    rc, err, took = run_compiler(tmp_path, text)
    line, col = line_of(text, "rec_t inner")
    assert rc == 1
    assert err == (f"prog.p4:{line}:{col}: error: struct 'rec_t' contains itself (field 'inner' of type "
                   f"rec_t); P4 types cannot be recursive\n")
    assert took < 10


def test_a_struct_that_contains_itself_unused_is_refused_too(tmp_path):
    text = program(decls="struct a_t { bit<8> x; }\nstruct rec_t { a_t a; rec_t again; }")
    line, col = line_of(text, "rec_t again")
    assert compile_error(tmp_path, text) == (f"prog.p4:{line}:{col}: error: struct 'rec_t' contains itself "
                                             f"(field 'again' of type rec_t); P4 types cannot be recursive")


def test_a_header_that_contains_itself_is_refused(tmp_path):
    text = program(decls="header h_t { bit<8> a; h_t self; }", hdr_fields="h_t h;")
    line, col = line_of(text, "h_t self")
    got = compile_error(tmp_path, text)
    assert got.startswith(f"prog.p4:{line}:{col}: error: header field of type h_t is not supported")


def test_int1_is_refused_as_p4c_does(tmp_path):
    for where in ("meta_fields", "decls"):
        text = program(**{where: "int<1> flag;" if where == "meta_fields" else "header f_t { int<1> f; bit<7> p; }"})
        line, col = line_of(text, "int<1>")
        assert compile_error(tmp_path, text) == f"prog.p4:{line}:{col}: error: int<1>: Signed types cannot be 1-bit wide"
    text = program(ingress="apply { meta.a = (bit<8>)(bit<1>)(int<1>)meta.b; }")
    line, col = line_of(text, "int<1>")
    assert compile_error(tmp_path, text) == f"prog.p4:{line}:{col}: error: int<1>: Signed types cannot be 1-bit wide"
    # int<2> is the narrowest signed type
    text = program(meta_fields="int<2> two;")
    assert (tmp_path / "prog.p4").write_text(text) and run_compiler(tmp_path, text)[0] == 0


def test_ctrl_c_ends_a_compile_with_one_line_and_130(tmp_path):
    src = tmp_path / "slow.p4"
    src.write_text(program(ingress="apply { " + "meta.a = meta.b + meta.a;" * 15000 + " }"))
    for delay in (0.6, 1.5):            # during the imports, then in the parser or the checker
        proc = subprocess.Popen(compiler("-o", str(tmp_path / "o.json"), str(src)), stderr=subprocess.PIPE,
                                text=True, cwd=REPO)
        time.sleep(delay)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
        assert (proc.returncode, err) == (130, "p4sim-compile: interrupted\n")
        assert time.monotonic() - t0 < 3


def test_ctrl_c_kills_the_preprocessor(tmp_path):
    """cpp of a huge expansion is killed with p4sim-compile (it would go on to its own limits)."""
    src = tmp_path / "big.p4"
    src.write_text(V1_PRELUDE + "#define X0 1\n" + "\n".join(f"#define X{i} X{i - 1}+X{i - 1}" for i in range(1, 30))
                   + "\nconst bit<32> BIG = X29;\n")
    proc = subprocess.Popen(compiler("-o", str(tmp_path / "o.json"), str(src)), stderr=subprocess.PIPE,
                            text=True, cwd=REPO)
    try:
        deadline = time.monotonic() + 10
        children: list[str] = []
        while time.monotonic() < deadline and len(children) < 2:     # cpp, and its cc1
            children = _descendants(proc.pid)
            time.sleep(0.05)
        assert children, "cpp never started"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
        assert (proc.returncode, err) == (130, "p4sim-compile: interrupted\n")
        time.sleep(0.2)
        assert not [c for c in children if os.path.exists(f"/proc/{c}") and _state(c) != "Z"]
    finally:
        if proc.poll() is None:
            proc.kill()


def _descendants(pid: int) -> list[str]:
    out, todo = [], [str(pid)]
    while todo:
        p = todo.pop()
        kids = []
        for task in pathlib.Path(f"/proc/{p}/task").glob("*"):    # cpp is a child of the compile thread
            try:
                kids += (task / "children").read_text().split()
            except OSError:
                continue
        out += kids
        todo += kids
    return out


def _state(pid: str) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"
