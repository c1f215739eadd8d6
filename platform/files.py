"""Outputs appear whole or not at all: written next to their final name, then renamed over it.

The one helper every command uses for a file (a report, a metrics record, a chart, a checkpoint's state): a reader
finds the old file or the new one, never half of it, and a failed write leaves no temporary file behind. Folders
have their own: ``platform/data/staging.py`` (data outputs) and ``models/directories.py`` (model directories)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path


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
