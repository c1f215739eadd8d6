"""Write an output directory aside, then rename it into place: readers never see a half-written directory.

Every ``skipview data`` command builds its result in a sibling folder ``.<name>.partial-<pid>`` (same file system,
so the final ``rename`` is atomic) and only moves it to the requested path once everything in it is complete. On any
error the partial folder is removed and an existing output is left untouched.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skipview.models.directories import swap_in


class OutputExistsError(FileExistsError):
    pass


@contextmanager
def staged_directory(out: str | Path, overwrite: bool = False) -> Iterator[Path]:
    out = Path(out)
    if out.exists() and not overwrite:
        raise OutputExistsError(f"{out} already exists (pass --overwrite to replace it)")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    try:
        yield partial
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    # Keep the old output until the new one is complete, then swap: at every instant `out` is the old or the new.
    swap_in(partial, out)
