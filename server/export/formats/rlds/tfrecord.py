"""TFRecord framing without TensorFlow: length, masked CRC-32C of the length, data, masked CRC.

TensorFlow checks both checksums when it reads a record, so they must be right.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import google_crc32c

_MASK_DELTA = 0xA282EAD8


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C: the CRC rotated right by 15 bits plus a constant."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def framing(data: bytes) -> tuple[bytes, bytes]:
    """What goes before ``data`` in its TFRecord (its length and the length's checksum) and
    after it (its checksum)."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc32c(length)), struct.pack("<I", masked_crc32c(data))


def frame_record(data: bytes) -> bytes:
    """One TFRecord: ``data`` with its length and both checksums."""
    head, tail = framing(data)
    return b"".join((head, data, tail))


class TFRecordWriter:
    """Appends records to one TFRecord file; counts records and bytes written."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._file: BinaryIO = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self.num_records = 0
        self.num_bytes = 0

    def write(self, data: bytes) -> None:
        """Append one record."""
        head, tail = framing(data)
        self._file.write(head)
        self._file.write(data)  # not copied into a framed record first
        self._file.write(tail)
        self.num_records += 1
        self.num_bytes += len(head) + len(data) + len(tail)

    def close(self) -> None:
        """Flush and close the file (safe to call twice)."""
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CorruptRecordError(ValueError):
    """A TFRecord whose framing or checksums are wrong."""


def read_records(path: Path) -> Iterator[bytes]:
    """Yield the records of a TFRecord file, verifying both checksums of each."""
    with open(path, "rb") as f:
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) < 12:
                raise CorruptRecordError(f"{path}: truncated record header")
            length_bytes, (length_crc,) = header[:8], struct.unpack("<I", header[8:])
            if masked_crc32c(length_bytes) != length_crc:
                raise CorruptRecordError(f"{path}: bad length checksum")
            (length,) = struct.unpack("<Q", length_bytes)
            data = f.read(length)
            footer = f.read(4)
            if len(data) < length or len(footer) < 4:
                raise CorruptRecordError(f"{path}: truncated record")
            if masked_crc32c(data) != struct.unpack("<I", footer)[0]:
                raise CorruptRecordError(f"{path}: bad data checksum")
            yield data
