"""One switch port on a Linux interface, through an AF_PACKET raw socket.

The socket is promiscuous, skips the frames the host itself sends (PACKET_OUTGOING: otherwise
the switch would see its own output), and puts back 802.1Q tags the kernel stripped into
auxiliary data (VLAN offload), so the pipeline sees the frame as it was on the wire.
"""
import errno
import socket
import struct

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_AUXDATA = 8
PACKET_OUTGOING = 4
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
MAX_FRAME = 65535 + 64
_AUXDATA = struct.Struct("IIIHHHH")


class PortError(Exception):
    """A port could not be opened (missing interface, no permission)."""


class AfPacketPort:
    def __init__(self, number: int, interface: str):
        self.number = number
        self.interface = interface
        try:
            self.ifindex = socket.if_nametoindex(interface)
        except OSError:
            raise PortError(f"-i {number}@{interface}: interface '{interface}' does not exist") from None
        try:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError:
            raise PortError(f"-i {number}@{interface}: raw sockets need root (CAP_NET_RAW)") from None
        try:
            sock.bind((interface, 0))
            membership = struct.pack("iHH8s", self.ifindex, PACKET_MR_PROMISC, 0, b"")
            sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, membership)
            sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            for option in (socket.SO_RCVBUF, socket.SO_SNDBUF):
                try:
                    sock.setsockopt(socket.SOL_SOCKET, option, 4 << 20)
                except OSError:
                    pass
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            raise PortError(f"-i {number}@{interface}: {exc.strerror or exc}") from None
        self.sock = sock

    def fileno(self) -> int:
        return self.sock.fileno()

    def receive(self) -> bytes | None:
        """The next incoming frame, or None when nothing (more) is queued.

        Frames this host sent out of the interface are skipped."""
        while True:
            try:
                data, ancillary, _flags, address = self.sock.recvmsg(MAX_FRAME, 64)
            except (BlockingIOError, InterruptedError):
                return None
            except OSError:
                return None  # interface went down: nothing to read
            if address[2] == PACKET_OUTGOING:
                continue
            for level, kind, payload in ancillary:
                if level == SOL_PACKET and kind == PACKET_AUXDATA and len(payload) >= _AUXDATA.size:
                    status, _len, _snap, _mac, _net, tci, tpid = _AUXDATA.unpack_from(payload)
                    if status & TP_STATUS_VLAN_VALID:
                        tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100
                        data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
            return data

    def exists(self) -> bool:
        """Whether the interface is still there (veths vanish when their peer is deleted)."""
        try:
            return socket.if_nametoindex(self.interface) == self.ifindex
        except OSError:
            return False

    def send(self, frame: bytes) -> None:
        try:
            self.sock.send(frame)
        except (BlockingIOError, InterruptedError):
            pass  # transmit queue full: drop, as a switch would
        except OSError as exc:
            if exc.errno not in (errno.ENETDOWN, errno.ENXIO, errno.ENODEV, errno.EMSGSIZE):
                raise

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
