"""``skipview train``: one command for this machine (local Ray, CPU, gloo) and a GPU cluster (nccl, AMP); ``skipview
heldout``: a skip-thought run's checkpoints on a held-out corpus, and whether to train on."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import typer

from skipview.platform import errors, stopping
from skipview.platform.errors import one_line
from skipview.platform.files import write_json_aside

def train(
    objective: str = typer.Option(..., help="disc | gen | skipthought (or module:factory)"),
    corpus: Path = typer.Option(..., exists=True, file_okay=False, help="prepared corpus directory"),
    wordvecs: Optional[Path] = typer.Option(None, exists=True, file_okay=False, help="word-vector directory"),
    config: Optional[str] = typer.Option(None, help="YAML settings: FILE, or FILE:section (params.yaml:train.settings)"),
    set_: list[str] = typer.Option([], "--set", help="override a setting: key=value (dotted keys, YAML values)"),
    workers: int = typer.Option(1, min=1, help="Ray Train workers (DDP ranks)"),
    cpus_per_worker: float = typer.Option(1, help="CPUs reserved per worker (also its torch threads)"),
    gpus_per_worker: float = typer.Option(0, help="GPUs per worker; >0 trains on GPU with nccl and autocast"),
    address: Optional[str] = typer.Option(None, envvar="RAY_ADDRESS", help="Ray cluster; none starts a local Ray"),
    storage: str = typer.Option("runs", help="checkpoint storage: a local path or a URI every node can reach"),
    name: Optional[str] = typer.Option(None, help="run name; an existing run of this name is resumed"),
    resume: bool = typer.Option(False, help="without --name: resume the latest run of this objective and corpus"),
    experiment: str = typer.Option("skipview", help="MLflow experiment (one per study)"),
    max_failures: int = typer.Option(2, help="worker-group restarts from the last checkpoint (-1: unlimited)"),
    wait_for_workers: float = typer.Option(300, help="seconds to wait for the cluster's CPUs/GPUs for the workers "
                                                     "before failing (-1: without bound, for an autoscaling cluster)"),
    senteval_dir: Optional[Path] = typer.Option(None, envvar="SKIPVIEW_SENTEVAL_DIR",
                                                help="SentEval data/downstream: periodic STS14"),
    output: Optional[Path] = typer.Option(None, help="write the final model directory here"),
    metrics: Optional[Path] = typer.Option(None, help="write the final metrics JSON here"),
    keep_checkpoints: int = typer.Option(2, min=1, help="checkpoints kept: the latest, or with --senteval-dir the "
                                                        "best by STS14 besides the latest (a curve over training "
                                                        "time keeps them all)"),
) -> None:
    """Train an objective on a prepared corpus with Ray Train (DDP), checkpoints and MLflow tracking.

    Settings come from --config, then the options, then --set (last wins). Per-step metrics go to MLflow
    (default ./mlflow.db; MLFLOW_TRACKING_URI overrides); checkpoints go to STORAGE/NAME.
    """
    from skipview.platform.training import driver, run_log
    from skipview.platform.training.config import RunSettings, load_settings

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    base = {"objective": objective, "corpus": str(corpus), "wordvecs": str(wordvecs) if wordvecs else None,
            "senteval_dir": str(senteval_dir) if senteval_dir else None}
    try:
        settings = load_settings(config, base, set_)
        driver.check_inputs(settings, gpus_per_worker)
    except ValueError as error:
        raise typer.BadParameter(one_line(error)) from error
    if name is None and resume:
        name = driver.latest_run_name(storage, driver.run_name_prefix(settings))
        if name is None:
            raise typer.BadParameter(f"--resume: no earlier run of {objective} on {corpus} under {storage}")
    run = RunSettings(name=name or driver.new_run_name(settings), storage=storage, workers=workers,
                      cpus_per_worker=cpus_per_worker, gpus_per_worker=gpus_per_worker, max_failures=max_failures,
                      worker_wait_s=None if wait_for_workers == -1 else wait_for_workers,
                      experiment=experiment, output=str(output) if output else None,
                      keep_checkpoints=keep_checkpoints)
    try:
        driver.check_local_resources(workers, cpus_per_worker, gpus_per_worker, address)
    except ValueError as error:
        raise typer.BadParameter(one_line(error)) from error
    log_path = driver.local_root(storage) / f"{run.name}.log"
    with run_log.capture(log_path, debug=errors.debug) as log:
        try:
            driver.check_continuation(settings, run)
        except ValueError as error:
            raise typer.BadParameter(one_line(error)) from error
        driver.connect(address, run_log=log)
        typer.echo(f"run {run.name}: {run.workers} worker(s), checkpoints in {driver.run_key(run)}; Ray's and the "
                   f"workers' log: {log_path}")
        try:
            outcome = driver.train(settings, run)
        except stopping.Stopped as stop:
            stop.resume_options = () if name else ("--name", run.name)
            raise
    if metrics is not None:
        driver.write_metrics(outcome, metrics)
    typer.echo(f"done: MLflow run {outcome.mlflow_run_id}, metrics {outcome.metrics}")
    if outcome.model_dir:
        typer.echo(f"model directory: {outcome.model_dir}")


def heldout(
    run_folder: Path = typer.Argument(..., exists=True, file_okay=False,
                                      help="a skip-thought run's folder (STORAGE/NAME of `skipview train`)"),
    corpus: Path = typer.Option(..., exists=True, file_okay=False,
                                help="held-out prepared corpus (`skipview data cut ... --rest`)"),
    out: Optional[Path] = typer.Option(None, help="write the records and the verdict to this JSON file"),
    tracking_uri: Optional[str] = typer.Option(None, envvar="MLFLOW_TRACKING_URI",
                                               help="MLflow store of the run, where its settings are (default "
                                                    "./mlflow.db)"),
    threads: int = typer.Option(1, min=1, help="torch threads (one leaves the other cores to the trainings)"),
    again: bool = typer.Option(False, "--again", help="measure every checkpoint, also those whose records --out "
                                                      "already holds from an earlier call on this run and corpus"),
) -> None:
    """Next- and previous-sentence perplexity on a held-out corpus of every checkpoint a skip-thought run keeps, as
    its training objective defines it (whole corpus, teacher forcing, full softmax), and issue 57's plateau rule
    over its half-epoch checkpoints: three epochs, then on to at most five while the next-sentence perplexity
    improves by more than 1 % per half epoch. Prints a line per checkpoint, then whether to train on. A checkpoint
    that --out already holds from an earlier call on the same run and corpus is not measured again (--again does)."""
    import torch

    from skipview.platform.tracking import store
    from skipview.platform.training.heldout import HeldOutRun, describe

    torch.set_num_threads(threads)
    heldout_run = HeldOutRun.open(run_folder, corpus, tracking_uri or store.tracking_uri())
    before = heldout_run.measured_before(out) if out is not None and not again else {}
    records = []
    for folder in heldout_run.run.checkpoints:
        kept = before.get(folder.name)
        records.append(heldout_run.with_hours(kept) if kept else heldout_run.evaluate(folder))
        typer.echo(describe(records[-1]) + (f" (measured before, kept from {out})" if kept else ""))
    report = heldout_run.report(records)
    if out is not None:
        write_json_aside(out, report)
        typer.echo(f"records written to {out}")
    typer.echo(f"{report['run']}: {report['plateau']['line']}")
