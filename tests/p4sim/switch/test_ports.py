"""Ports layer pieces that need no root: pcap files readable by other tools, unknown output
ports, and the packet path's tolerance of malformed frames."""
import pytest

from p4sim.ports import PacketLoop, PcapWriter, read_pcap
from p4sim.ports.af_packet import AfPacketPort, PortError
from p4sim.runtime.device import Device
from p4sim.runtime.packet_io import PacketPath


def test_pcap_files_are_standard_pcap(tmp_path):
    from scapy.utils import rdpcap
    path = tmp_path / "s1-eth1_in.pcap"
    writer = PcapWriter(str(path))
    frames = [bytes.fromhex("000000000002000000000001" "0800") + bytes(range(40)), b"\xff" * 60]
    for frame in frames:
        writer.write(frame)
    writer.close()
    writer.write(b"after close is ignored")
    assert [bytes(p) for p in rdpcap(str(path))] == frames
    assert read_pcap(str(path)) == frames


def test_missing_interface_names_the_binding():
    with pytest.raises(PortError) as info:
        AfPacketPort(3, "p4rtnoiface9")
    assert "3@p4rtnoiface9" in str(info.value) and "does not exist" in str(info.value)


def test_output_to_a_port_without_interface_is_dropped(tmp_path):
    loop = PacketLoop({}, pcap_dir=str(tmp_path))
    loop.send(7, b"\x00" * 60)  # no interface on port 7: silently dropped
    loop.close()


def test_malformed_frames_and_missing_pipeline_never_raise(reference_dir):
    device = Device(0, cpu_port=64)
    path = PacketPath(device)
    sent = []
    path.port_sink = lambda port, frame: sent.append((port, frame))
    assert path.inject(1, b"\x01\x02") == []  # no pipeline yet: dropped
    device.load_json(str(reference_dir / "p4c-out" / "fwd_basic.json"))
    for frame in (b"", b"\x01", bytes(13), bytes.fromhex("00aa0000000100000000009908004500")):
        path.inject(1, frame)
    path.inject(999, bytes(64))  # unknown ingress port
    assert path.stats["in"] == 6 and path.stats["errors"] == 0
