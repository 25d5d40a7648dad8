"""P4Runtime binary strings <-> integers (spec section "Bytestrings").

Servers accept both the canonical form (no leading zero bytes) and the legacy padded form, and
reject values that do not fit the declared bitwidth. Reads answer in the canonical form.
"""
from .errors import invalid, out_of_range


def decode(data: bytes, bitwidth: int, what: str) -> int:
    """The unsigned value of `data`; OUT_OF_RANGE naming `what` if it is wider than `bitwidth`."""
    if not isinstance(data, (bytes, bytearray)):
        raise invalid(f"{what}: expected bytes")
    if len(data) == 0:
        raise invalid(f"{what}: empty byte string")
    value = int.from_bytes(data, "big")
    if bitwidth and value >> bitwidth:
        raise out_of_range(
            f"{what}: value 0x{data.hex()} does not fit in {bitwidth} bits")
    return value


def encode(value: int, bitwidth: int = 0) -> bytes:
    """Canonical byte string of an unsigned value (at least one byte, no leading zeros)."""
    if value < 0:
        value &= (1 << max(bitwidth, value.bit_length() + 1)) - 1
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def encode_padded(value: int, bitwidth: int) -> bytes:
    """Fixed-width byte string (ceil(bitwidth/8) bytes): used for packet headers on the wire."""
    return (value & ((1 << bitwidth) - 1)).to_bytes((bitwidth + 7) // 8, "big")
