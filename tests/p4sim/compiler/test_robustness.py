"""Mutated programs must fail with a located CompileError (or compile), never crash the compiler."""
import pathlib
import random
import re

import pytest

from p4sim.compiler import CompileError, compile_file

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples" / "p4"
OPS = ["+", "-", "*", "&", "|", "^", "<", ">", "==", "!", "~", "<<", ">>", "++", "|+|", "?", ":", ";", "{", "}"]


@pytest.mark.parametrize("seed", range(4))
def test_mutated_examples_never_crash(tmp_path, seed):
    rnd = random.Random(seed)
    sources = sorted(EXAMPLES.glob("*.p4"))
    path = tmp_path / "mut.p4"
    outcomes = {"ok": 0, "error": 0}
    for _ in range(40):
        toks = re.findall(r"\w+|[^\w\s]|\s+", rnd.choice(sources).read_text())
        words = [i for i, t in enumerate(toks) if re.match(r"\w", t)]
        syms = [i for i, t in enumerate(toks) if re.match(r"[^\w\s]", t)]
        for _ in range(rnd.randint(1, 2)):
            if rnd.random() < 0.7:
                toks[rnd.choice(words)] = toks[rnd.choice(words)]
            else:
                toks[rnd.choice(syms)] = rnd.choice(OPS)
        path.write_text("".join(toks))
        try:
            compile_file(str(path))
            outcomes["ok"] += 1
        except CompileError as e:
            outcomes["error"] += 1
            rendered = e.render()
            assert rendered.startswith(("error:", str(path), str(EXAMPLES), "/")) or ": error:" in rendered
            assert "Traceback" not in rendered
    assert outcomes["error"] > 0
