"""Switch ports on Linux interfaces: AF_PACKET sockets (`af_packet`), the polling packet loop
(`packet_loop`) and BMv2-style per-port pcap capture (`pcap`)."""
from .af_packet import AfPacketPort, PortError
from .packet_loop import PacketLoop
from .pcap import PcapWriter, read_pcap

__all__ = ["AfPacketPort", "PacketLoop", "PcapWriter", "PortError", "read_pcap"]
