"""Reference checksum and hash algorithms written out independently of p4sim/engine/hashes.py, so
tests compare the engine against a second implementation rather than against itself."""
import struct


def ones_sum(data: bytes) -> int:
    """The 16-bit one's-complement sum of `data` (even length), carries folded back in."""
    total = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def ones_complement_checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of `data`: IPv4's header checksum over a zeroed field."""
    return 0xFFFF - ones_sum(data)


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC (BMv2's crc16): reflected polynomial 0xA001, initial value 0."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc
