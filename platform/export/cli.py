"""``skipview export``: ``sentence-transformers MODEL_DIR OUT``, a trained model for sentence-transformers (and
MTEB); ``checkpoint RUN_FOLDER OUT``, a skip-thought run's kept checkpoint as a model directory (checkpoint.py).

sentence-transformers is the optional extra ``skipview[st]``; the command says so in one line where it is missing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(no_args_is_help=True, help="Write a trained model in another tool's format, or a run's checkpoint "
                                             "as a model directory.")

TOLERANCE = 1e-5      # float32 rounding of the same operations in another batching
# a few sentences of the kinds the evaluation holds, to check the export against the model it came from
CHECK_SENTENCES = ["A man is playing a guitar .", "the cat sat on the mat", "Stocks fell sharply on Monday, "
                   "analysts said.", "", "An unseen wordform: qwertyuiop !"]


@app.command("sentence-transformers")
def sentence_transformers(
    model_dir: Path = typer.Argument(..., help="trained model directory (`skipview train --output`)"),
    out: Path = typer.Argument(..., help="folder to write; must not exist"),
    view: str = typer.Option("ensemble", help="'ensemble' (every view) or one view name (f, g, uni, ...)"),
    mode: str = typer.Option("unsupervised", help="'unsupervised' (views averaged) or 'supervised' (concatenated)"),
    postprocessing: str = typer.Option("stored", help="'stored': remove the principal components stored with the "
                                                      "model; 'none': remove none"),
    run: Optional[str] = typer.Option(None, help="MLflow run id that trained the model: its data, settings and "
                                                 "command go into the model card"),
    tracking_uri: Optional[str] = typer.Option(None, envvar="MLFLOW_TRACKING_URI",
                                               help="MLflow store of --run (default ./mlflow.db)"),
    scores: list[Path] = typer.Option([], "--scores", help="`skipview evaluate --out` records for the card's table, "
                                                           "this model's first, then baselines' (repeat)"),
) -> None:
    """Write MODEL_DIR as a sentence-transformers model folder: `SentenceTransformer(OUT).encode(...)` returns the
    vectors `SentenceEncoder.load(MODEL_DIR).encode(...)` does for the same view, mode and post-processing. The
    folder carries a model card (README.md) from the run's MLflow record. The export is checked on a few sentences
    before the command ends."""
    try:
        from skipview.platform.export import sentence_transformers as st_export
    except ModuleNotFoundError as missing:
        raise typer.BadParameter(f"needs {missing.name}: pip install 'skipview[st]'") from None
    from skipview.platform.export.model_card import evaluation_record, run_record
    from skipview.platform.tracking import store

    records = [evaluation_record(path) for path in scores]
    record = run_record(tracking_uri or store.tracking_uri(), run) if run else None
    st_export.export(model_dir, out, view=view, mode=mode, postprocessing=postprocessing, record=record,
                     scores=records)
    difference = st_export.check_round_trip(model_dir, out, CHECK_SENTENCES)
    if difference > TOLERANCE:          # a bug, not a user error: the folder is not left behind as if it worked
        shutil.rmtree(out)
        raise RuntimeError(f"{out}: SentenceTransformer's vectors differ from skipview's by {difference:.3g} "
                           f"(> {TOLERANCE}); the export was removed")
    typer.echo(json.dumps({"exported": str(out), "view": view, "mode": mode, "postprocessing": postprocessing,
                           "max_abs_difference_to_skipview": difference}))


@app.command("checkpoint")
def checkpoint(
    run_folder: Path = typer.Argument(..., exists=True, file_okay=False,
                                      help="a skip-thought run's folder (STORAGE/NAME of `skipview train`)"),
    out: Path = typer.Argument(..., help="model directory to write (an existing model directory is replaced)"),
    step: Optional[int] = typer.Option(None, min=0, help="the kept checkpoint at this optimiser step (default: the "
                                                         "latest)"),
    wordvecs: Optional[Path] = typer.Option(None, exists=True, file_okay=False,
                                            help="word vectors aligned with the run's training corpus (`skipview "
                                                 "data wordvecs` of that corpus): vocabulary expansion"),
    tracking_uri: Optional[str] = typer.Option(None, envvar="MLFLOW_TRACKING_URI",
                                               help="MLflow store of the run, where its settings are (default "
                                                    "./mlflow.db)"),
    threads: int = typer.Option(1, min=1, help="torch threads (one leaves the other cores to the trainings)"),
) -> None:
    """Write a kept checkpoint of a skip-thought run as a model directory (`SentenceEncoder.load(OUT)`), its
    post-processing fitted as the run fits its final model's; with --wordvecs, vocabulary-expanded (Kiros et al.
    2015, section 2.2) to every word of the training corpus that has a vector."""
    import torch

    from skipview.platform.export.checkpoint import EXPORTED_FROM, export_checkpoint
    from skipview.platform.tracking import store
    from skipview.platform.training.recorded_run import RecordedRun

    torch.set_num_threads(threads)
    run = RecordedRun.open(run_folder, tracking_uri or store.tracking_uri())
    encoder = export_checkpoint(run, out, step, wordvecs)
    typer.echo(json.dumps({"exported": str(out), **encoder.metadata[EXPORTED_FROM],
                           "vocab_expansion": encoder.metadata.get("vocab_expansion")}))
