"""A ``skipview train`` run read back from its folder and its MLflow record, long after (or while) it trained: what
``skipview heldout``, ``skipview export checkpoint`` and a study's rows trained outside the study read.

Where each piece comes from. The checkpoints are those Ray's snapshot registers (``run_folder.py``: an upload a
crash cut is in no record), each holding the weights, the run's progress and the id of its MLflow run
(``checkpoint.py``). The run's settings are that MLflow run's params (``config.recorded_settings``): the model, the
training corpus whose vocabulary the weights are indexed by, the batch size. The workers are the RNG files of the
latest checkpoint (one per rank). The hours trained are the loop's throughput windows (``store.trained_hours``), so a
pause between a stopped run and its resume is not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from mlflow.exceptions import MlflowException

from skipview.models.skipthought.config import SkipThoughtConfig
from skipview.platform.tracking import store
from skipview.platform.training import checkpoint as ckpt
from skipview.platform.training.config import TrainSettings, recorded_settings
from skipview.platform.training.objectives import Built, build
from skipview.platform.training.run_folder import CHECKPOINT_GLOB, SNAPSHOT, readable, registered_names

CPU = torch.device("cpu")


def kept_checkpoints(run_dir: Path) -> list[Path]:
    """The run's checkpoint folders its Ray snapshot registers, oldest first (their names are their times)."""
    snapshot = run_dir / SNAPSHOT
    if not snapshot.is_file():
        raise FileNotFoundError(f"{snapshot}: no such file: {run_dir} is not a run folder (STORAGE/NAME of "
                                "`skipview train`) or has no checkpoint yet")
    text = readable(snapshot)
    if text is None:
        raise ValueError(f"{snapshot}: empty or cut (a full disk?); `skipview train` on the same name repairs it")
    folders = sorted(run_dir / name for name in registered_names(text)
                     if Path(name).match(CHECKPOINT_GLOB) and (run_dir / name).is_dir())
    if not folders:
        raise ValueError(f"{snapshot}: registers no checkpoint folder that is still in {run_dir}")
    return folders


def progress_of(folder: Path) -> ckpt.Progress:
    state, _ = ckpt.load(folder, rank=0, map_location=CPU)
    return ckpt.Progress(**state["progress"])


@dataclass(frozen=True)
class RecordedRun:
    folder: Path
    checkpoints: list[Path]             # kept, oldest first
    mlflow_run_id: str
    status: str                         # the MLflow run's: RUNNING, KILLED (stopped, resumable), FINISHED, FAILED
    settings: TrainSettings
    params: dict[str, str]              # the MLflow params the settings were read from
    latest: ckpt.Progress               # where the latest kept checkpoint stands
    workers: int
    client: Any

    @classmethod
    def open(cls, folder: Path, tracking_uri: str) -> RecordedRun:
        checkpoints = kept_checkpoints(folder)
        state, _ = ckpt.load(checkpoints[-1], rank=0, map_location=CPU)
        run_id = state["mlflow_run_id"]
        if run_id is None:
            raise ValueError(f"{checkpoints[-1] / ckpt.STATE_FILE}: names no MLflow run, where the run's settings are")
        client = store.client(tracking_uri)
        try:
            recorded = client.get_run(run_id)
        except MlflowException:
            raise ValueError(f"{checkpoints[-1] / ckpt.STATE_FILE}: names MLflow run {run_id}, which {tracking_uri} "
                             "does not hold (--tracking-uri, MLFLOW_TRACKING_URI)") from None
        params = recorded.data.params
        return cls(folder, checkpoints, run_id, recorded.info.status, recorded_settings(params), params,
                   ckpt.Progress(**state["progress"]), len(list(checkpoints[-1].glob(ckpt.RNG_GLOB))), client)

    def require_skipthought(self, why: str) -> None:
        if not isinstance(self.settings.objective_settings, SkipThoughtConfig):
            raise ValueError(f"{self.folder}: a {self.settings.objective} run (MLflow run {self.mlflow_run_id}); "
                             f"{why}")

    @property
    def sentences_per_step(self) -> int:
        """Sentences encoded per optimiser step: the batch on each worker (the middle of a triple, the first of a
        pair, a window: one sentence per example)."""
        return self.settings.batch_size * self.workers

    def hours(self) -> dict[int, float]:
        """Hours trained at the end of each throughput window, by its last step (``store.trained_hours``)."""
        return store.trained_hours(self.client, self.mlflow_run_id, self.sentences_per_step)

    def checkpoint_at(self, step: int | None) -> Path:
        """The kept checkpoint at optimiser step ``step``; the latest for None."""
        if step is None:
            return self.checkpoints[-1]
        steps = {progress_of(folder).step: folder for folder in self.checkpoints}
        if step not in steps:
            raise ValueError(f"{self.folder}: no kept checkpoint at step {step} (kept: "
                             f"{', '.join(str(s) for s in sorted(steps))})")
        return steps[step]

    def build(self, wordvecs: str | Path | None = None) -> Built:
        """The run's objective, untrained, on its training corpus; with ``wordvecs`` (aligned with that corpus's
        vocabulary, else a one-line error naming them) for the export of a skip-thought encoder with vocabulary
        expansion, which is all skip-thought reads them for."""
        return build(self.settings.model_copy(update={"wordvecs": None if wordvecs is None else str(wordvecs)}))

    @staticmethod
    def load(folder: Path, built: Built) -> ckpt.Progress:
        """Load the weights of the checkpoint ``folder`` into ``built``'s objective; where it stands in training."""
        state, _ = ckpt.load(folder, rank=0, map_location=CPU)
        try:
            built.objective.load_state_dict(state["model"])
        except RuntimeError as error:
            raise ValueError(f"{folder / ckpt.STATE_FILE}: its weights are not those of the model the run's settings "
                             f"describe ({str(error).splitlines()[0]})") from None
        return ckpt.Progress(**state["progress"])
