"""A real full disk for the tests: a tmpfs of a few hundred kB mounted on a temporary folder. Mounting needs root
(CI containers run as root); elsewhere the test is skipped with the reason, rather than faked."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_filesystem(path: Path, size: str) -> Iterator[Path]:
    """``path`` as a tmpfs of ``size`` (mount's syntax: ``240k``); ``resize(path, size)`` grows it in place."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs (a real full disk) needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=True)


def resize(path: Path, size: str) -> None:
    """Free space the way a user would see it: the same file system, now larger (files kept)."""
    subprocess.run(["mount", "-o", f"remount,size={size}", str(path)], check=True)
