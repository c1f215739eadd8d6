"""``skipview tune``: hyperparameter search against STS14 (Ray Tune, Optuna TPE, ASHA)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import typer

from skipview.platform import errors, stopping
from skipview.platform.errors import one_line


def tune(
    space: Path = typer.Option(..., exists=True, dir_okay=False, help="search space, e.g. tune_spaces/disc.yaml"),
    corpus: Path = typer.Option(..., exists=True, file_okay=False, help="prepared corpus directory"),
    wordvecs: Optional[Path] = typer.Option(None, exists=True, file_okay=False, help="word-vector directory"),
    num_samples: int = typer.Option(8, min=1, help="trials to run"),
    max_concurrent: Optional[int] = typer.Option(None, min=1, help="trials at once (default: what the cluster's "
                                                                    "CPUs/GPUs fit)"),
    config: Optional[Path] = typer.Option(None, exists=True, dir_okay=False,
                                          help="base training settings (YAML, as for `skipview train --config`): "
                                               "sizes, steps, checkpoint interval; the space overrides its keys"),
    set_: list[str] = typer.Option([], "--set", help="override a base setting: key=value (dotted keys)"),
    senteval_dir: Path = typer.Option(..., envvar="SKIPVIEW_SENTEVAL_DIR", exists=True, file_okay=False,
                                      help="SentEval data/downstream (STS14 is the objective)"),
    workers_per_trial: int = typer.Option(1, min=1, help="Ray Train workers (DDP ranks) per trial"),
    cpus_per_worker: float = typer.Option(1, help="CPUs per Train worker (also its torch threads)"),
    gpus_per_worker: float = typer.Option(0, help="GPUs per Train worker"),
    seed: int = typer.Option(0, help="seeds the TPE sampler and every trial's training"),
    grace_period: Optional[int] = typer.Option(None, min=1, help="steps of the base batch size before ASHA "
                                                                 "may stop a trial (default: two checkpoint intervals); "
                                                                 "ASHA counts sentences, so a trial with another batch "
                                                                 "size gets as many sentences"),
    reduction_factor: int = typer.Option(2, min=2, help="ASHA keeps 1/reduction_factor of trials per rung"),
    address: Optional[str] = typer.Option(None, envvar="RAY_ADDRESS", help="Ray cluster; none starts a local Ray"),
    storage: str = typer.Option("runs", help="Tune and Train storage: a local path or a URI every node reaches"),
    name: Optional[str] = typer.Option(None, help="search name; an existing search of this name is resumed"),
    experiment: str = typer.Option("tune", help="MLflow experiment of the search"),
    best_config: Optional[Path] = typer.Option(None, help="where to write the best settings "
                                                          "(default: STORAGE/NAME/best_config.yaml; ./runs/NAME/ when "
                                                          "STORAGE is a URI)"),
) -> None:
    """Search hyperparameters against STS14: Optuna TPE proposes, ASHA stops weak trials early.

    Each trial is a `skipview train` run (Ray Train, checkpoints, MLflow child run under the search's parent run).
    Run the same command with the same --name to resume an interrupted search. The best settings are written as
    a file that `skipview train --config` accepts.
    """
    from skipview.platform.training import driver, run_log
    from skipview.platform.training.config import load_settings
    from skipview.platform.tuning.search import SearchInterrupted, SearchSettings, run_search
    from skipview.platform.tuning.space import SearchSpaceError, load_space

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        search_space = load_space(space)
        base = load_settings(config, {"objective": search_space.objective, "corpus": str(corpus),
                                      "wordvecs": str(wordvecs) if wordvecs else None,
                                      "senteval_dir": str(senteval_dir)}, set_)
        driver.check_inputs(base, gpus_per_worker)
    except (SearchSpaceError, ValueError) as error:
        raise typer.BadParameter(one_line(error)) from error
    search = SearchSettings(
        name=name or f"tune-{driver.new_run_name(base)}",
        storage=storage, num_samples=num_samples, max_concurrent=max_concurrent,
        workers_per_trial=workers_per_trial, cpus_per_worker=cpus_per_worker, gpus_per_worker=gpus_per_worker,
        seed=seed, grace_period=grace_period, reduction_factor=reduction_factor, experiment=experiment)
    log_path = driver.local_root(storage) / f"{search.name}.log"
    with run_log.capture(log_path, debug=errors.debug) as log:
        driver.connect(address, run_log=log)
        typer.echo(f"search {search.name}: {num_samples} trials of {search_space.objective} "
                   f"({', '.join(k for keys in search_space.searched().values() for k in keys)}); Ray's and the "
                   f"workers' log: {log_path}")
        try:
            outcome = run_search(search_space, base, search, best_config)
        except stopping.Stopped as stop:
            stop.resume_options = () if name else ("--name", search.name)
            raise
        except SearchInterrupted as stopped:
            typer.echo(str(stopped), err=True)
            raise typer.Exit(130) from None
    stopped = sum(t.stopped_early for t in outcome.trials)
    typer.echo(f"done: {len(outcome.trials)} trials ({stopped} stopped early by ASHA); best STS14 "
               f"{outcome.best_sts14:.2f} (trial {outcome.best_trial}); MLflow parent run {outcome.parent_run_id}")
    typer.echo(f"best settings: {outcome.best_config_path}  (skipview train --config {outcome.best_config_path} ...)")
