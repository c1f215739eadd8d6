"""What a checkpoint holds and how it is written and read back.

Rank 0 writes the training state (``state.pt``: model, optimiser, schedule, grad scaler, step, data position,
MLflow run id, best STS14). Every rank writes its own RNG states (``rng-rank<r>.pt``): Ray merges the files of
all workers into one checkpoint directory, and restoring each rank's generators is what makes a resumed CPU run
bit-identical to an uninterrupted one. Files are written aside and renamed, and Ray registers a checkpoint only
once every worker's upload finished, so a crash never leaves a half-written checkpoint behind.

Checkpoints live on shared storage, so they are read with ``weights_only=True``: unpickling a file someone else
could write must not run code. The only non-tensor objects they hold are NumPy's RNG state (an ``ndarray`` of
``uint32``), allow-listed below. Storage can still hand back a damaged file (a truncated upload, a bad disk), so
``restore`` walks the registered checkpoints newest first and takes the first one whose every file loads, with a
warning naming each one it skipped: a run loses the steps since the previous checkpoint, not the run.

A checkpoint that would not fit on a local storage is refused before Ray uploads it (``check_room``): Ray's upload
stops at the full disk with a truncated ``state.pt`` in a folder it never registers, and its next rewrite of the
run's checkpoint record can leave that record empty (``run_folder.py``). The run fails with one line naming the
folder and the space needed, and resumes from its last complete checkpoint once there is room.
"""

from __future__ import annotations

import logging
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from skipview.platform.errors import CorruptCheckpoint
from skipview.platform.files import disk_usage, human, is_full, size_of, storage_full, write_aside

log = logging.getLogger(__name__)

STATE_FILE = "state.pt"
MODEL_DIR = "model"
RNG_GLOB = "rng-rank*.pt"
# What np.random.get_state() pickles besides plain tuples and ints: the array's reconstructor (its module moved
# between NumPy 1 and 2, so it is taken from an array rather than imported by name), the array and dtype classes.
SAFE_GLOBALS = [np.zeros(1).__reduce__()[0], np.ndarray, np.dtype, type(np.dtype(np.uint32))]
# Kept free beside each checkpoint: Ray rewrites its checkpoint record after the upload, and run_folder.py copies
# it (a few kB each)
RECORD_ROOM = 64 * 1024
FULL_HINT = ("free space (or move the run's folder to a larger file system and pass that --storage), then rerun "
             "the same command: it resumes from the last complete checkpoint")




@dataclass
class Progress:
    step: int = 0            # optimiser steps taken
    epoch: int = 0           # current pass over the corpus
    batch: int = 0           # batches of this epoch already consumed (per rank)
    best_sts14: float | None = None


def rng_file(rank: int) -> str:
    return f"rng-rank{rank}.pt"


def _atomic_save(obj: Any, path: Path) -> None:
    write_aside(path, lambda tmp: torch.save(obj, tmp))


def rng_states() -> dict[str, Any]:
    states = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict[str, Any]) -> None:
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def write(directory: Path, *, rank: int, progress: Progress, model: torch.nn.Module, optimizer, scheduler,
          scaler, mlflow_run_id: str | None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    _atomic_save(rng_states(), directory / rng_file(rank))
    if rank == 0:
        _atomic_save({"progress": asdict(progress), "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                      "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict() if scaler else None,
                      "mlflow_run_id": mlflow_run_id}, directory / STATE_FILE)


def check_room(run_dir: str, checkpoint: Path, error: BaseException | None = None) -> None:
    """Raise ``StorageFull`` if the checkpoint folder ``checkpoint`` does not fit in ``run_dir`` beside Ray's record,
    or if ``error`` (Ray's upload failing anyway: something else filled the disk meanwhile) says the disk is full.
    Object storage (a URI) has no free-space figure and writes each object whole: not checked."""
    if "://" in run_dir:
        return
    needed = size_of(checkpoint) + RECORD_ROOM
    if (error is not None and is_full(error)) or disk_usage(Path(run_dir)).free < needed:
        raise storage_full(Path(run_dir), f"a checkpoint needs {human(needed)}", FULL_HINT) from error


def _load(path: Path, map_location: torch.device | None = None) -> Any:
    try:
        with torch.serialization.safe_globals(SAFE_GLOBALS):
            return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as error:          # torch raises RuntimeError, EOFError, UnpicklingError, ... for bad files
        first_line = (str(error).splitlines() or [""])[0]       # torch's weights-only errors run to a page
        raise CorruptCheckpoint(f"{path}: {type(error).__name__}: {first_line}") from error


def load(directory: Path, *, rank: int, map_location: torch.device) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The training state and this rank's RNG states (None when the checkpoint has none for this rank).

    Every file of the checkpoint is loaded, not only this rank's: each rank then reaches the same verdict on the
    same checkpoint, so all ranks fall back together instead of resuming from different steps."""
    state_path = directory / STATE_FILE
    if not state_path.is_file():
        raise CorruptCheckpoint(f"{directory}: checkpoint has no {STATE_FILE}")
    state = _load(state_path, map_location)
    missing = {"progress", "model", "optimizer", "scheduler", "scaler", "mlflow_run_id"} - set(state)
    if missing:
        raise CorruptCheckpoint(f"{state_path}: no {', '.join(sorted(missing))} in it")
    rng = {path.name: _load(path) for path in sorted(directory.glob(RNG_GLOB))}
    return state, rng.get(rng_file(rank))


def apply(state: dict[str, Any], rng: dict[str, Any] | None, *, model: torch.nn.Module, optimizer, scheduler,
          scaler) -> tuple[Progress, str | None, bool]:
    """Loads the state into the given objects; returns (progress, mlflow run id, whether this rank's RNG states
    were found — they are not when the run is resumed with more workers than it was saved with)."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    if scaler is not None and state["scaler"] is not None:
        scaler.load_state_dict(state["scaler"])
    if rng is not None:
        set_rng_states(rng)
    return Progress(**state["progress"]), state["mlflow_run_id"], rng is not None


def read(directory: Path, *, rank: int, model: torch.nn.Module, optimizer, scheduler, scaler,
         map_location: torch.device) -> tuple[Progress, str | None, bool]:
    state, rng = load(directory, rank=rank, map_location=map_location)
    return apply(state, rng, model=model, optimizer=optimizer, scheduler=scheduler, scaler=scaler)


def restore(candidates: list, *, rank: int, map_location: torch.device
            ) -> tuple[Any, dict[str, Any], dict[str, Any] | None, list[str]]:
    """The first of ``candidates`` (Ray ``Checkpoint`` objects, newest first) whose files all load: returns it,
    its training state, this rank's RNG states and one line per checkpoint skipped as corrupt."""
    skipped = []
    for checkpoint in candidates:
        with checkpoint.as_directory() as directory:
            try:
                state, rng = load(Path(directory), rank=rank, map_location=map_location)
            except CorruptCheckpoint as error:
                log.warning("rank %d: checkpoint %s cannot be loaded, falling back to the previous one (%s)",
                            rank, checkpoint.path, error)
                skipped.append(f"{checkpoint.path}: {error}")
                continue
        return checkpoint, state, rng, skipped
    raise CorruptCheckpoint("no registered checkpoint of this run can be loaded: " + "; ".join(skipped))
