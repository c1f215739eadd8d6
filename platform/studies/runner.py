"""The study runner (``skipview study run``): train every cell of a study's matrix for each seed through the training
driver (a row trained outside the study is evaluated, never trained: ``external.py``), evaluate every view of every
model, and record it all in the study's MLflow experiment.

A study is resumable: a (cell, seed) whose MLflow run is finished and evaluated is skipped, an unfinished one is
refitted under the same Train run name and so resumes from its last checkpoint. Each run carries the tags the
MLflow UI's compare view groups by (objective, views, invertible, seed, cell) and logs each view's evaluation as
``<view>/<metric>`` plus ``train/hours`` and ``train/sentences_seen`` (the report's contract, see ``matrix``).
The compare view's axes are params and metrics only, so the identity is also logged as params (``matrix.cell``,
``matrix.views``, ``matrix.invertible``, ``matrix.seed``), and each report column of the run's summary view
(``summary/sts_avg``, ``summary/binary_avg``, ...) as a metric. The view's plot starts on the first three params that differ between
the runs, sorted by name: everything else a run records goes under ``train.`` (a trained model's settings, a
combined row's parts) or ``reference.`` (a baseline's encoder and vectors), so those three are the matrix.
An MLflow run is named ``<cell>-seed<k>`` (its experiment names the study) and logs its corpus and word vectors as
datasets; the study's runs page is grouped by cell in the view ``mlflow_view`` saves as the study starts.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from skipview.models import registry
from skipview.models.encoder import SentenceEncoder
from skipview.platform.evaluation.baselines import AverageEncoder, WordVectors
from skipview.platform.evaluation.datasets import TaskDataError, load_task
from skipview.platform.evaluation.encoding import CombinedEncoder, ModelEncoder
from skipview.platform.tracking import store
from skipview.platform.tracking.lineage import lineage_tags
from skipview.platform.studies import external, mlflow_view
from skipview.platform.training import driver
from skipview.platform.training.config import (BUDGET_KEYS, RunSettings, TrainSettings, absolute_paths, set_dotted,
                                               settings_tree)
from skipview.platform.studies.matrix import (EVALUATED_TAG, HOURS, SENTENCES_SEEN, SUMMARY, TRAIN_PARAMS, Cell,
                                             Matrix, PlannedRun, metric_key, plan)

log = logging.getLogger(__name__)

# The evaluation behind the report's columns (tasks without data in the SentEval directory are skipped).
REPORT_TASKS = ("sts12", "sts13", "sts14", "sts15", "sts16", "sickr_unsup", "sickr", "stsb",
                "mr", "cr", "subj", "mpqa", "sst2", "mrpc")


class Plan(BaseModel):
    """How a study's runs are made, evaluated and laid out: the keys a study file shares with the runner, defined
    once here (the study file adds its question, rows and analyses; ``StudySettings`` where and under which name)."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    seeds: int = Field(3, ge=1)
    references: bool = True
    tasks: tuple[str, ...] = REPORT_TASKS
    protocol: Literal["full", "fast"] = "full"
    # where every row's top component is fitted (evaluation.encoding)
    component_fit: Literal["subset", "subset-stacked", "subset-sides", "task"] = "subset"
    workers: int = Field(1, ge=1)
    cpus_per_worker: float = Field(1, gt=0)
    gpus_per_worker: float = Field(0, ge=0)
    warm_start: str | None = None           # a shorter study of the same models to continue from (warm_start())


class StudySettings(Plan):
    name: str                               # prefix of every Train run name of the study
    storage: str
    experiment: str = "ablation"
    first_seed: int = Field(0, ge=0)        # a study split over machines: each takes its own range of seeds
    tracking_uri: str | None = None


def load_base(config_file: str | Path | None, base: dict[str, Any], overrides: list[str],
              typed: dict[str, Any] | None, matrix: Matrix, references: bool) -> tuple[TrainSettings, Matrix]:
    """A study's base settings (``load_settings``'s layers for its first cell's objective) and its matrix with the
    base's objective settings shared out to its rows (``share_objective_settings``): the base's objective settings
    are no one objective's, so each row's are typed with the row's (``cell_settings``)."""
    tree = settings_tree(config_file, {"objective": matrix.cells[0].objective, **base}, overrides, typed)
    shared = tree.pop("objective_settings", {})
    return absolute_paths(TrainSettings.model_validate(tree)), share_objective_settings(matrix, shared, references)


def share_objective_settings(matrix: Matrix, shared: dict[str, Any], references: bool) -> Matrix:
    """``matrix`` whose trained rows take, under their own settings, the base objective settings their objective
    has (a shared ``hidden_size`` applies to all; skip-thought ignores ``context_window``). A key that no trained
    row's objective has is a typo (``hidden_sise``), not a setting to leave out quietly: an error."""
    trained = [c for c in [*matrix.cells, *(matrix.references if references else [])] if c.objective]
    known = {key for c in trained for key in registry.config_class(c.objective).model_fields}
    unknown = sorted(set(shared) - known)
    if unknown:
        raise ValueError(f"objective_settings: {', '.join(unknown)} is a setting of none of the matrix's objectives "
                         f"(known: {', '.join(sorted(known))})")

    def with_shared(cell: Cell) -> Cell:
        if cell.objective is None:
            return cell
        fields = registry.config_class(cell.objective).model_fields
        dropped = sorted(set(shared) - set(fields))
        if dropped:
            log.info("%s: base objective settings not used by %s: %s", cell.name, cell.objective, ", ".join(dropped))
        own = {key: value for key, value in shared.items() if key in fields}
        return cell.model_copy(update={"settings": {**own, **cell.settings}})

    return matrix.model_copy(update={"cells": [with_shared(c) for c in matrix.cells],
                                     "references": [with_shared(c) for c in matrix.references]})


def cell_settings(base: TrainSettings, cell: Cell, seed: int) -> TrainSettings:
    """The base settings for ``cell``: its objective and settings (the base's shared ones among them,
    ``share_objective_settings``), its training overrides (``train``) and the seed; the cell's objective settings
    are parsed here, once, by its objective's config class."""
    tree = base.model_dump()
    if tree["objective_settings"]:          # they would be replaced by the cell's: never dropped without a word
        raise ValueError("the base's objective settings are shared out to the matrix's rows first "
                         "(share_objective_settings), not applied to a cell of another objective")
    tree.update(objective=cell.objective, objective_settings=dict(cell.settings), seed=seed)
    for key, value in cell.train.items():
        set_dotted(tree, key, value)
    return TrainSettings.model_validate(tree)


def available_tasks(tasks: tuple[str, ...], senteval_dir: str) -> list[str]:
    """The tasks whose files are in ``senteval_dir``; a task with a malformed file is an error, not skipped."""
    found = []
    for task in tasks:
        try:
            load_task(task, senteval_dir)
        except TaskDataError as error:
            if ": missing file " not in str(error):
                raise
            log.info("task %s skipped: %s", task, error)
            continue
        found.append(task)
    return found


def evaluate_views(encoder, views: dict[str, str], tasks: list[str], senteval_dir: str, protocol: str,
                   component_fit: str) -> dict[str, float]:
    from skipview.platform.evaluation.suite import run_tasks

    metrics: dict[str, float] = {}
    for view in views:
        start = time.perf_counter()
        # a baseline has one representation (its only view is "ensemble"); a SentenceEncoder is asked per view
        one = ModelEncoder(encoder, view, component_fit) if hasattr(encoder, "view_names") else encoder
        results = run_tasks(one, tasks, senteval_dir, protocol)
        metrics.update({metric_key(view, k): v for k, v in results.items()})
        log.info("view %s evaluated in %.0f s", view, time.perf_counter() - start)
    return metrics


def run_study(matrix: Matrix, base: TrainSettings, study: StudySettings,
              after_each: Callable[[], None] | None = None,
              recorded: Collection[tuple[str, int]] = ()) -> list[dict[str, Any]]:
    """Train and evaluate every planned run not yet recorded; return one record per planned run. ``after_each`` is
    called once each new run is evaluated (a study file's runner writes the run's record and report then);
    ``recorded``: (cell, seed) pairs whose committed run record already stands for them (trained elsewhere)."""
    if base.senteval_dir is None:
        raise ValueError("the ablation evaluates every model: give the SentEval data directory (--senteval-dir)")
    study = study.model_copy(update={"tracking_uri": study.tracking_uri or store.tracking_uri()})
    base = absolute_paths(base)                  # Train workers run in their own working directories
    client = store.client(study.tracking_uri)
    tasks = available_tasks(study.tasks, base.senteval_dir)
    if not tasks:
        raise ValueError(f"{base.senteval_dir}: none of the tasks {', '.join(study.tasks)} has data there")
    store.experiment_id(client, study.experiment)          # created now, so its view and link can be given now
    for line in mlflow_view.links(client, study.experiment, matrix):
        log.info("%s", line)
    records = []
    planned = plan(matrix, study.seeds, study.references, study.first_seed)
    recorded = standing_records(planned, recorded)
    for index, planned_run in enumerate(planned, 1):
        log.info("[%d/%d] %s", index, len(planned), planned_run.run_name)
        if (planned_run.cell.name, planned_run.seed) in recorded:
            log.info("%s: its committed run record stands for it; skipped", planned_run.run_name)
            records.append({"run": planned_run.run_name, "mlflow_run_id": None, "skipped": True})
            continue
        records.append(_run_one(client, planned_run, base, study, tasks, matrix))
        if after_each is not None and not records[-1]["skipped"]:
            after_each()
    return records


def standing_records(planned: list[PlannedRun], recorded: Collection[tuple[str, int]]) -> set[tuple[str, int]]:
    """The (cell, seed) pairs a committed record may stand for. A combined row is computed from its parts' models,
    which must be on this machine: a part that only a record stands for (trained on another machine) is trained
    here again when its combined row is still to be made."""
    needed = {(part.split("/")[0], run.seed) for run in planned
              if run.cell.combine and (run.cell.name, run.seed) not in recorded for part in run.cell.combine}
    return set(recorded) - needed


def model_dir(study: StudySettings, cell: Cell, seed: int) -> Path:
    """Where the model of (cell, seed) is: the directory a row trained outside the study names, else its Train run's
    output."""
    return external.model_dir(cell, seed) if cell.run else Path(train_run(study, cell.name, seed).output)


def train_run(study: StudySettings, cell: str, seed: int) -> RunSettings:
    """The Train run of one (cell, seed) of the study, with the model directory it leaves behind."""
    name = PlannedRun.name_of(cell, seed)
    return RunSettings(name=f"{study.name}-{name}", storage=study.storage, workers=study.workers,
                       cpus_per_worker=study.cpus_per_worker, gpus_per_worker=study.gpus_per_worker,
                       experiment=study.experiment, tracking_uri=study.tracking_uri,
                       output=str(driver.local_root(study.storage) / study.name / "models" / name))


# A warm-started run may change only the budget (BUDGET_KEYS): anything else differing means the continued run is
# not the longer run it would be recorded as.
WARM_START_TAG = "skipview.warm_start_from"


@dataclass(frozen=True)
class WarmStart:
    """Where a warm-started run begins: the shorter study's run of the same (cell, seed)."""
    run_id: str
    directory: Path                         # its Ray run directory
    metric_keys: tuple[str, ...]
    hours: float                            # its training time, part of the continued run's cost


def warm_start_source(client, study: StudySettings, cell: str, seed: int, settings: TrainSettings) -> WarmStart:
    """The same (cell, seed) in the shorter study ``study.warm_start``, checked to be a shorter run of exactly these
    settings; called before this run is opened, so a refused warm start records nothing."""
    source = train_run(study.model_copy(update={"name": study.warm_start}), cell, seed)
    source_id = store.find_run(client, None, driver.run_key(source))
    if source_id is None:
        raise ValueError(f"--warm-start {study.warm_start}: no recorded run {source.name} under {study.storage}")
    recorded = client.get_run(source_id).data
    if EVALUATED_TAG not in recorded.tags:
        raise ValueError(f"--warm-start {study.warm_start}: run {source.name} has not finished")
    if driver.is_uri(study.storage):
        raise ValueError("--warm-start copies Ray run directories: it needs a local --storage")
    _check_longer(settings, recorded.params, source.name, study.warm_start)
    return WarmStart(source_id, Path(driver.storage_root(study.storage)) / source.name, tuple(recorded.metrics),
                     recorded.metrics.get(HOURS, 0.0))


def warm_start(client, source: WarmStart, target: Path, run_id: str) -> None:
    """Begin the run ``run_id``, whose Ray run directory is ``target``, where ``source`` ended: copy the source's
    run directory, from which the loop resumes as from its own last checkpoint (weights, optimiser, data position,
    RNG state), and its training curves into this run's MLflow history. With a constant learning rate that is the
    longer run, less the steps already trained. Nothing to do when an earlier, interrupted attempt made the copy."""
    if target.exists():
        return
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source.directory, partial)
    # the training curves (loss, STS14, ...: logged over steps), not the source's own step-0 records (its
    # evaluation, its hours); curves first, as the loop logs from the step after the last "loss" it finds
    histories = [client.get_metric_history(source.run_id, key) for key in source.metric_keys]
    store.log_metric_steps(client, run_id, [(m.step, {m.key: m.value}) for history in histories
                                            if any(m.step > 0 for m in history) for m in history])
    client.set_tag(run_id, WARM_START_TAG, source.run_id)
    partial.rename(target)                  # the copy counts only once it is whole
    log.info("%s: continues %s (MLflow run %s)", target.name, source.directory.name, source.run_id)


def _check_longer(settings: TrainSettings, source_params: dict[str, str], source: str, study: str) -> None:
    if settings.optimizer.schedule != "constant":
        raise ValueError(f"--warm-start {study}: optimizer.schedule={settings.optimizer.schedule} decays over the "
                         "whole run, so a continued run is not the longer run; it needs a constant schedule")
    planned = store.param_strings({TRAIN_PARAMS: settings.model_dump(mode="json")})
    defaults = store.param_strings({TRAIN_PARAMS: TrainSettings.model_construct(
        objective=settings.objective, corpus=settings.corpus).model_dump(mode="json")})
    prefix = f"{TRAIN_PARAMS}."
    if not any(key.startswith(prefix) for key in source_params):     # recorded before settings moved under train.*
        source_params = {prefix + key: value for key, value in source_params.items()
                         if key.split(".")[0] in TrainSettings.model_fields}
    recorded = {key: value for key, value in source_params.items() if key.startswith(prefix)}
    changes = store.settings_changes(recorded, planned, defaults, may_differ=BUDGET_KEYS)
    if changes:
        raise ValueError(f"--warm-start {study}: {source} was trained with other settings ({changes}); only "
                         + " / ".join(BUDGET_KEYS) + " may change")
    for key in (prefix + key for key in BUDGET_KEYS):
        old, new = recorded.get(key, "None"), planned[key]
        if old != "None" and (new == "None" or int(new) < int(old)):
            raise ValueError(f"--warm-start {study}: {key} {new} does not extend {source}'s {old}")


def summary_metrics(columns, planned: PlannedRun, metrics: dict[str, float]) -> dict[str, float]:
    """One number per report column (``summary/sts_avg``, ``summary/binary_avg``, ...) for the run's summary view:
    what the MLflow compare view plots against the identity params. Namespaced: a column named like one of the
    loop's curves (``sts14``) would otherwise be shadowed by the curve's later steps in the run's latest values."""
    values = {f"{SUMMARY}/{column.name}": column.value(planned.summary_view, metrics)[0] for column in columns}
    return {name: value for name, value in values.items() if value is not None}


def _combined_parts(client, study: StudySettings, matrix: Matrix, cell: Cell, seed: int):
    """The encoders (and views) a combined row ensembles, with the summed training cost of their runs."""
    parts, cost = [], {HOURS: 0.0, SENTENCES_SEEN: 0.0}
    cells = {c.name: c for c in matrix.cells}
    for part in cell.combine:
        name, view = part.split("/")
        run = train_run(study, name, seed)
        run_id = store.find_run(client, study.experiment, driver.run_key(run))
        recorded = client.get_run(run_id) if run_id else None
        if recorded is None or EVALUATED_TAG not in recorded.data.tags:
            raise RuntimeError(f"{cell.name}: its part {part} (run {run.name}) has not been trained and evaluated")
        parts.append(ModelEncoder(SentenceEncoder.load(model_dir(study, cells[name], seed)), view,
                                  study.component_fit))
        for key in cost:
            cost[key] += recorded.data.metrics[key]
    return CombinedEncoder(parts, concatenate=cell.ensemble == "concatenation"), cost


def _run_one(client, planned: PlannedRun, base: TrainSettings, study: StudySettings, tasks: list[str],
             matrix: Matrix) -> dict[str, Any]:
    cell = planned.cell
    run = train_run(study, cell.name, planned.seed)
    key = driver.run_key(run)
    existing = store.find_run(client, study.experiment, key)
    if existing is not None and EVALUATED_TAG in client.get_run(existing).data.tags:
        log.info("%s: already trained and evaluated (MLflow run %s); skipped", run.name, existing)
        return {"run": run.name, "mlflow_run_id": existing, "skipped": True}

    if cell.combine is not None:
        encoder, metrics = _combined_parts(client, study, matrix, cell, planned.seed)
        run_id, _ = store.open_run(client, study.experiment, key, planned.run_name,
                                   params={**planned.identity, f"{TRAIN_PARAMS}.parts": cell.combine,
                                           f"{TRAIN_PARAMS}.ensemble": cell.ensemble},
                                   tags={**lineage_tags(base.corpus, base.wordvecs), **planned.tags})
    elif cell.baseline is not None:
        if base.wordvecs is None:
            raise ValueError(f"{cell.name}: the {cell.baseline} baseline needs word vectors (--wordvecs)")
        run_id, _ = store.open_run(client, study.experiment, key, planned.run_name,
                                   params={**planned.identity, "reference.baseline": cell.baseline,
                                           "reference.wordvecs": base.wordvecs},
                                   tags={**lineage_tags(base.corpus, base.wordvecs), **planned.tags})
        if study.component_fit == "corpus":
            raise ValueError(f"{cell.name}: component_fit 'corpus' is for trained models; compare baselines and "
                             "models with 'task' or 'subset'")
        encoder = AverageEncoder(WordVectors.load(base.wordvecs), cell.baseline, component_fit=study.component_fit)
        metrics = {HOURS: 0.0, SENTENCES_SEEN: 0.0}
    elif cell.run is not None:
        trained = external.finished(cell, planned.seed, study.tracking_uri)      # checked before anything is recorded
        run_id, resumed = store.open_run(client, study.experiment, key, planned.run_name,
                                         params={**planned.identity, TRAIN_PARAMS: trained.settings, **trained.params},
                                         tags={**trained.tags, **planned.tags})
        if not resumed:             # its training curves, once: what the report's curves read of a trained cell
            store.log_metric_steps(client, run_id, trained.curves)
        encoder, metrics = trained.model, dict(trained.cost)
    else:
        settings = cell_settings(base, cell, planned.seed)
        source = warm_start_source(client, study, cell.name, planned.seed, settings) if study.warm_start else None
        # Open the run with the study's tags before the loop does; the loop finds it by run key and continues it.
        run_id, _ = store.open_run(client, study.experiment, key, planned.run_name,
                                   params={**planned.identity, TRAIN_PARAMS: settings.model_dump(mode="json")},
                                   tags={**driver.tags_for(settings), **planned.tags})
        if source is not None:
            warm_start(client, source, Path(driver.storage_root(study.storage)) / run.name, run_id)
        start = time.perf_counter()
        outcome = driver.train(settings, run)
        took = (time.perf_counter() - start) / 3600
        # sentences encoded per step: the batch on each worker (a window, the first of a pair, or the middle of a
        # triple is one sentence per example)
        sentences_per_step = settings.batch_size * study.workers
        # a warm-started run's history begins with its source's curves, whose training time is source.hours
        windows = store.trained_hours(client, run_id, sentences_per_step)
        hours = source.hours + took if source else (max(windows.values(), default=0.0) or took)
        encoder = SentenceEncoder.load(outcome.model_dir)
        steps = int(outcome.metrics.get("step", settings.max_steps or 0))
        metrics = {HOURS: hours, SENTENCES_SEEN: float(steps * sentences_per_step)}
    start = time.perf_counter()
    metrics.update(evaluate_views(encoder, cell.views, tasks, base.senteval_dir, study.protocol,
                                  study.component_fit))
    # the summary first: the compare view's plot starts on the first metric every selected run has, in the order
    # the first run recorded them
    metrics = {**summary_metrics(matrix.columns, planned, metrics), **metrics}
    store.log_metrics(client, run_id, metrics, step=0)
    client.set_tag(run_id, "eval.protocol", study.protocol)
    client.set_tag(run_id, "eval.component_fit", study.component_fit)
    client.set_tag(run_id, "eval.tasks", ",".join(tasks))
    client.set_tag(run_id, "eval.seconds", f"{time.perf_counter() - start:.0f}")
    client.set_tag(run_id, EVALUATED_TAG, "true")
    client.set_terminated(run_id, "FINISHED")
    return {"run": run.name, "mlflow_run_id": run_id, "skipped": False}
