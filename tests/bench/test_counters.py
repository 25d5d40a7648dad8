"""Interface counter reading: /proc/PID/net/dev parsing, /sys/class/net, deltas."""
import subprocess
import uuid

import pytest

from lab.bench import interface_counters as counters

SAMPLE = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:  123456     789    0    0    0     0          0         0   123456     789    0    0    0     0       0          0
bh1-eth0: 9876543210 1234567 0 0 0 0 0 0 1111 22 0 0 0 0 0 0
"""


def test_parse_proc_net_dev_reads_rx_and_tx_columns():
    table = counters.parse_proc_net_dev(SAMPLE)
    assert set(table) == {"lo", "bh1-eth0"}
    eth = table["bh1-eth0"]
    assert (eth.rx_bytes, eth.rx_packets, eth.tx_bytes, eth.tx_packets) == (9876543210, 1234567, 1111, 22)
    assert table["lo"].tx_bytes == 123456


@pytest.mark.parametrize("text,msg", [
    ("garbage\n", "header"),
    (SAMPLE.splitlines()[0] + "\n" + SAMPLE.splitlines()[1] + "\n eth0 1 2 3\n", "line 3: no ':'"),
    (SAMPLE.splitlines()[0] + "\n" + SAMPLE.splitlines()[1] + "\n eth0: 1 2 3\n", "expected 16"),
    (SAMPLE.splitlines()[0] + "\n" + SAMPLE.splitlines()[1] + "\n eth0:" + " x" * 16 + "\n", "non-numeric"),
])
def test_parse_proc_net_dev_rejects_bad_text(text, msg):
    with pytest.raises(counters.CounterError, match=msg):
        counters.parse_proc_net_dev(text)


def test_delta_and_reset_detection():
    a = counters.IfCounters(10, 1, 20, 2)
    b = counters.IfCounters(110, 3, 520, 7)
    assert (b - a).as_dict() == {"rx_bytes": 100, "rx_packets": 2, "tx_bytes": 500, "tx_packets": 5}
    with pytest.raises(counters.CounterError, match="backwards"):
        a - b


def test_proc_and_sysfs_agree_on_loopback_and_see_real_traffic():
    """Both sources read the same kernel counters; sending on lo moves them by at least the payload."""
    import socket
    before = counters.read_proc("lo")
    sys_before = counters.read_sysfs("lo")
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(10):
        tx.sendto(b"x" * 1000, rx.getsockname())
    rx.close()
    tx.close()
    after = counters.read_proc("lo")
    sys_after = counters.read_sysfs("lo")
    delta = after - before
    assert delta.tx_bytes >= 10 * 1000 and delta.tx_packets >= 10
    # both readings were taken around the same traffic; lo counts each packet once each way
    assert (sys_after - sys_before).tx_bytes >= 10 * 1000
    assert abs(after.tx_bytes - sys_after.tx_bytes) <= (sys_after - sys_before).tx_bytes + 10**6


def test_missing_interface_and_process_are_named():
    with pytest.raises(counters.CounterError, match="'nope0' not in /proc/self/net/dev"):
        counters.read_proc("nope0")
    with pytest.raises(counters.CounterError, match="cannot read /proc/999999999/net/dev"):
        counters.read_proc("lo", pid=999999999)
    with pytest.raises(counters.CounterError, match="'nope0' has no"):
        counters.read_sysfs("nope0")


@pytest.mark.root
def test_proc_pid_reads_another_namespace():
    """/proc/PID/net/dev shows PID's namespace: an interface only there is found, not in ours."""
    ns = f"bnch{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "add", "bnchdum0", "type", "veth", "peer", "name", "bnchdum1"], check=True)
        subprocess.run(["ip", "-n", ns, "link", "set", "bnchdum0", "up"], check=True)
        proc = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "30"])
        try:
            import time
            deadline = time.time() + 5
            while time.time() < deadline:
                try:
                    c = counters.read_proc("bnchdum0", pid=proc.pid)
                    break
                except counters.CounterError:
                    time.sleep(0.05)  # `ip netns exec` has not switched namespace yet
            else:
                pytest.fail("interface in the namespace never visible through /proc/PID/net/dev")
            assert c.rx_bytes >= 0
            with pytest.raises(counters.CounterError):
                counters.read_proc("bnchdum0")
        finally:
            proc.kill()
            proc.wait()
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=True)
