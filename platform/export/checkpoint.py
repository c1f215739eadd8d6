"""``skipview export checkpoint``: a skip-thought run's kept checkpoint as a model directory.

A run writes its model directory once, when its epochs are over (``--output``); this makes one from any checkpoint
it keeps, which is what the quality of a run along its training, and vocabulary expansion after it, need. The run is
read back as ``skipview heldout`` reads it (``recorded_run.py``: its settings from its MLflow record); the model is
the objective's own ``sentence_encoder``, with its post-processing fitted as the loop fits the final model's (the
run's ``postprocessing_sentences`` of its training corpus, its seed), so the latest checkpoint of a finished run,
without word vectors, is the run's final model directory again. With word vectors aligned with the training
corpus's vocabulary, the encoder is vocabulary-expanded (Kiros et al. 2015, section 2.2: every corpus word with a
vector gets the least-squares map of it). Where the model came from is in its ``config.json``
(``metadata.exported_from``), which a study's rows trained outside it check against the run they name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skipview.models.encoder import SentenceEncoder
from skipview.platform.tracking.lineage import portable_path
from skipview.platform.training.recorded_run import CPU, RecordedRun

EXPORTED_FROM = "exported_from"          # the model's metadata key: the run, checkpoint and word vectors


def export_checkpoint(run: RecordedRun, out: Path, step: int | None = None,
                      wordvecs: Path | None = None) -> SentenceEncoder:
    """Write the model of ``run``'s checkpoint at ``step`` (the latest for None) to ``out``, atomically; checked
    first: the run is a skip-thought run, the step a kept checkpoint's, the vectors aligned with its corpus."""
    run.require_skipthought("a checkpoint's export is a skip-thought encoder's (with vocabulary expansion)")
    folder = run.checkpoint_at(step)
    built = run.build(wordvecs)
    progress = run.load(folder, built)
    encoder = built.finished_encoder(CPU)
    encoder.metadata[EXPORTED_FROM] = {
        "run": portable_path(run.folder), "mlflow_run_id": run.mlflow_run_id, "checkpoint": folder.name,
        "step": progress.step, "epoch": progress.epoch, "wordvecs": wordvecs and portable_path(wordvecs)}
    encoder.save(out)
    return encoder


def exported_from(model: SentenceEncoder) -> dict[str, Any] | None:
    """Where ``model`` was exported from; None for a model a run wrote itself at its end (``--output``)."""
    return model.metadata.get(EXPORTED_FROM)
