"""Switch ports on Linux interfaces: AF_PACKET sockets (`af_packet`), the packet loops -- in C
for a native switch (`native_loop`), in Python otherwise (`packet_loop`) -- and BMv2-style
per-port pcap capture (`pcap`)."""
from .af_packet import AfPacketPort, PortError
from .packet_loop import PacketLoop
from .pcap import PcapWriter, read_pcap

__all__ = ["AfPacketPort", "PacketLoop", "PcapWriter", "PortError", "read_pcap"]
