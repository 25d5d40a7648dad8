"""The veth packet-rate rig on p4sim-switch: correct aggregates, a positive rate, clean teardown."""
import subprocess

import pytest

from lab.bench import veth_rate

pytestmark = pytest.mark.root


def _links():
    return subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout


def test_p4sim_switch_on_veth_aggregates_correctly_and_cleans_up(p4reduce_program):
    rig = veth_rate.VethRig(4, target="p4sim", program=p4reduce_program)
    with rig:
        assert all(sw in _links() for sw, _h in rig.pairs)
        pid = rig.proc.pid
        try:
            result = rig.measure(1.5, window=8)
        finally:
            rig.close_connection()
    assert result["target"] == "p4sim-switch"
    assert result["wrong_results"] == 0
    assert result["results_received"] > 0 and result["pps"] > 0
    # every result releases exactly one new contribution (retransmissions counted apart)
    assert result["contributions_sent"] >= result["results_received"]
    # teardown: our veths and our switch process are gone, nothing else was touched
    assert not any(sw in _links() for sw, _h in rig.pairs)
    assert subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0


def test_missing_program_is_a_clear_error(tmp_path):
    from lab.bench import switch_compare
    reason = switch_compare.unavailable_reason(tmp_path / "nope.json")
    assert "nope.json not built" in reason
