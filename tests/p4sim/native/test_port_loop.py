"""The native port loop on real veth pairs: frames through a native switch in C, through the
Python engine when the program runs there (frames handed to Python and sent back), CPU-port
frames to Python, pcaps, and a port whose interface disappears."""
import logging
import os
import socket
import subprocess
import time
import uuid

import pytest
from engine.bmv2 import SM, C, E, F, P, Program, extract

from p4sim.engine import PythonSwitch
from p4sim.engine.native.switch import NativeSwitch
from p4sim.ports import read_pcap
from p4sim.ports.native_packet_loop import NativePacketLoop

pytestmark = pytest.mark.root
CPU = 64


def program():
    """h.a == 0x99: to the CPU port; anything else: out of port 2 with h.a incremented."""
    p = Program()
    p.header("h", [("dst", 48), ("src", 48), ("etype", 16), ("a", 8)])
    p.state("start", [extract("h")])
    p.deparse("h")
    p.cond("ingress", "to_cpu", E("==", F("h", "a"), C(0x99)), "tbl_punt", "tbl_fwd")
    p.run("ingress", "punt", [P("assign", SM("egress_spec"), C(CPU))])
    p.run("ingress", "fwd", [P("assign", SM("egress_spec"), C(2)),
                             P("assign", F("h", "a"), E("&", E("+", F("h", "a"), C(1)), C(0xFF)))])
    p.init("ingress", "to_cpu")
    return p.build()


@pytest.fixture
def pairs():
    tag = uuid.uuid4().hex[:5]
    names = [(f"pl{tag}s{i}", f"pl{tag}h{i}") for i in (1, 2)]
    for sw, host in names:
        subprocess.run(["ip", "link", "add", sw, "type", "veth", "peer", "name", host], check=True)
        for name in (sw, host):
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"], capture_output=True)
            subprocess.run(["ip", "link", "set", name, "up"], check=True)
    yield names
    for sw, _host in names:
        subprocess.run(["ip", "link", "del", sw], capture_output=True)


def host_socket(name):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((name, 0))
    s.settimeout(0.2)
    return s


def frames_on(sock, marker, seconds=3.0):
    deadline, got = time.monotonic() + seconds, []
    while time.monotonic() < deadline and not got:
        try:
            data = sock.recv(65536)
        except TimeoutError:
            continue
        if marker in data:
            got.append(data)
    return got


def frame(a, marker):
    return bytes.fromhex("020000000002" "020000000001" "88b5") + bytes([a]) + marker + bytes(30)


@pytest.mark.parametrize("engine", ["native", "python"])
def test_frames_cpu_port_and_pcaps(pairs, tmp_path, engine):
    (s1, h1), (s2, h2) = pairs
    loop = NativePacketLoop({1: s1, 2: s2}, str(tmp_path), cpu_port=CPU)
    sw = NativeSwitch(program()) if engine == "native" else PythonSwitch(program())
    to_cpu = []

    def inject(port, data):  # what the packet path does for frames the Python engine runs
        for out_port, out in sw.process(port, data):
            (to_cpu.append(out) if out_port == CPU else loop.send(out_port, out))
    loop.inject, loop.packet_in = inject, to_cpu.append
    loop.attach(sw)
    loop.start()
    rx, tx = host_socket(h2), host_socket(h1)
    try:
        marker = os.urandom(6)
        tx.send(frame(7, marker))
        [out] = frames_on(rx, marker)
        assert out[14] == 8 and out[15:21] == marker
        tx.send(frame(0x99, marker + b"cpu"))
        deadline = time.monotonic() + 3
        while not to_cpu and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [f[15:24] for f in to_cpu] == [marker + b"cpu"]
        if engine == "native":
            assert loop.stats()["rx"] >= 2 and loop.stats()["to_cpu"] == 1
    finally:
        loop.stop()
        rx.close()
        tx.close()
    assert frame(7, marker) in read_pcap(str(tmp_path / f"{s1}_in.pcap"))
    assert any(marker in f for f in read_pcap(str(tmp_path / f"{s2}_out.pcap")))


def test_a_port_whose_interface_goes_away_is_dropped_from_the_loop(pairs, caplog):
    (s1, h1), (s2, h2) = pairs
    loop = NativePacketLoop({1: s1, 2: s2})
    loop.attach(NativeSwitch(program()))
    loop.start()
    try:
        with caplog.at_level(logging.WARNING, logger="p4sim.ports"):
            subprocess.run(["ip", "link", "del", s2], check=True)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not any("no longer polled" in r.getMessage()
                                                          for r in caplog.records):
                time.sleep(0.05)
        assert any(f"'{s2}' is gone" in r.getMessage() for r in caplog.records)
        # the other port still works: frames in, forwarded to the (gone) port 2 and dropped
        with host_socket(h1) as tx:
            tx.send(frame(1, b"after"))
        time.sleep(0.3)
        assert loop.stats()["rx"] >= 1
    finally:
        loop.stop()


@pytest.mark.parametrize("mtu", [1500, 9000])
def test_ring_slots_hold_a_frame_of_the_port_mtu(pairs, mtu):
    """A frame as large as the interfaces' MTU lands in a receive-ring slot (no copy through the
    socket queue, the slow path for frames larger than a slot) and leaves whole."""
    (s1, h1), (s2, h2) = pairs
    for sw, host in pairs:
        for name in (sw, host):
            subprocess.run(["ip", "link", "set", name, "mtu", str(mtu)], check=True)
    loop = NativePacketLoop({1: s1, 2: s2})
    loop.attach(NativeSwitch(program()))
    loop.start()
    rx, tx = host_socket(h2), host_socket(h1)
    try:
        marker = os.urandom(6)
        big = frame(7, marker)
        big += os.urandom(14 + mtu - len(big))          # an Ethernet frame of exactly the MTU
        for _ in range(3):
            tx.send(big)
        [out] = frames_on(rx, marker)
        assert len(out) == len(big) and out[15:] == big[15:] and out[14] == 8
        stats = loop.stats()
        assert stats["rx_rings"] == 2 and stats["rx"] >= 1
        assert stats["rx_copied"] == 0 and stats["truncated"] == 0
    finally:
        loop.stop()
        rx.close()
        tx.close()


def _qdisc_sent_packets(name):
    out = subprocess.run(["tc", "-s", "qdisc", "show", "dev", name], capture_output=True, text=True).stdout
    return int(out.split("Sent ")[1].split()[2])


def test_a_port_with_a_shaping_qdisc_sends_through_it(pairs):
    """A veth's `noqueue` is bypassed (PACKET_QDISC_BYPASS), a shaped port's tbf is not: the
    switch's frames out of a shaped port are paced by it, as Mininet's --bw / --uplink-bw mean,
    instead of leaving at veth speed."""
    (s1, h1), (s2, h2) = pairs
    subprocess.run(["tc", "qdisc", "add", "dev", s2, "root", "handle", "5:", "tbf", "rate", "100mbit",
                    "burst", "15000", "latency", "10ms"], check=True)
    loop = NativePacketLoop({1: s1, 2: s2})
    loop.attach(NativeSwitch(program()))
    loop.start()
    rx, tx = host_socket(h2), host_socket(h1)
    try:
        bypass = {n: p.sock.getsockopt(263, 20) for n, p in loop.ports.items()}   # SOL_PACKET, PACKET_QDISC_BYPASS
        assert bypass == {1: 1, 2: 0}
        before = _qdisc_sent_packets(s2)
        marker = os.urandom(6)
        for _ in range(5):
            tx.send(frame(7, marker))
        assert frames_on(rx, marker)
        time.sleep(0.2)
        assert _qdisc_sent_packets(s2) - before >= 5
    finally:
        loop.stop()
        rx.close()
        tx.close()
