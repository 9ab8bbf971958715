"""Packing an export folder into one archive (``.zip`` or ``.tar.gz``) for download."""

from __future__ import annotations

import os
import tarfile
import zipfile
from pathlib import Path

from server.export.errors import ExportError

ARCHIVE_FORMATS = ("zip", "tar.gz")


def archive_members(folder: Path) -> list[tuple[Path, str]]:
    """The files under ``folder`` and their names in an archive (``<folder name>/...``)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return [(p, (Path(folder.name) / p.relative_to(folder)).as_posix()) for p in files]


def make_archive(folder: Path, archive_format: str, dest: Path | None = None) -> Path:
    """Pack ``folder`` (its name as the archive's top folder); returns the archive path.

    The archive is written under a temporary name and renamed when complete.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ExportError(f"nothing to package: {folder} is not a folder")
    if archive_format not in ARCHIVE_FORMATS:
        raise ExportError(
            f"archive format must be one of {ARCHIVE_FORMATS}, not {archive_format!r}"
        )
    dest = Path(dest) if dest else folder.with_name(f"{folder.name}.{archive_format}")
    partial = dest.with_name(f".{dest.name}.partial")
    try:
        if archive_format == "zip":
            # Shards and PNG/JPEG-laden records hardly compress: store them.
            with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_STORED) as zf:
                for path, arcname in archive_members(folder):
                    zf.write(path, arcname)
        else:
            with tarfile.open(partial, "w:gz", compresslevel=1) as tf:
                tf.add(folder, arcname=folder.name)
        os.replace(partial, dest)
    finally:
        partial.unlink(missing_ok=True)
    return dest
