"""Parse control-plane values (ints, bytes, p4runtime-shell strings) into unsigned bit patterns."""
import ipaddress
import re
from typing import Any

from .errors import EngineError

_MAC = re.compile(r"^[0-9a-fA-F]{1,2}([:-][0-9a-fA-F]{1,2}){5}$")
_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


def parse_value(value: Any, width: int, what: str) -> int:
    """Return `value` as an unsigned int that fits in `width` bits.

    Accepts ints (negative ones as two's complement of `width`), bytes (big endian) and the strings
    p4runtime-shell writes: decimal, 0x/0b/0o, MAC, IPv4, IPv6.  `what` names the object in errors.
    """
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, (bytes, bytearray)):
        value = int.from_bytes(value, "big")
    elif isinstance(value, str):
        value = _parse_string(value.strip(), what)
    elif not isinstance(value, int):
        raise EngineError(f"{what}: expected an int or a string, got {type(value).__name__} {value!r}")
    if value < 0:
        if width > 1 and value >= -(1 << (width - 1)):
            value &= (1 << width) - 1
        else:
            raise EngineError(f"{what}: value {value} does not fit in {width} bits")
    if value >> width:
        raise EngineError(f"{what}: value {value:#x} does not fit in {width} bits")
    return value


def _parse_string(text, what):
    try:
        if _MAC.match(text):
            return int(re.sub(r"[:-]", "", "".join(p.zfill(2) for p in re.split(r"[:-]", text))), 16)
        if _IPV4.match(text):
            return int(ipaddress.IPv4Address(text))
        if ":" in text:
            return int(ipaddress.IPv6Address(text))
        return int(text, 0) if not re.match(r"^-?0\d", text) else int(text, 10)
    except ValueError:
        raise EngineError(f"{what}: cannot parse value {text!r}") from None


def parse_match(value: Any, match_type: str, width: int, what: str) -> Any:
    """Normalize one key field's match value.

    Returns: exact -> int; lpm -> (value, prefix_len); ternary -> (value, mask); range -> (lo, hi);
    optional -> (value, mask) with mask all-ones or 0 (None = wildcard).
    """
    full = (1 << width) - 1
    if match_type in ("exact", "valid"):
        if isinstance(value, (tuple, list)):
            raise EngineError(f"{what}: exact match takes a single value, got {value!r}")
        return parse_value(value, width, what)
    if match_type == "lpm":
        if isinstance(value, str) and "/" in value:
            text, plen_text = value.rsplit("/", 1)
            value = (text, plen_text)
        if isinstance(value, (tuple, list)):
            if len(value) != 2:
                raise EngineError(f"{what}: lpm match is (value, prefix_len), got {value!r}")
            v = parse_value(value[0], width, what)
            plen = parse_value(value[1], 32, what + " prefix length") if isinstance(value[1], str) else value[1]
        else:
            v, plen = parse_value(value, width, what), width
        if not isinstance(plen, int) or not 0 <= plen <= width:
            raise EngineError(f"{what}: prefix length {plen!r} out of range 0..{width}")
        mask = full ^ ((1 << (width - plen)) - 1)
        return (v & mask, plen)
    if match_type in ("ternary", "optional"):
        if value is None or value == "*":
            return (0, 0)
        if isinstance(value, str) and "&&&" in value:
            value = tuple(value.split("&&&", 1))
        if isinstance(value, (tuple, list)):
            if len(value) != 2:
                raise EngineError(f"{what}: {match_type} match is (value, mask), got {value!r}")
            v, m = parse_value(value[0], width, what), parse_value(value[1], width, what + " mask")
        else:
            v, m = parse_value(value, width, what), full
        if match_type == "optional" and m not in (0, full):
            raise EngineError(f"{what}: optional match takes a value or None, not a partial mask")
        return (v & m, m)
    if match_type == "range":
        if isinstance(value, str) and ".." in value:
            value = tuple(value.split("..", 1))
        if isinstance(value, (tuple, list)):
            if len(value) != 2:
                raise EngineError(f"{what}: range match is (lo, hi), got {value!r}")
            lo, hi = parse_value(value[0], width, what), parse_value(value[1], width, what)
        else:
            lo = hi = parse_value(value, width, what)
        if lo > hi:
            raise EngineError(f"{what}: empty range {lo}..{hi}")
        return (lo, hi)
    raise EngineError(f"{what}: unsupported match type {match_type!r}")
