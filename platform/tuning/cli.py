"""``skipview tune`` (hyperparameter search against STS14: Ray Tune, Optuna TPE, ASHA) and ``skipview ablation``
(the multi-view paper's Table 6 matrix, recorded in MLflow, reported as a table, a chart and DVC metrics)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import typer

from skipview.platform import errors
from skipview.platform.errors import one_line
from skipview.platform.files import write_text_aside
from skipview.platform.tracking import store


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
        except SearchInterrupted as stopped:
            typer.echo(str(stopped), err=True)
            raise typer.Exit(130) from None
    stopped = sum(t.stopped_early for t in outcome.trials)
    typer.echo(f"done: {len(outcome.trials)} trials ({stopped} stopped early by ASHA); best STS14 "
               f"{outcome.best_sts14:.2f} (trial {outcome.best_trial}); MLflow parent run {outcome.parent_run_id}")
    typer.echo(f"best settings: {outcome.best_config_path}  (skipview train --config {outcome.best_config_path} ...)")


def ablation(
    corpus: Path = typer.Option(..., exists=True, file_okay=False, help="prepared corpus directory"),
    wordvecs: Path = typer.Option(..., exists=True, file_okay=False, help="word-vector directory"),
    senteval_dir: Path = typer.Option(..., envvar="SKIPVIEW_SENTEVAL_DIR", exists=True, file_okay=False,
                                      help="SentEval data/downstream (tasks without files there are skipped)"),
    config: Optional[Path] = typer.Option(None, exists=True, dir_okay=False,
                                          help="base training settings (YAML, as for `skipview train --config`); "
                                               "objective_settings keys apply to the objectives that have them"),
    set_: list[str] = typer.Option([], "--set", help="override a base setting: key=value (dotted keys)"),
    seeds: int = typer.Option(3, min=1, help="seeds per cell (mean +- std in the report)"),
    first_seed: int = typer.Option(0, min=0, help="first seed: run seeds first_seed .. first_seed + seeds - 1 (split "
                                                  "a study over several machines or processes; one report)"),
    references: bool = typer.Option(False, help="also train skip-thought and evaluate the fastText avg/WR/SIF "
                                                 "baselines"),
    matrix: Optional[Path] = typer.Option(None, exists=True, dir_okay=False,
                                          help="matrix file (default: the paper's Table 6, platform/tuning/ablation.yaml)"),
    cells: Optional[str] = typer.Option(None, help="comma-separated rows of the matrix to run (cells, combined and "
                                                   "reference rows; with their claims); default: every row"),
    protocol: str = typer.Option("full", help="evaluation protocol: full (SentEval, 10-fold) or fast (5-fold)"),
    component_fit: str = typer.Option("subset", help="where every row's top principal component is fitted: subset "
                                                     "(each STS subset), subset-stacked, subset-sides or task (see "
                                                     "`skipview evaluate --help`)"),
    tasks: Optional[str] = typer.Option(None, help="comma-separated evaluation tasks (default: every task behind "
                                                   "the report's columns; tasks without data are skipped)"),
    workers: int = typer.Option(1, min=1, help="Ray Train workers per model"),
    cpus_per_worker: float = typer.Option(1, help="CPUs per Train worker"),
    gpus_per_worker: float = typer.Option(0, help="GPUs per Train worker"),
    address: Optional[str] = typer.Option(None, envvar="RAY_ADDRESS", help="Ray cluster; none starts a local Ray"),
    storage: str = typer.Option("runs", help="checkpoint storage: a local path or a URI every node reaches"),
    name: str = typer.Option("ablation", help="study name: prefix of its Train runs; rerunning resumes it"),
    experiment: str = typer.Option("ablation", help="MLflow experiment of the study"),
    report_dir: Path = typer.Option(Path("reports"), help="where ablation.md, .png and _summary.json go"),
    report_only: bool = typer.Option(False, help="train nothing: rebuild the report from the MLflow runs"),
    warm_start: Optional[str] = typer.Option(
        None, help="name of a shorter study of the same models (same --storage, same settings but for epochs / "
                   "max_steps, constant learning rate): each model continues from that study's last checkpoint "
                   "of the same cell and seed instead of training its first steps again"),
) -> None:
    """Run the multi-view paper's ablation matrix (Table 6) and write its report.

    Cells: generative with/without invertibility; discriminative with views fg, ff, gg, f, g; each for --seeds
    seeds. Every view of every model is evaluated; the report gives mean +- std over seeds, training hours and
    sentences seen, and checks the paper's directions. Finished runs are kept: rerunning continues the study.
    """
    from skipview.platform.evaluation.encoding import COMPARABLE_FITS
    from skipview.platform.training import driver, run_log
    from skipview.platform.tuning.ablation import REPORT_TASKS, StudySettings, load_base, run_study
    from skipview.platform.tuning.matrix import DEFAULT_MATRIX, MatrixError, load_matrix
    from skipview.platform.tuning.report import build_report


    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        study_matrix = load_matrix(matrix or DEFAULT_MATRIX)
        if cells:
            study_matrix = study_matrix.subset([c.strip() for c in cells.split(",") if c.strip()])
        base, study_matrix = load_base(config, {"corpus": str(corpus), "wordvecs": str(wordvecs),
                                                "senteval_dir": str(senteval_dir)}, set_, None, study_matrix,
                                       references)
    except (MatrixError, ValueError) as error:
        raise typer.BadParameter(one_line(error)) from error
    if protocol not in ("full", "fast"):
        raise typer.BadParameter(f"--protocol must be full or fast, got {protocol!r}")
    if component_fit not in COMPARABLE_FITS:
        raise typer.BadParameter(f"--component-fit must be one of {', '.join(COMPARABLE_FITS)} (the same for models "
                                 f"and baselines), got {component_fit!r}")
    if not report_only:
        study = StudySettings(name=name, storage=storage, experiment=experiment, seeds=seeds, first_seed=first_seed,
                              references=references,
                              workers=workers, cpus_per_worker=cpus_per_worker, gpus_per_worker=gpus_per_worker,
                              protocol=protocol, component_fit=component_fit, warm_start=warm_start,
                              tasks=tuple(t.strip() for t in tasks.split(",")) if tasks else REPORT_TASKS)
        try:
            driver.check_data(base)
            driver.check_local_resources(workers, cpus_per_worker, gpus_per_worker, address)
        except (FileNotFoundError, ValueError) as error:
            raise typer.BadParameter(one_line(error)) from error
        log_path = driver.local_root(storage) / f"{name}.log"
        with run_log.capture(log_path, debug=errors.debug) as log:
            driver.connect(address, run_log=log)
            typer.echo(f"study {name}: Ray's and the workers' log: {log_path}")
            records = run_study(study_matrix, base, study)
        typer.echo(f"study {name}: {sum(not r['skipped'] for r in records)} runs done now, "
                   f"{sum(r['skipped'] for r in records)} already recorded")
    paths = build_report(store.client(), experiment, study_matrix, report_dir, references=references)
    typer.echo("report: " + ", ".join(str(p) for p in paths.values()))


study_app = typer.Typer(help="Studies: one typed file each under studies/ (platform/tuning/study.py says every key). "
                             "`run` trains and evaluates what is missing and writes the report; `report` rebuilds "
                             "it; `index` regenerates reports/INDEX.md.", no_args_is_help=True)


def _load(study_name: str):
    from skipview.platform.tuning.study import StudyError, load_study, resolve

    try:
        return load_study(resolve(study_name))
    except (StudyError, ValueError) as error:
        raise typer.BadParameter(one_line(error)) from error


@study_app.command("run")
def study_run(
    study_name: str = typer.Argument(..., metavar="STUDY", help="a study's name (studies/<name>.yaml) or file"),
    seeds: Optional[int] = typer.Option(None, min=1, help="seeds to run now (default: the study's)"),
    first_seed: int = typer.Option(0, min=0, help="first seed to run (a study split over machines or sessions)"),
    cells: Optional[str] = typer.Option(None, help="comma-separated rows of the study to run now (default: all)"),
    address: Optional[str] = typer.Option(None, envvar="RAY_ADDRESS", help="Ray cluster; none starts a local Ray"),
    storage: str = typer.Option("runs", help="checkpoint storage: a local path or a URI every node reaches"),
) -> None:
    """Train and evaluate every (cell, seed) of the study not yet recorded, writing each finished run's record and
    the report as it lands; rerunning resumes (an interrupted model continues from its last checkpoint)."""
    from skipview.platform.training import driver, run_log
    from skipview.platform.tuning.ablation import run_study
    from skipview.platform.tuning.report import build_report, read_records

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    study = _load(study_name)
    matrix = study.matrix
    if cells:
        try:
            matrix = matrix.subset([c.strip() for c in cells.split(",") if c.strip()])
        except ValueError as error:
            raise typer.BadParameter(one_line(error)) from error
    settings = study.settings(seeds=seeds, first_seed=first_seed, storage=storage)
    try:
        driver.check_data(study.base)          # the cells' own settings were checked when the study was read
        driver.check_local_resources(settings.workers, settings.cpus_per_worker, settings.gpus_per_worker, address)
    except (FileNotFoundError, ValueError) as error:
        raise typer.BadParameter(one_line(error)) from error

    def report() -> None:
        build_report(store.client(), study.name, study.matrix, study.report_dir, references=study.spec.references,
                     records=True)

    recorded = {(r.cell, r.seed) for r in read_records(study.report_dir)}
    log_path = driver.local_root(storage) / f"{study.name}.log"
    with run_log.capture(log_path, debug=errors.debug) as log:
        driver.connect(address, run_log=log)
        typer.echo(f"study {study.name}: Ray's and the workers' log: {log_path}")
        records = run_study(matrix, study.base, settings, after_each=report, recorded=recorded)
    report()
    typer.echo(f"study {study.name}: {sum(not r['skipped'] for r in records)} runs done now, "
               f"{sum(r['skipped'] for r in records)} already recorded; report in {study.report_dir}")


@study_app.command("report")
def study_report(study_name: str = typer.Argument(..., metavar="STUDY", help="a study's name or file")) -> None:
    """Rebuild the study's report from its committed run records and the MLflow runs of this machine."""
    from skipview.platform.tuning.report import build_report

    study = _load(study_name)
    paths = build_report(store.client(), study.name, study.matrix, study.report_dir,
                         references=study.spec.references, records=True)
    typer.echo("report: " + ", ".join(str(p) for p in paths.values()))


@study_app.command("index")
def study_index(check: bool = typer.Option(False, help="exit 1 if reports/INDEX.md is not what the studies give")
                ) -> None:
    """Regenerate reports/INDEX.md, one row per study file, from the studies' committed summaries."""
    from skipview.platform.tuning.study import INDEX, STUDIES_DIR, render_index

    text = render_index([_load(str(path)) for path in sorted(STUDIES_DIR.glob("*.yaml"))])
    if check:
        if not INDEX.is_file() or INDEX.read_text() != text:
            typer.echo(f"{INDEX} is stale: run `skipview study index`", err=True)
            raise typer.Exit(1)
        return
    write_text_aside(INDEX, text)
    typer.echo(f"wrote {INDEX}")
