"""Fuzzing p4sim-compile (hypothesis): example programs edited at random with hostile pieces
(huge literals and widths, deep nesting, stray tokens, odd characters, duplicated and deleted
regions). Every case runs the real command line in a process of its own, with a memory budget
(RLIMIT_AS) and a time budget, and must end with exit 0 or 1 and diagnostics that are all
`file:line:col: error:` / `warning:` lines: never a traceback, an internal error, a hang or a
runaway allocation."""
import pathlib
import re
import resource
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = sorted((REPO / "examples" / "p4").glob("*.p4"))
MEMORY_BUDGET = 2 << 30         # bytes of address space per case (the compile thread reserves 256 MiB)
TIME_BUDGET = 60                # seconds per case (a compile takes well under one)

# numbers that stress the limits, in place of a number of the program
NUMBERS = ["9" * 700, "0x" + "f" * 700, "(1 << 100000000)", "99999w1", "8w300", "0", "-1", "4294967296",
           "8589934592", "2048", "4097", "100000000", "(8w1 << 200)", "(" * 1500 + "1" + ")" * 1500]
# anything else, inserted or in place of a token
HOSTILE = [
    "bit<100000000>", "int<0>", "[100000000]", "[4097]", "{" * 600, "}" * 3, "reject", "@id(99999999999)",
    "@name(\".\")", "\"\\x\"", "\x00", "é", "\u202e", "#include \"/dev/zero\"\n", "transition start;", "exit;",
    "return 1;", "apply", "table", "header", "<<", ">>", "&&&", "..", "++", "|+|", "?", ":", ";", "_", "default",
    "error.NoMatch", "this", "+ 1" * 1200,
]
LINE = re.compile(r"^(\S+:\d+:\d+: (fatal )?(error|warning): .+|In file included from .+|\s+from .+|"
                  r"compilation terminated\.|\S+: error: cannot .+|error: .+ no such file|"
                  r"\s*\d*\s*\|.*)$")    # the last: cpp's source excerpt under its message


def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BUDGET, MEMORY_BUDGET))


@st.composite
def hostile_programs(draw):
    text = draw(st.sampled_from(EXAMPLES)).read_text()
    tokens = re.findall(r"\w+|[^\w\s]|\s+", text)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(tokens) - 1))
        edit = draw(st.sampled_from(["number", "number", "number", "name", "name", "name", "replace", "insert",
                                     "delete", "duplicate", "text"]))
        numbers = [k for k, t in enumerate(tokens) if re.fullmatch(r"\d\w*", t)]
        names = [k for k, t in enumerate(tokens) if re.fullmatch(r"[A-Za-z_]\w*", t)]
        if edit == "number" and numbers:
            tokens[draw(st.sampled_from(numbers))] = draw(st.sampled_from(NUMBERS))
        elif edit == "name" and names:
            # another name of the same program: type errors, wrong kinds, unused declarations
            tokens[draw(st.sampled_from(names))] = tokens[draw(st.sampled_from(names))]
        elif edit == "replace":
            tokens[i] = draw(st.sampled_from(HOSTILE))
        elif edit == "insert":
            tokens.insert(i, " " + draw(st.sampled_from(HOSTILE)) + " ")
        elif edit == "delete":
            del tokens[i:i + draw(st.integers(1, 20))]
        elif edit == "duplicate":
            j = min(len(tokens), i + draw(st.integers(1, 200)))
            tokens[i:i] = tokens[i:j] * draw(st.integers(2, 50))
        else:
            tokens.insert(i, draw(st.text(min_size=1, max_size=8)))
        if not tokens:
            tokens = [";"]
    return "".join(tokens)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(source=hostile_programs())
def test_the_compiler_survives_hostile_programs(tmp_path_factory, source):
    d = tmp_path_factory.mktemp("fuzz")
    src = d / "fuzz.p4"
    src.write_bytes(source.encode("utf-8", "surrogatepass"))
    r = subprocess.run([sys.executable, "-m", "p4sim.compile", "-o", str(d / "out.json"),
                        "--p4runtime-files", str(d / "out.p4info.txtpb"), str(src)],
                       capture_output=True, cwd=REPO, timeout=TIME_BUDGET, preexec_fn=_limit)
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode in (0, 1), err
    assert "Traceback" not in err and "internal compiler error" not in err, err
    bad = [line for line in err.splitlines() if line.strip() and not LINE.match(line)]
    assert not bad, err
    if r.returncode == 1:
        assert re.search(r"(^|\n)\S+:\d+:\d+: (fatal )?error: ", err) or "no such file" in err, err
