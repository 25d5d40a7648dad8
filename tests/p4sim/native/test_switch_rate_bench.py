"""bench/switch_rate.py measures what it says on both backends: every case runs, and every pass
of the closed loop emitted exactly one result per worker per round (measure() refuses otherwise),
so a program, layout or job-install change that breaks the loop fails here, not in the README."""
import json

from lab.bench import switch_rate


def test_every_case_runs_on_both_backends_and_checks_its_outputs(capsys):
    assert switch_rate.main(["--quick", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    cases = {(r["backend"], r["case"]) for r in rows}
    assert len(cases) == len(rows) == 6, rows
    assert {b for b, _ in cases} == {"native", "python"}
    assert all(r.get("pps", 0) > 0 and "status" not in r for r in rows), rows
    assert sum("256 lanes" in c for _, c in cases) == 2 and sum("32 lanes" in c for _, c in cases) == 2
