"""What a checkpoint holds and how it is written and read back.

Rank 0 writes the training state (``state.pt``: model, optimiser, schedule, grad scaler, step, data position,
MLflow run id, best STS14). Every rank writes its own RNG states (``rng-rank<r>.pt``): Ray merges the files of
all workers into one checkpoint directory, and restoring each rank's generators is what makes a resumed CPU run
bit-identical to an uninterrupted one. Files are written aside and renamed, and Ray registers a checkpoint only
once every worker's upload finished, so a crash never leaves a half-written checkpoint behind.
"""

from __future__ import annotations

import os
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

STATE_FILE = "state.pt"
MODEL_DIR = "model"


@dataclass
class Progress:
    step: int = 0            # optimiser steps taken
    epoch: int = 0           # current pass over the corpus
    batch: int = 0           # batches of this epoch already consumed (per rank)
    best_sts14: float | None = None


def rng_file(rank: int) -> str:
    return f"rng-rank{rank}.pt"


def _atomic_save(obj: Any, path: Path) -> None:
    partial = path.with_name(path.name + ".partial")
    torch.save(obj, partial)
    os.replace(partial, path)


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


def read(directory: Path, *, rank: int, model: torch.nn.Module, optimizer, scheduler, scaler,
         map_location: torch.device) -> tuple[Progress, str | None, bool]:
    """Loads the state into the given objects; returns (progress, mlflow run id, whether this rank's RNG states
    were found — they are not when the run is resumed with more workers than it was saved with)."""
    state_path = directory / STATE_FILE
    if not state_path.is_file():
        raise FileNotFoundError(f"{directory}: checkpoint has no {STATE_FILE}")
    # weights_only=False: the file holds optimiser state and Python RNG tuples this code wrote itself.
    state = torch.load(state_path, map_location=map_location, weights_only=False)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    if scaler is not None and state["scaler"] is not None:
        scaler.load_state_dict(state["scaler"])
    rng_path = directory / rng_file(rank)
    if rng_path.is_file():
        set_rng_states(torch.load(rng_path, weights_only=False))
    return Progress(**state["progress"]), state["mlflow_run_id"], rng_path.is_file()
