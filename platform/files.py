"""Outputs appear whole or not at all: written next to their final name, then renamed over it.

The one helper every command uses for a file (a report, a metrics record, a chart, a checkpoint's state): a reader
finds the old file or the new one, never half of it, and a failed write leaves no temporary file behind. Folders
have their own: ``platform/data/staging.py`` (data outputs) and ``models/directories.py`` (model directories).

An output that does not fit is the user's to fix (free space, or write elsewhere), so a full file system is reported
as ``StorageFull``: the path, the space the output needs (or had reached) and the space left."""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from skipview.platform.errors import StorageFull

# no space left, a disk quota, the process's file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored)
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def write_aside(path: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` fills a temporary file in the same folder, which then replaces ``path`` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # the suffix stays last: some writers pick the format from it (Chromium's --screenshot does)
    tmp = path.with_name(f".{path.stem}.partial{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_aside(path: Path, text: str) -> None:
    write_aside(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json_aside(path: Path, record: object) -> None:
    """``record`` as indented JSON with sorted keys and a final newline."""
    write_text_aside(path, json.dumps(record, indent=2, sort_keys=True) + "\n")


def is_full(error: BaseException) -> bool:
    """Whether ``error`` says the file system had no room (an OSError from Python's file writes or pyarrow's, Ray's
    storage layer: ``[Errno 28] Error writing bytes to file``)."""
    return isinstance(error, OSError) and error.errno in FULL_ERRNOS


def size_of(path: Path) -> int:
    """Bytes in a file, or in every file under a folder."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def disk_usage(path: Path):
    """``shutil.disk_usage`` of the file system that holds ``path`` (or would hold it: its nearest existing
    parent)."""
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path)


def human(size: float) -> str:
    """A byte count as people read it: ``305.5 kB``."""
    for unit in ("bytes", "kB", "MB"):
        if size < 1000:
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def storage_full(path: Path, needed: str, hint: str) -> StorageFull:
    """The one-line error for an output at ``path`` that does not fit: what it needs, what is free, what to do."""
    usage = disk_usage(path)
    return StorageFull(f"{path}: no space left on its file system ({human(usage.free)} free of "
                       f"{human(usage.total)}): {needed}; {hint}")
