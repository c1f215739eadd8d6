"""``skipview export sentence-transformers MODEL_DIR OUT``: a trained model for sentence-transformers (and MTEB).

sentence-transformers is the optional extra ``skipview[st]``; the command says so in one line where it is missing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(no_args_is_help=True, help="Write a trained model in another tool's format.")

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
