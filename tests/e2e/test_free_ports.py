"""mininet_topos/ports.py: ports for the servers a session starts, below the kernel's ephemeral
range (an outgoing connection can be given a port there between the choice and the server's
bind: CI's "gRPC port ... is already in use") and never handed out twice by one process."""
import socket

import pytest

from p4reduce.mininet_topos import ports


def test_blocks_are_bindable_below_the_ephemeral_range_and_never_given_twice():
    top = ports.ephemeral_start()
    seen = set()
    for count in (1, 3, 16, 16, 1, 16):
        base = ports.free_port(count)
        block = set(range(base, base + count))
        assert ports.LOWEST <= base and base + count <= top, (base, count, top)
        assert not block & seen, (base, count)
        seen |= block
        with socket.socket() as s:                 # still free: bindable now
            s.bind((ports.HOST, base))


def test_the_ephemeral_range_is_read_defensively(tmp_path):
    f = tmp_path / "range"
    f.write_text("40000\t60999\n")
    assert ports.ephemeral_start(str(f)) == 40000
    for bad in ("", "x y", "80\t90", "99999 100000"):
        f.write_text(bad)
        assert ports.ephemeral_start(str(f)) == 32768, bad
    assert ports.ephemeral_start(str(tmp_path / "missing")) == 32768


def test_a_block_size_out_of_range_is_refused():
    for count in (0, 1001):
        with pytest.raises(ValueError, match="count must be in 1..1000"):
            ports.free_port(count)
