"""``skipview study``: run, report, analyse and index the studies (one typed file each under studies/)."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Optional

import typer

from skipview.platform import errors, stopping
from skipview.platform.errors import one_line
from skipview.platform.files import write_text_aside

app = typer.Typer(help="Studies: one typed file each under studies/ (platform/studies/study.py says every key). "
                       "`run` trains and evaluates what is missing and writes the report; `analyse` runs the study's "
                       "analyses on its models; `report` rebuilds the report; `index` regenerates reports/INDEX.md, "
                       "README.md's results table and studies/index.yaml.", no_args_is_help=True)


def _load(study_name: str):
    from skipview.platform.studies.study import StudyError, load_study, resolve

    try:
        return load_study(resolve(study_name))
    except (StudyError, ValueError) as error:
        raise typer.BadParameter(one_line(error)) from error


def _report(study) -> dict:
    """The study's report from its run records and MLflow runs, with the supervised tasks its analyses measured of
    the same models."""
    from skipview.platform.studies.analyses import supervised_metrics
    from skipview.platform.studies.report import build_report
    from skipview.platform.tracking import store

    from skipview.platform.files import write_json_aside
    from skipview.platform.tracking import headline

    try:
        paths = build_report(store.client(), study.name, study.matrix, study.report_dir,
                             references=study.spec.references, records=True,
                             measured_elsewhere=supervised_metrics(study.report_dir, study.spec.analyses),
                             borrowed=study.borrowed_records())
    except LookupError as error:
        raise typer.BadParameter(f"{study.name}: nothing to report: no run records in {study.report_dir / 'runs'} "
                                 f"and no finished run in this machine's MLflow store ({one_line(error)})") from None
    # the study's row of `dvc metrics show` (reports/dvc.yaml's study stage declares it)
    write_json_aside(Path("metrics/summary") / f"{study.name}.json",
                     headline.ablation(json.loads(paths["summary"].read_text())))
    return paths


def _echo_mlflow_links(study) -> None:
    """How to open the study's runs in the MLflow UI, in the study's view (platform/studies/mlflow_view.py)."""
    from skipview.platform.studies.mlflow_view import links
    from skipview.platform.tracking import store

    for line in links(store.client(), study.name, study.matrix):       # the study's experiment is its name
        typer.echo(line)


@app.command("run")
def study_run(
    study_name: str = typer.Argument(..., metavar="STUDY", help="a study's name (studies/<name>.yaml) or file"),
    seeds: Optional[int] = typer.Option(None, min=1, help="seeds to run now (default: the study's)"),
    first_seed: int = typer.Option(0, min=0, help="first seed to run (a study split over machines or sessions)"),
    cells: Optional[str] = typer.Option(None, help="comma-separated rows of the study to run now (default: all)"),
    sizes: Optional[str] = typer.Option(None, help="a learning curve's sizes to run now, comma-separated (default: "
                                                   "all, smallest first as the study lists them)"),
    address: Optional[str] = typer.Option(None, envvar="RAY_ADDRESS", help="Ray cluster; none starts a local Ray"),
    storage: str = typer.Option("runs", help="checkpoint storage: a local path or a URI every node reaches"),
) -> None:
    """Train and evaluate every (cell, seed) of the study not yet recorded, writing each finished run's record and
    the report as it lands; rerunning resumes (an interrupted model continues from its last checkpoint)."""
    from skipview.platform.studies.report import read_records
    from skipview.platform.studies.runner import run_study
    from skipview.platform.training import driver, run_log

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    study = _load(study_name)
    parts = study.own_parts
    if sizes:
        wanted = [s.strip() for s in sizes.split(",") if s.strip()]
        unknown = sorted(set(wanted) - {part.size for part in study.parts})
        if unknown:
            raise typer.BadParameter(f"{', '.join(unknown)}: not a size of {study.path} (sizes: "
                                     f"{', '.join(study.spec.sizes) or 'none: the study has one corpus'})")
        borrowed = [size for size in wanted if size in study.spec.borrow]
        if borrowed:
            raise typer.BadParameter(f"{', '.join(borrowed)}: borrowed from "
                                     f"{', '.join(study.spec.borrow[borrowed[0]])}, never trained by {study.path}")
        parts = [part for part in parts if part.size in wanted]
    if cells:
        names = [c.strip() for c in cells.split(",") if c.strip()]
        try:
            parts = [replace(part, matrix=part.matrix.subset([f"{name}.{part.size}" if part.size else name
                                                              for name in names])) for part in parts]
        except ValueError as error:
            raise typer.BadParameter(one_line(error)) from error
    settings = study.settings(seeds=seeds, first_seed=first_seed, storage=storage)
    try:
        for part in parts:                     # the cells' own settings were checked when the study was read
            driver.check_data(part.base)
        driver.check_local_resources(settings.workers, settings.cpus_per_worker, settings.gpus_per_worker, address)
    except (FileNotFoundError, ValueError) as error:
        raise typer.BadParameter(one_line(error)) from error

    def report() -> None:
        _report(study)

    recorded = {(r.cell, r.seed) for r in read_records(study.report_dir)}
    log_path = driver.local_root(storage) / f"{study.name}.log"
    with run_log.capture(log_path, debug=errors.debug) as log:
        driver.connect(address, run_log=log)
        typer.echo(f"study {study.name}: Ray's and the workers' log: {log_path}")
        try:
            records = [record for part in parts
                       for record in run_study(part.matrix, part.base, settings, after_each=report,
                                               recorded=recorded)]
        except stopping.Stopped as stop:         # what the study keeps: every finished run, and the stopped one's
            stop.kept = "; ".join(filter(None, [f"each finished run's record in {study.report_dir}/runs", stop.kept]))
            raise
    report()
    typer.echo(f"study {study.name}: {sum(not r['skipped'] for r in records)} runs done now, "
               f"{sum(r['skipped'] for r in records)} already recorded; report in {study.report_dir}")
    _echo_mlflow_links(study)


@app.command("report")
def study_report(study_name: str = typer.Argument(..., metavar="STUDY", help="a study's name or file")) -> None:
    """Rebuild the study's report from its committed run records and the MLflow runs of this machine."""
    study = _load(study_name)
    paths = _report(study)
    typer.echo("report: " + ", ".join(str(p) for p in paths.values()))
    _echo_mlflow_links(study)


@app.command("analyse")
def study_analyse(
    study_name: str = typer.Argument(..., metavar="STUDY", help="a study's name or file"),
    names: Optional[str] = typer.Option(None, "--only", help="comma-separated analyses to run (default: all)"),
    dry_run: bool = typer.Option(False, help="print each analysis's command instead of running it"),
    storage: str = typer.Option("runs", help="where the study's runs left their models"),
) -> None:
    """Run the study's analyses (its file's `analyses`) on its trained models: each writes
    reports/STUDY/NAME.md and .json. A supervised analysis measures the models on this machine that its table
    does not hold yet (or holds from an earlier model of the same cell and seed) and keeps its other rows."""
    study = _load(study_name)
    steps = study.analysis_steps(storage)
    wanted = [n.strip() for n in names.split(",")] if names else [step.name for step in steps]
    unknown = sorted(set(wanted) - {step.name for step in steps})
    if unknown:
        raise typer.BadParameter(f"--only: {study.path} has no analysis {', '.join(unknown)} (analyses: "
                                 f"{', '.join(step.name for step in steps) or 'none'})")
    for step in (s for s in steps if s.name in wanted):
        typer.echo(step.command())
        if not dry_run:
            logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
            step.run()


@app.command("index")
def study_index(check: bool = typer.Option(False, help="exit 1 if reports/INDEX.md, README.md's results or "
                                                       "studies/index.yaml is not what the study files give")) -> None:
    """Regenerate, from the study files and their committed summaries, reports/INDEX.md (one row per study),
    README.md's results table and studies/index.yaml (the studies and analyses DVC's stages iterate over)."""
    from skipview.platform.studies.study import (DVC_INDEX, INDEX, README, StudyError, render_dvc_index,
                                                 render_index, render_readme_results, study_paths, with_readme_results)

    from skipview.platform.studies.learning_curve import readme_tables

    studies = [_load(str(path)) for path in study_paths()]
    try:
        readme = with_readme_results(README.read_text(), render_readme_results(studies, readme_tables(studies)))
    except StudyError as error:
        raise typer.BadParameter(one_line(error)) from error
    stale = []
    for path, text in ((INDEX, render_index(studies)), (README, readme), (DVC_INDEX, render_dvc_index(studies))):
        if check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path))
            continue
        write_text_aside(path, text)
        typer.echo(f"wrote {path}")
    if stale:
        typer.echo(f"{', '.join(stale)} stale: run `skipview study index`", err=True)
        raise typer.Exit(1)
