"""Protobuf's wire format, the two pieces written by hand: varints and field keys.

Shared by the step codec (:mod:`server.recording.codec`, a step's envlogger ``Data``
message) and the export's ``tf.train.Example`` writer
(:mod:`server.export.formats.rlds.tf_example`), which build serialized messages directly
instead of building the messages first.
"""

from __future__ import annotations

ONE_BYTE = [bytes((n,)) for n in range(0x80)]


def varint(n: int) -> bytes:
    """One unsigned varint (a length, or an int64 as its 64-bit two's complement: ten
    bytes for a negative one)."""
    if n < 0x80:
        return ONE_BYTE[n] if n >= 0 else varint(n & 0xFFFF_FFFF_FFFF_FFFF)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def key(number: int) -> bytes:
    """The key of field ``number`` when length-delimited (wire type 2: messages, bytes,
    strings, packed numbers)."""
    return varint(number << 3 | 2)
