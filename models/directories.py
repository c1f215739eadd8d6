"""Swap a finished directory in for an old one, so a reader finds the old or the new directory, never neither.

Deleting the old directory and then renaming the new one in leaves a moment with no directory at all: a serving
process that loads the model then fails, and a crash in between loses both. Linux's ``renameat2`` with
``RENAME_EXCHANGE`` swaps two paths in one atomic step; the old directory then sits at the staging path and is
removed afterwards. Where the call is missing (not Linux, an old kernel or C library, a file system without
exchange support) the old directory is renamed aside first: a gap of two renames instead of a whole copy.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from pathlib import Path

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_UNSUPPORTED = {errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP}


def _renameat2():
    try:
        return ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None


_RENAMEAT2 = _renameat2()


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap the paths ``a`` and ``b`` (both must exist); False where the system cannot."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(b))


def swap_in(staging: str | Path, target: str | Path) -> Path:
    """Move the complete directory ``staging`` to ``target`` (same file system), replacing what is there."""
    staging, target = Path(staging), Path(target)
    if not target.exists():
        staging.rename(target)
    elif exchange(staging, target):
        shutil.rmtree(staging)                 # the staging path now holds the old directory
    else:
        retired = target.with_name(f".{target.name}.old-{os.getpid()}")
        target.rename(retired)
        staging.rename(target)
        shutil.rmtree(retired, ignore_errors=True)
    return target
