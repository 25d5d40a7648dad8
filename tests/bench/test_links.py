"""Link settings: what TCLink gets, and honest reporting of what the kernel could apply."""
import pytest

from lab.bench import links
from p4reduce.mininet_topos.links import DEFAULT_QUEUE_MS, netem_available


def test_unshaped_is_plain_veth():
    assert links.UNSHAPED.tclink_params() == {}
    assert links.UNSHAPED.applied() == "unshaped veth"


@pytest.mark.root
def test_shaped_link_applies_bandwidth_and_reports_delay_truthfully():
    params = links.SHAPED.tclink_params()
    assert params["bw"] == 100 and params["use_tbf"] and params["latency_ms"] == DEFAULT_QUEUE_MS == 10.0
    info = links.SHAPED.describe()
    if netem_available():
        assert params["delay"] == "1ms" and info["delay_applied"] is True
        assert "1ms delay (netem)" in info["applied"]
    else:
        assert "delay" not in params and info["delay_applied"] is False
        assert "1ms delay NOT applied: kernel lacks sch_netem" in info["applied"]


def test_unknown_link_name_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown link setting 'x' .known: unshaped, 100mbit-1ms"):
        links.parse_link("x")
