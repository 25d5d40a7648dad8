"""Send or capture raw Ethernet frames on an interface; run inside a namespace with
`ip netns exec NS python ns_io.py ...` by the veth tests.

    ns_io.py send IFACE HEX [HEX ...]
    ns_io.py recv IFACE MARKER_HEX SECONDS MAX   # prints READY, then one hex frame per line
"""
import select
import socket
import sys
import time

ETH_P_ALL = 0x0003


def open_socket(interface):
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((interface, 0))
    return sock


def send(interface, frames):
    sock = open_socket(interface)
    for frame in frames:
        sock.send(bytes.fromhex(frame))
        time.sleep(0.01)


def receive(interface, marker, seconds, limit):
    """Print matching incoming frames, 802.1Q tags restored (p4sim's port reader does that)."""
    from p4sim.ports.af_packet import AfPacketPort
    port = AfPacketPort(0, interface)
    marker = bytes.fromhex(marker)
    print("READY", flush=True)
    deadline = time.time() + seconds
    count = 0
    while count < limit and time.time() < deadline:
        ready, _, _ = select.select([port], [], [], max(0.0, deadline - time.time()))
        if not ready:
            break
        data = port.receive()
        if data is None or marker not in data:
            continue
        print(data.hex(), flush=True)
        count += 1


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(sys.argv[2], sys.argv[3:])
    else:
        receive(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))
