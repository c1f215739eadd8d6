"""Hyperparameter search with Ray Tune: Optuna TPE proposes, ASHA stops poor trials early on the intermediate
STS14, and every trial is one ``skipview train`` run.

A trial is a *function* that builds and fits a ``TorchTrainer`` (Ray 2.60 refuses ``Tuner(TorchTrainer)``) through
the training driver's own ``build_trainer``, with ``TuneReportCallback`` forwarding rank 0's reports (step, STS14)
to Tune. The trial function itself only waits on the trainer, so it asks for no CPU; Ray refuses a resource
request of ``{"cpu": 0}`` alone, hence the small memory request that comes with it. Concurrency is capped at
what the cluster can place (each trial's Train workers need their CPUs).

MLflow: the search is a parent run (its settings, then the best STS14 and the best configuration as an
artifact); each trial is a child run (``mlflow.parentRunId``) that the training loop itself continues, so it holds
the trial's full settings as params and its STS14 curve. Trials ASHA stopped are marked KILLED and tagged.

Interrupted searches resume: the same ``--name`` restores the Tune experiment (searcher and scheduler state
included) and every unfinished trial refits its ``TorchTrainer`` under the same run name, which Ray Train resumes
from that run's latest checkpoint.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from skipview.platform import stopping
from skipview.platform.tracking import lineage, store
from skipview.platform.training import driver
from skipview.platform.training.config import RunSettings, TrainSettings, absolute_paths
from skipview.platform.files import write_text_aside
from skipview.platform.tuning.space import SearchSpace, apply_trial

log = logging.getLogger(__name__)

METRIC = "sts14"           # reported by the training loop at each checkpoint: mean Pearson x100 over STS14
# ASHA's clock: sentences read (steps x batch x ranks), reported by the loop at each checkpoint. Optimiser steps
# would credit a trial of batch 512 with four times the data of one of batch 128 at every rung, and the search
# would learn only that larger batches read more.
TIME_ATTR = "sentences"
STUDY_TAG = "skipview.study"
SEARCH_TAG = "skipview.search"
TRIAL_TAG = "skipview.tune.trial_id"
STOPPED_TAG = "skipview.tune.stopped_early"
PARENT_TAG = "mlflow.parentRunId"
TRIAL_MEMORY = 256 * 1024**2   # bytes reserved for a trial's driver process (it trains nothing itself)


class SearchInterrupted(RuntimeError):
    """The search stopped before every trial finished (Tune's own SIGUSR1); its state is saved for a resume."""


class TrialStopped(RuntimeError):
    """A trial's run ended at the search's stop, with a checkpoint: unfinished."""


@dataclass(frozen=True)
class SearchSettings:
    name: str
    storage: str
    num_samples: int
    max_concurrent: int | None = None      # None: as many trials as the cluster's CPUs (and GPUs) can place
    workers_per_trial: int = 1
    cpus_per_worker: float = 1
    gpus_per_worker: float = 0
    seed: int = 0
    grace_period: int | None = None        # base-batch steps before ASHA may stop a trial; None: two checkpoints
    reduction_factor: int = 2
    experiment: str = "tune"
    tracking_uri: str | None = None


@dataclass
class TrialSummary:
    trial_id: str
    run_name: str
    config: dict[str, Any]
    last_step: int | None
    last_sentences: int | None
    best_sts14: float | None
    last_sts14: float | None
    stopped_early: bool
    error: str | None = None


@dataclass
class SearchOutcome:
    best_sts14: float
    best_trial: str
    best_config_path: Path
    parent_run_id: str
    trials: list[TrialSummary] = field(default_factory=list)


def trial_run(search: SearchSettings, trial_id: str) -> RunSettings:
    """The training run of one trial: a name unique to the search and trial, so Train storage never collides
    and a resumed trial finds its own checkpoints."""
    return RunSettings(name=f"{search.name}-{trial_id}", storage=search.storage, workers=search.workers_per_trial,
                       cpus_per_worker=search.cpus_per_worker, gpus_per_worker=search.gpus_per_worker,
                       experiment=search.experiment, tracking_uri=search.tracking_uri, max_failures=1)


def sentence_budget(base: TrainSettings, search: SearchSettings) -> int:
    """What every trial reads at most: the base settings' steps at the base batch size, over the trial's ranks."""
    return base.max_steps * base.batch_size * search.workers_per_trial


def trial_settings(base: TrainSettings, config: dict[str, Any]) -> TrainSettings:
    """The base settings with the trial's values. A trial that searches the batch size keeps the base's sentence
    budget and checkpoint spacing in sentences: its steps scale by base batch / its batch, so every trial reaches
    ASHA's rungs (and its own end) having read the same sentences."""
    settings = TrainSettings.model_validate(apply_trial(base.model_dump(mode="json"), config))
    if settings.batch_size == base.batch_size:
        return settings
    scale = base.batch_size / settings.batch_size
    return settings.model_copy(update={"max_steps": max(round(base.max_steps * scale), 1),
                                       "checkpoint_every": max(round(base.checkpoint_every * scale), 1)})


def run_trial(config: dict[str, Any], *, base: dict[str, Any], search: SearchSettings, parent_run_id: str,
              stop_request: str | None = None) -> None:
    """One trial: the base settings with the trial's values, fitted as a TorchTrainer that reports to Tune. A trial
    the search's stop ended (a checkpoint at its next step) fails, so that Tune counts it unfinished and a resumed
    search runs it again, from that checkpoint."""
    from ray import tune
    from ray.tune.integration.ray_train import TuneReportCallback

    from skipview.platform.training.preemption import STOPPED_METRIC

    trial_id = tune.get_context().get_trial_id()
    settings = trial_settings(TrainSettings.model_validate(base), config)
    run = trial_run(search, trial_id)
    # Open the child run here, with the parent link, before the loop does: the loop finds it by run key and
    # continues it, so the trial's params, STS14 curve and model land in one run under the search.
    client = store.client(search.tracking_uri)
    store.open_run(client, search.experiment, driver.run_key(run), run.name,
                   params=settings.model_dump(mode="json"),
                   tags={**driver.tags_for(settings), PARENT_TAG: parent_run_id, STUDY_TAG: "tune",
                         SEARCH_TAG: search.name, TRIAL_TAG: trial_id})
    trainer = driver.build_trainer(settings, run, tracking_uri=search.tracking_uri,
                                   callbacks=[TuneReportCallback()], stop_request=stop_request)
    result = trainer.fit()
    if result.metrics.get(STOPPED_METRIC):
        raise TrialStopped(f"trial {trial_id}: stopped at step {result.metrics['step']} with a checkpoint")


def default_concurrency(search: SearchSettings) -> int:
    """How many trials the cluster can run at once: its CPUs (and GPUs) over one trial's Train workers."""
    import ray

    resources = ray.cluster_resources()
    fits = [resources.get("CPU", 0) / (search.workers_per_trial * search.cpus_per_worker)]
    if search.gpus_per_worker:
        fits.append(resources.get("GPU", 0) / (search.workers_per_trial * search.gpus_per_worker))
    return max(int(min(fits)), 1)


def run_search(space: SearchSpace, base: TrainSettings, search: SearchSettings,
               best_config_path: Path | None = None) -> SearchOutcome:
    """Run (or resume) the search; write the best configuration as a ``skipview train --config`` file."""
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search import ConcurrencyLimiter
    from ray.tune.search.optuna import OptunaSearch

    from skipview.platform.training.preemption import DriverStop

    if base.senteval_dir is None:
        raise ValueError("the search optimises STS14: give the SentEval data directory (--senteval-dir)")
    if base.max_steps is None:
        raise ValueError("ASHA needs the trial length in steps: set max_steps in the base settings")
    if space.objective != base.objective:
        raise ValueError(f"{space.source}: a space for {space.objective!r} cannot tune objective {base.objective!r}")
    search = _resolved(search)
    base = absolute_paths(base).model_copy(update={"seed": search.seed})
    budget = sentence_budget(base, search)
    client = store.client(search.tracking_uri)
    root = search.storage
    parent_id, resumed = store.open_run(
        client, search.experiment, f"tune:{root.rstrip('/')}/{search.name}", search.name,
        params={"space": space.source, "searched": space.searched(), "search": asdict(search),
                "base": base.model_dump(mode="json")},
        tags={STUDY_TAG: "tune", SEARCH_TAG: search.name, "objective": space.objective})
    stop = DriverStop()
    trainable = tune.with_resources(
        tune.with_parameters(run_trial, base=base.model_dump(mode="json"), search=search, parent_run_id=parent_id,
                             stop_request=stop.name),
        {"cpu": 0, "memory": TRIAL_MEMORY})
    path = os.path.join(root, search.name)
    if tune.Tuner.can_restore(path):
        log.info("resuming search %s from %s (MLflow parent run %s)", search.name, path, parent_id)
        tuner = tune.Tuner.restore(path, trainable=trainable, resume_unfinished=True, resume_errored=True)
    else:
        concurrency = search.max_concurrent or default_concurrency(search)
        log.info("search %s: %d trials, at most %d at once", search.name, search.num_samples, concurrency)
        grace_steps = search.grace_period or min(2 * base.checkpoint_every, base.max_steps)
        grace = budget * grace_steps // base.max_steps                   # base-batch steps, in sentences
        tuner = tune.Tuner(
            trainable,
            param_space=space.to_tune(),
            tune_config=tune.TuneConfig(
                metric=METRIC, mode="max", num_samples=search.num_samples, max_concurrent_trials=concurrency,
                # The limiter travels with the searcher's saved state, so a restored search keeps the cap on new
                # suggestions (Tune 2.60 does not restore max_concurrent_trials itself).
                search_alg=ConcurrencyLimiter(OptunaSearch(seed=search.seed), max_concurrent=concurrency),
                scheduler=ASHAScheduler(time_attr=TIME_ATTR, max_t=budget, grace_period=grace,
                                        reduction_factor=search.reduction_factor)),
            run_config=tune.RunConfig(name=search.name, storage_path=root, verbose=1))
    # A stop (SIGTERM, Ctrl-C) first lets every running trial write a checkpoint at its next step, then ends the
    # search the way Tune ends one gracefully, saving its state (its SIGUSR1). Tune's own Ctrl-C handler would end
    # the trials at once, without those checkpoints: it is switched off.
    end_search = partial(os.kill, os.getpid(), signal.SIGUSR1)
    with driver.environment({"TUNE_DISABLE_SIGINT_HANDLER": "1"}), \
            stopping.deferred(partial(stop.on_signal, then=end_search)):
        try:
            results = tuner.fit()
        finally:
            stop.close()
    if stopping.requested() is not None:
        client.set_terminated(parent_id, "KILLED")
        raise stopping.Stopped(stopping.requested(), kept=f"search {search.name}: its state and each running trial's "
                               "checkpoint at its next step (a stopped trial resumes from it)")
    if results.num_terminated + results.num_errors < len(results):
        # Tune returns on Ctrl-C with its state saved; unfinished trials are not results to choose from.
        client.set_terminated(parent_id, "KILLED")
        unfinished = len(results) - results.num_terminated - results.num_errors
        raise SearchInterrupted(f"search {search.name} interrupted with {unfinished} trial(s) unfinished; run the "
                                f"same command with --name {search.name} to resume it")

    trials = [_summarise(result, search, budget) for result in results]
    _close_children(client, search, trials)
    scored = [t for t in trials if t.best_sts14 is not None]
    if not scored:
        client.set_terminated(parent_id, "FAILED")
        errors = "; ".join(f"{t.trial_id}: {t.error}" for t in trials if t.error) or "no trial reported STS14"
        raise RuntimeError(f"search {search.name}: no trial produced a score ({errors})")
    best = max(scored, key=lambda t: t.best_sts14)
    best_settings = trial_settings(base, best.config)
    best_path = best_config_path or driver.local_root(search.storage) / search.name / "best_config.yaml"
    write_settings(best_settings, best_path, f"best of search {search.name}: {METRIC} {best.best_sts14:.2f} "
                                             f"(trial {best.trial_id}, run {best.run_name})")
    summary_path = best_path.with_name(best_path.stem + "_trials.json")
    write_text_aside(summary_path, json.dumps([asdict(t) for t in trials], indent=2, sort_keys=True) + "\n")
    write_text_aside(summary_path.with_suffix(".md"), trials_markdown([asdict(t) for t in trials], budget))
    store.log_metrics(client, parent_id, {"best_sts14": best.best_sts14, "trials": len(trials),
                                          "trials_stopped_early": sum(t.stopped_early for t in trials)}, step=0)
    client.set_tag(parent_id, "best_trial", best.run_name)
    client.log_artifact(parent_id, str(best_path))
    client.log_artifact(parent_id, str(summary_path))
    client.set_terminated(parent_id, "FINISHED")
    return SearchOutcome(best.best_sts14, best.trial_id, best_path, parent_id, trials)


def _resolved(search: SearchSettings) -> SearchSettings:
    """Resolve the store and the storage once on the driver: trials run in other processes and in their own
    working directories, where ``runs`` or ``./mlflow.db`` would mean somewhere else."""
    return replace(search, tracking_uri=search.tracking_uri or store.tracking_uri(),
                   storage=driver.storage_root(search.storage))


def _summarise(result, search: SearchSettings, budget: int) -> TrialSummary:
    metrics = result.metrics or {}
    trial_id = metrics.get("trial_id") or Path(result.path).name
    history = result.metrics_dataframe
    scores = [] if history is None or METRIC not in history else [float(v) for v in history[METRIC].dropna()]
    last_step = int(metrics["step"]) if "step" in metrics else None
    sentences = int(metrics[TIME_ATTR]) if TIME_ATTR in metrics else None
    return TrialSummary(
        trial_id=trial_id, run_name=trial_run(search, trial_id).name, config=result.config,
        last_step=last_step, last_sentences=sentences,
        best_sts14=max(scores) if scores else None, last_sts14=scores[-1] if scores else None,
        stopped_early=result.error is None and sentences is not None and sentences < budget,
        error=None if result.error is None else str(result.error).splitlines()[0])


def _close_children(client, search: SearchSettings, trials: list[TrialSummary]) -> None:
    """A trial ASHA stopped was killed with its trainer, so its MLflow run never closed itself: close it."""
    for trial in trials:
        if not trial.stopped_early and trial.error is None:
            continue
        run_id = store.find_run(client, search.experiment, driver.run_key(trial_run(search, trial.trial_id)))
        if run_id is None:
            continue
        if trial.stopped_early:
            client.set_tag(run_id, STOPPED_TAG, f"step {trial.last_step}")
        found = client.get_run(run_id)
        # still RUNNING, or closed as KILLED by another process that found the trial's process gone (store.py)
        if found.info.status == "RUNNING" or store.ORPHAN_TAG in found.data.tags:
            client.set_terminated(run_id, "KILLED" if trial.stopped_early else "FAILED")


def trials_markdown(trials: list[dict[str, Any]], budget: int) -> str:
    """The trials as a table, best first: searched values, steps and sentences run (ASHA's stops show), best and
    last STS14."""
    keys = sorted({f"{section}.{key}" for t in trials for section, values in t["config"].items() for key in values})
    header = ["trial", *keys, "steps", "sentences", "best STS14", "last STS14", "outcome"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for t in sorted(trials, key=lambda t: -(t["best_sts14"] if t["best_sts14"] is not None else -math.inf)):
        values = [_cell(t["config"].get(k.split(".", 1)[0], {}).get(k.split(".", 1)[1])) for k in keys]
        outcome = ("error: " + t["error"] if t["error"] else
                   f"stopped by ASHA at step {t['last_step']}" if t["stopped_early"] else
                   f"read the whole budget ({budget:,} sentences)")
        lines.append("| " + " | ".join([t["trial_id"], *values, _cell(t["last_step"]), _count(t["last_sentences"]),
                                        _cell(t["best_sts14"]), _cell(t["last_sts14"]), outcome]) + " |")
    return "\n".join(lines) + "\n"


def _count(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 0.01 else f"{value:.2f}"
    return "–" if value is None else str(value)


def write_settings(settings: TrainSettings, path: Path, comment: str) -> None:
    """A ``skipview train --config`` file: every training setting, with a comment saying where it came from. Data
    paths inside a repository are written relative to it (the search resolved them for its trials), so a best
    configuration committed to the repository works from any checkout's root."""
    portable = {key: lineage.portable_path(value) for key in ("corpus", "wordvecs", "senteval_dir")
                if (value := getattr(settings, key))}
    body = yaml.safe_dump(settings.model_copy(update=portable).model_dump(mode="json"), sort_keys=False)
    write_text_aside(path, f"# {comment}\n{body}")
