"""Hash and checksum algorithms of BMv2 calculations (csum16, crc16, crc32, identity, xor16, ...)."""
import random
import struct
import zlib
from collections.abc import Callable

from .errors import ProgramError


def csum16(data: bytes) -> int:
    """Internet checksum (RFC 1071): ones' complement of the ones' complement sum of 16-bit words."""
    if len(data) & 1:
        data += b"\0"
    total = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def xor16(data: bytes) -> int:
    if len(data) & 1:
        data += b"\0"
    acc = 0
    for (word,) in struct.iter_unpack(">H", data):
        acc ^= word
    return acc


def _make_crc16_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC16_TABLE = _make_crc16_table()


def crc16(data: bytes) -> int:
    """CRC-16/ARC (poly 0x8005 reflected, init 0): what BMv2 calls crc16."""
    crc = 0
    for byte in data:
        crc = (crc >> 8) ^ _CRC16_TABLE[(crc ^ byte) & 0xFF]
    return crc


def crc32(data: bytes) -> int:
    """CRC-32 (IEEE, as zlib): what BMv2 calls crc32."""
    return zlib.crc32(data) & 0xFFFFFFFF


def identity(data: bytes) -> int:
    return int.from_bytes(data, "big")


def rand(data: bytes) -> int:
    return random.getrandbits(32)


ALGORITHMS = {
    "csum16": csum16,
    "xor16": xor16,
    "crc16": crc16,
    "crc16_custom": crc16,
    "crc32": crc32,
    "crc32_custom": crc32,
    "identity": identity,
    "random": rand,
}


def algorithm(name: str, where: str) -> Callable[[bytes], int]:
    """The function for a BMv2 algorithm name; ProgramError naming `where` if unknown."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ProgramError(f"{where}: unsupported hash algorithm {name!r} "
                           f"(supported: {', '.join(sorted(ALGORITHMS))})") from None
