"""The switch's AF_PACKET ports and their pcap writers, opened together and closed together.

Both packet loops (the Python one and the native C one) own one: opening a set either succeeds
for every interface or closes what it had opened and raises."""
from __future__ import annotations

from .af_packet import AfPacketPort
from .pcap import PcapWriter, port_pcaps


class PortSet:
    def __init__(self, ports: dict[int, str], pcap_dir: str | None = None):
        self.ports: dict[int, AfPacketPort] = {}
        self.pcaps: dict[int, tuple[PcapWriter, PcapWriter]] = {}
        try:
            for number, interface in ports.items():
                self.ports[number] = AfPacketPort(number, interface)
                if pcap_dir is not None:
                    self.pcaps[number] = port_pcaps(pcap_dir, interface)
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        for port in self.ports.values():
            port.close()
        for pcap_in, pcap_out in self.pcaps.values():
            pcap_in.close()
            pcap_out.close()
