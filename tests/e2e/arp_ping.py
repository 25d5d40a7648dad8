"""`arp_ping.py IFACE SRC_IP SRC_MAC TARGET_IP`: broadcast ARP requests for TARGET_IP on IFACE and
print the MAC address that answers (exit 0), or `none` (exit 1) after a few tries.

Run inside a Mininet host (mnexec / host.cmd): the hosts of a p4reduce network never send ARP
themselves (static entries), and the P4 switch owning the service address answers ARP for it, so
this is how a test "pings" the service address across the switches. Standard library only.
"""
import select
import socket
import struct
import sys
import time

ETH_P_ARP = 0x0806


def arp_ping(iface: str, src_ip: str, src_mac: str, target: str, tries: int = 5, wait_s: float = 1.0) -> str | None:
    mac = bytes.fromhex(src_mac.replace(":", ""))
    request = (b"\xff" * 6 + mac + struct.pack("!H", ETH_P_ARP)
               + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + mac + socket.inet_aton(src_ip)
               + b"\x00" * 6 + socket.inet_aton(target))
    request += b"\x00" * (60 - len(request))
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP)) as sock:
        sock.bind((iface, ETH_P_ARP))
        for _ in range(tries):
            sock.send(request)
            end = time.monotonic() + wait_s
            while (left := end - time.monotonic()) > 0:
                ready, _, _ = select.select([sock], [], [], left)
                if not ready:
                    break
                frame = sock.recv(2048)
                if (len(frame) >= 42 and frame[12:14] == struct.pack("!H", ETH_P_ARP)
                        and frame[20:22] == struct.pack("!H", 2) and frame[28:32] == socket.inet_aton(target)
                        and frame[0:6] == mac):
                    return ":".join(f"{b:02x}" for b in frame[22:28])
    return None


if __name__ == "__main__":
    answer = arp_ping(*sys.argv[1:5])
    print(answer or "none")
    sys.exit(0 if answer else 1)
