"""TFRecord framing and its masked CRC-32C checksums."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from server.export.formats.rlds.tfrecord import (
    CorruptRecordError,
    TFRecordWriter,
    frame_record,
    masked_crc32c,
    read_records,
)


def test_masked_crc_known_values() -> None:
    # CRC-32C("123456789") = 0xE3069283 (RFC 3720 check value), then TFRecord's mask.
    crc = 0xE3069283
    assert masked_crc32c(b"123456789") == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    assert masked_crc32c(b"") == 0xA282EAD8


def test_frame_layout() -> None:
    record = frame_record(b"hello")
    assert len(record) == 8 + 4 + 5 + 4
    assert struct.unpack("<Q", record[:8]) == (5,)
    assert struct.unpack("<I", record[8:12]) == (masked_crc32c(record[:8]),)
    assert record[12:17] == b"hello"
    assert struct.unpack("<I", record[17:]) == (masked_crc32c(b"hello"),)


def test_write_and_read_back(tmp_path: Path) -> None:
    records = [b"", b"a", bytes(range(256)) * 100]
    with TFRecordWriter(tmp_path / "f.tfrecord") as writer:
        for r in records:
            writer.write(r)
    assert writer.num_records == 3
    assert writer.num_bytes == (tmp_path / "f.tfrecord").stat().st_size
    assert list(read_records(tmp_path / "f.tfrecord")) == records


def test_corruption_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "f.tfrecord"
    with TFRecordWriter(path) as writer:
        writer.write(b"payload")
    data = bytearray(path.read_bytes())
    data[14] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match="data checksum"):
        list(read_records(path))
    path.write_bytes(bytes(data[:10]))
    with pytest.raises(CorruptRecordError, match="truncated"):
        list(read_records(path))
