"""``skipview evaluate``: the evaluation suite on a trained model directory (or MLflow model URI), writing the
metrics JSON of the DVC ``evaluate`` stage and adding the numbers to the training run in MLflow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer


def evaluate(
    model: str = typer.Argument(..., help="model directory, or MLflow model URI (runs:/<id>/encoder)"),
    tasks: str = typer.Option("sts12,sts13,sts14,stsb_unsup,sickr_unsup", help="comma-separated task names"),
    protocol: str = typer.Option("full", help="full (SentEval, 10 folds) or fast (5 folds)"),
    senteval_dir: Optional[Path] = typer.Option(None, envvar="SKIPVIEW_SENTEVAL_DIR",
                                                help="SentEval data/downstream"),
    metrics: Optional[Path] = typer.Option(None, help="write the metrics JSON here"),
    train_metrics: Optional[Path] = typer.Option(None, exists=True, dir_okay=False,
                                                 help="the train stage's metrics JSON: log into its MLflow run"),
) -> None:
    """Evaluate a trained encoder on SentEval-compatible tasks."""
    from skipview.platform.evaluation import evaluate as run_suite
    from skipview.platform.tracking import store
    from skipview.platform.tracking.pyfunc import load_encoder

    names = [t.strip() for t in tasks.split(",") if t.strip()]
    record = run_suite(load_encoder(model), names, senteval_dir, protocol)
    record["model"] = model
    if train_metrics is not None:
        run_id = json.loads(train_metrics.read_text()).get("mlflow_run_id")
        if run_id:
            client = store.client()
            store.log_metrics(client, run_id, {f"eval.{k}": v for k, v in record["metrics"].items()}, step=0)
            record["mlflow_run_id"] = run_id
    if metrics is not None:
        metrics.parent.mkdir(parents=True, exist_ok=True)
        partial = metrics.with_name(metrics.name + ".partial")
        partial.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        partial.replace(metrics)
    for key, value in sorted(record["metrics"].items()):
        typer.echo(f"{key}\t{value:.2f}")
