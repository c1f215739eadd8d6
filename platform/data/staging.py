"""Write an output directory aside, then rename it into place: readers never see a half-written directory.

Every ``skipview data`` command builds its result in a sibling folder ``.<name>.partial-<pid>`` (same file system,
so the final ``rename`` is atomic) and only moves it to the requested path once everything in it is complete. On any
error the partial folder is removed and an existing output is left untouched; a file system that fills up is
reported with the output's path and how far it got (``StorageFull``), not as a bare ``[Errno 28]``. A process
killed outright (SIGKILL, a machine that went down) cannot clean up; the next command for the same output removes
the partial folders whose process no longer runs.
"""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skipview.models.directories import swap_in
from skipview.platform.files import human, is_full, size_of, storage_full
from skipview.platform.processes import running


class OutputExistsError(FileExistsError):
    pass


@contextmanager
def staged_directory(out: str | Path, overwrite: bool = False) -> Iterator[Path]:
    out = Path(out)
    if out.exists() and not overwrite:
        raise OutputExistsError(f"{out} already exists (pass --overwrite to replace it)")
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned(out)
    partial = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    try:
        yield partial
    except BaseException as error:
        full = is_full(error)
        written = size_of(partial) if full else 0
        shutil.rmtree(partial, ignore_errors=True)
        if full:
            raise storage_full(out, f"the output had reached {human(written)} when it filled",
                               "free more than that, or write the output elsewhere") from error
        raise
    # Keep the old output until the new one is complete, then swap: at every instant `out` is the old or the new.
    swap_in(partial, out)


def remove_abandoned(out: Path) -> list[Path]:
    """Remove the partial folders of ``out`` left by processes that are gone; a running one's is kept."""
    removed = []
    for partial in out.parent.glob(f".{glob.escape(out.name)}.partial-*"):
        pid = partial.name.rsplit("-", 1)[1]
        if pid.isdigit() and not running(int(pid)):
            shutil.rmtree(partial, ignore_errors=True)
            removed.append(partial)
    return removed

