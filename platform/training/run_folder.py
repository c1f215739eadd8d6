"""A run's folder on a local storage (``STORAGE/NAME``) made fit to resume from, whatever stopped the last attempt.

Ray Train V2 registers checkpoints in ``checkpoint_manager_snapshot.json``, which it rewrites in place (truncate,
then write) after every checkpoint: on a full file system the truncation succeeds and the write does not, leaving a
0-byte snapshot, and every later resume of the run fails with ``CheckpointManagerInitializationError: Expecting
value: line 1 column 1 (char 0)``, naming no file (``CheckpointManager._write_state_to_storage`` in Ray 2.60; no
Ray issue found for it as of this writing). ``KeepSnapshot`` copies each snapshot Ray has written whole to
``SNAPSHOT_COPY`` (written aside, so a full disk leaves the previous copy), and ``repair`` puts that copy back
before the run is fitted again. Ray's checkpoint manager writes the snapshot before the user callbacks hear of the
report, and deletes the checkpoints it no longer keeps only after the write succeeded, so the copy names
checkpoints that are still there.

A checkpoint folder that is not in the snapshot was never registered (an upload cut by a full disk or a killed
driver: a truncated ``state.pt``); Ray never reads it or deletes it (ray-project/ray#41700 is the same gap for
worker failures), so ``repair`` removes it. Object storage writes each object whole, so this is for local paths.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from ray.train import UserCallback

from skipview.platform.errors import CorruptCheckpoint
from skipview.platform.files import write_aside

log = logging.getLogger(__name__)

SNAPSHOT = "checkpoint_manager_snapshot.json"           # ray.train.v2._internal.constants, a private module
SNAPSHOT_COPY = ".skipview_snapshot_copy.json"
CHECKPOINT_GLOB = "checkpoint_*"


def registered_names(snapshot_text: str) -> set[str]:
    """Every string in a snapshot: the checkpoint folders it registers are among them, whatever the field (Ray's
    snapshot format changes between versions)."""
    found, pending = set(), [json.loads(snapshot_text)]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            found.add(item)
        elif isinstance(item, dict):
            pending += item.values()
        elif isinstance(item, list):
            pending += item
    return found


def readable(path: Path) -> str | None:
    try:
        text = path.read_text()
        registered_names(text)
    except (OSError, ValueError):
        return None
    return text


class KeepSnapshot(UserCallback):
    """After each registered checkpoint, a copy of Ray's snapshot that a failed rewrite cannot truncate."""

    def __init__(self, run_dir: str):
        self.run_dir = Path(run_dir)

    def after_report(self, run_context, metrics, checkpoint) -> None:
        text = readable(self.run_dir / SNAPSHOT) if checkpoint is not None else None
        if text is None:
            return
        try:
            write_aside(self.run_dir / SNAPSHOT_COPY, lambda tmp: tmp.write_text(text))
        except OSError as error:
            # the previous copy stays; the next checkpoint, which needs more room than this, reports the full disk
            log.warning("%s: could not copy Ray's checkpoint snapshot (%s)", self.run_dir, error)


def repair(run_dir: Path) -> list[str]:
    """Put back a snapshot Ray left empty or cut, and remove the checkpoint folders it does not register. Returns
    one line per change, for the log."""
    if not run_dir.is_dir():
        return []
    done = []
    snapshot, copy = run_dir / SNAPSHOT, run_dir / SNAPSHOT_COPY
    text = readable(snapshot) if snapshot.exists() else ""
    if text is None:
        text = readable(copy) if copy.exists() else None
        if text is None:
            raise CorruptCheckpoint(f"{snapshot}: Ray's record of the run's checkpoints is empty or cut (a full "
                                    f"disk?) and has no copy to restore; move {run_dir} away to train from scratch")
        write_aside(snapshot, lambda tmp: tmp.write_text(text))
        done.append(f"{snapshot} was empty or cut (a full disk?): restored from {copy.name}")
    names = registered_names(text) if text else set()
    for folder in sorted(run_dir.glob(CHECKPOINT_GLOB)):
        if folder.is_dir() and folder.name not in names:
            shutil.rmtree(folder)
            done.append(f"{folder}: removed, an unregistered checkpoint (an upload that did not finish)")
    missing = sorted(name for name in names if name.startswith("checkpoint_") and not (run_dir / name).is_dir())
    if missing:
        raise CorruptCheckpoint(f"{snapshot}: registers checkpoints that are gone ({', '.join(missing)}); move "
                                f"{run_dir} away to train from scratch")
    return done
