"""A study's rows trained outside it: a model that ``skipview train`` trained over hours, across sessions (stopped
and resumed by the same command), longer than one ``skipview study run`` could hold (issue 57's skip-thought runs).

The row names the run's folder and the model directory to evaluate, per seed (``matrix.Cell.run``, ``model``).
The runner evaluates the model like a trained cell's and records what the run cost from the run's own record, read
as ``skipview heldout`` reads it (``recorded_run.py``): the hours its throughput windows add up to
(``store.trained_hours``), and the sentences seen, its last step x batch size x workers. It never trains: a run still
training, stopped, or failed is refused, as are a missing folder or model directory, a run of another model than
the row's, and a model exported (``skipview export checkpoint``) from another run or from a checkpoint before its
end; each in one line, before the study records anything of the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skipview.models import registry
from skipview.models.encoder import CONFIG, SentenceEncoder
from skipview.platform.studies.curves import curve_keys
from skipview.platform.studies.matrix import HOURS, SENTENCES_SEEN, Cell
from skipview.platform.tracking.lineage import HARDWARE_TAG, lineage_tags, portable_path

if TYPE_CHECKING:
    from skipview.platform.training.recorded_run import RecordedRun

EXTERNAL_PARAMS = "external"        # the run's params external.run, external.model, external.mlflow_run_id


@dataclass(frozen=True)
class External:
    """One seed of a row trained outside the study, checked and ready to evaluate and record."""
    model: SentenceEncoder
    cost: dict[str, float]                          # HOURS, SENTENCES_SEEN
    settings: dict[str, Any]                        # the run's training settings, as a trained cell records its own
    params: dict[str, str]                          # where it came from (EXTERNAL_PARAMS)
    tags: dict[str, str]                            # its lineage: data, code, and what it trained on
    curves: list[tuple[int, dict[str, float]]]      # its STS14 during training, (step, {key: value})


def model_dir(cell: Cell, seed: int) -> Path:
    return Path(cell.model.format(seed=seed))


def finished(cell: Cell, seed: int, tracking_uri: str) -> External:
    # a run is read back through Ray's snapshot and MLflow: `skipview study index` imports the runner and neither
    from skipview.platform.export.checkpoint import exported_from
    from skipview.platform.training.recorded_run import RecordedRun

    folder, directory = Path(cell.run.format(seed=seed)), model_dir(cell, seed)
    where = f"{cell.name}, seed {seed}"
    if not folder.is_dir():
        raise FileNotFoundError(f"{where}: no run folder {folder} (the `skipview train` run the row names)")
    if not (directory / CONFIG).is_file():
        raise FileNotFoundError(f"{where}: no model directory {directory} (the run's --output, or `skipview export "
                                f"checkpoint {folder} {directory}`)")
    run = RecordedRun.open(folder, tracking_uri)
    if run.status != "FINISHED":
        raise ValueError(f"{where}: run {folder} (MLflow run {run.mlflow_run_id}) has not finished: {run.status}, "
                         f"its latest checkpoint at step {run.latest.step}; `skipview train` ends it (the same command "
                         "resumes it)")
    _check_model_of(cell, run, folder)
    model = SentenceEncoder.load(directory)
    source = exported_from(model)
    if source is not None and (source["mlflow_run_id"], source["step"]) != (run.mlflow_run_id, run.latest.step):
        raise ValueError(f"{where}: {directory} was exported from step {source['step']} of MLflow run "
                         f"{source['mlflow_run_id']}, not from the end of {folder} (step {run.latest.step} of "
                         f"{run.mlflow_run_id}): export its latest checkpoint again")
    recorded = run.client.get_run(run.mlflow_run_id).data
    histories = [run.client.get_metric_history(run.mlflow_run_id, key) for key in curve_keys(recorded.metrics)]
    wordvecs = source and source["wordvecs"]
    return External(
        model, {HOURS: max(run.hours().values(), default=0.0),
                SENTENCES_SEEN: float(run.latest.step * run.sentences_per_step)},
        run.settings.model_dump(mode="json"),
        {f"{EXTERNAL_PARAMS}.run": portable_path(folder), f"{EXTERNAL_PARAMS}.model": portable_path(directory),
         f"{EXTERNAL_PARAMS}.mlflow_run_id": run.mlflow_run_id},
        {**lineage_tags(run.settings.corpus, wordvecs),
         **({HARDWARE_TAG: recorded.tags[HARDWARE_TAG]} if HARDWARE_TAG in recorded.tags else {})},
        [(point.step, {point.key: point.value}) for history in histories for point in history])


def _check_model_of(cell: Cell, run: RecordedRun, folder: Path) -> None:
    """The run trained the row's model: its objective, and each objective setting the row gives."""
    recorded = run.settings.objective_settings
    if run.settings.objective != cell.objective:
        raise ValueError(f"{cell.name}: run {folder} trained a {run.settings.objective} model, the row names "
                         f"{cell.objective}")
    wanted = registry.parse_config(cell.objective, cell.settings)
    differing = [f"{key} {getattr(recorded, key)!r}, the row's {getattr(wanted, key)!r}" for key in cell.settings
                 if getattr(recorded, key) != getattr(wanted, key)]
    if differing:
        raise ValueError(f"{cell.name}: run {folder} trained with {'; '.join(differing)}")
