"""An export's output: written into a hidden folder renamed into place when complete, and
packed into one archive (``.zip`` or ``.tar.gz``) for download."""

from __future__ import annotations

import os
import shutil
import tarfile
import uuid
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from server.export.errors import ExportError

ARCHIVE_FORMATS = ("zip", "tar.gz")


@contextmanager
def staged(out_dir: Path, kind: str) -> Iterator[Path]:
    """A hidden sibling of the new folder ``out_dir`` (``.<name>.<kind>-<random>``) to write
    into: renamed to ``out_dir`` when the block ends, removed if it raises (all or nothing)."""
    out_dir = Path(out_dir)
    if out_dir.exists():
        raise ExportError(f"the output folder {out_dir} already exists")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.with_name(f".{out_dir.name}.{kind}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    try:
        yield tmp
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


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
