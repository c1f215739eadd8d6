"""A small skip-thought run written as the training loop writes it, without Ray: a run folder whose Ray snapshot
registers three checkpoints (a half epoch, a stop signal's three steps later, the epoch's end) and one upload a crash
cut, the MLflow run the checkpoints name with the loop's params and throughput windows, and a held-out slice cut
from the same corpus. For the tests of what reads a run back (``skipview heldout``, ``skipview export checkpoint``,
a study's rows trained outside it); ``tests/platform/conftest.py`` makes it a fixture."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from objective_steps import train_steps
from prepared_data import write_prepared_corpus, write_training_data

from skipview.models.batching import num_batches
from skipview.models.corpus import PreparedCorpus
from skipview.models.registry import build_objective
from skipview.platform.tracking import store
from skipview.platform.training import checkpoint as ckpt, driver
from skipview.platform.training.config import TrainSettings
from skipview.platform.training.run_folder import SNAPSHOT

BATCH, MAX_LEN = 8, 8           # sentences of 3-11 words: training and the held-out slice both cut some
CUT = {"seed": 0, "sentences_asked": 250, "source_documents": 14, "source_sentences": 350,
       "source_vocab_sha256": "0123abcd"}


@dataclass
class Run:
    folder: Path
    heldout: Path
    uri: str
    settings: TrainSettings         # as the run recorded them (its word vectors are aligned with its corpus)
    run_id: str
    checkpoints: list[str]
    documents: list[list[list[str]]]        # the held-out slice's words


def write_checkpoint(run_dir: Path, name: str, objective, progress: ckpt.Progress, run_id: str) -> str:
    optimizer = torch.optim.Adam(objective.parameters())
    ckpt.write(run_dir / name, rank=0, progress=progress, model=objective, optimizer=optimizer,
               scheduler=torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0), scaler=None,
               mlflow_run_id=run_id)
    return name


def write_skipthought_run(root: Path) -> Run:
    corpus, wordvecs = write_training_data(root / "data", documents=10, sentences_per_doc=30)
    half = num_batches(PreparedCorpus(corpus), "triple", BATCH, seed=0) // 2         # 16 steps
    # vocab_size 40 of the 60 words: the rest are <unk> to the model, as words past 5,000 are in the real runs
    settings = TrainSettings(objective="skipthought", corpus=str(corpus), wordvecs=str(wordvecs),
                             objective_settings={"hidden_size": 8, "embedding_dim": 6, "vocab_size": 40,
                                                 "reset_gate": "fused"},
                             batch_size=BATCH, max_len=MAX_LEN, epochs=1, max_steps=None, checkpoint_every=half,
                             postprocessing_sentences=50)
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = store.client(uri)
    folder = root / "runs" / "st-tiny"
    run_id, _ = store.open_run(client, "skipthought", str(folder), folder.name, params=driver.run_params(settings))
    # the loop's throughput windows: 8 sentences a step; 4 + 2 s to the half epoch, 3 s to the stop, 2 s to the end
    store.log_metric_steps(client, run_id, [(8, {"sentences_per_s": 16.0}), (16, {"sentences_per_s": 32.0}),
                                            (19, {"sentences_per_s": 8.0}), (32, {"sentences_per_s": 52.0})])
    # and STS14 at each checkpoint, of the ensemble and of the run's one view
    store.log_metric_steps(client, run_id, [(step, {"sts14": score, "sts14/uni": score})
                                            for step, score in ((0, 1.0), (half, 20.0), (2 * half, 30.0))])

    training = PreparedCorpus(corpus)
    objective = build_objective("skipthought", settings.objective_settings, vocab=training.vocab, word_vectors=None)
    train_steps(objective, training, half, BATCH, lr=3e-3)
    checkpoints = [write_checkpoint(folder, "checkpoint_2026-11-29_05-30-21.000001", objective,
                                    ckpt.Progress(step=half, batch=half), run_id)]
    train_steps(objective, training, 3, BATCH, lr=3e-3, seed=1)                    # then a stop signal
    checkpoints.append(write_checkpoint(folder, "checkpoint_2026-11-29_05-31-02.000002", objective,
                                        ckpt.Progress(step=half + 3, batch=half + 3), run_id))
    train_steps(objective, training, half - 3, BATCH, lr=3e-3, seed=2)             # and the epoch's end
    checkpoints.append(write_checkpoint(folder, "checkpoint_2026-11-29_05-32-40.000003", objective,
                                        ckpt.Progress(step=2 * half, epoch=1), run_id))
    (folder / "checkpoint_2026-11-29_05-33-00.000004").mkdir()        # an upload a crash cut: Ray never registered it
    (folder / "checkpoint_2026-11-29_05-33-00.000004" / ckpt.STATE_FILE).write_bytes(b"cut")
    (folder / SNAPSHOT).write_text(json.dumps({"ray_version": "2.60.0", "checkpoint_results": [
        {"version": 0, "checkpoint_dir_name": name, "metrics": {}} for name in checkpoints]}))

    # the held-out slice has its own vocabulary (as `skipview data cut --rest` counts one), other ids for the same
    # words, and a word the training corpus never had
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(60)] + ["unseen"]
    documents = [[list(rng.choice(words, size=int(rng.integers(2, 12)))) for _ in range(int(rng.integers(4, 9)))]
                 for _ in range(4)]
    heldout = write_prepared_corpus(root / "heldout", documents).path
    mark_cut(corpus)                            # as in issue 57: the training corpus a cut, the slice its rest
    mark_cut(heldout, rest=True)
    assert PreparedCorpus(heldout).vocab.words != training.vocab.words[: len(PreparedCorpus(heldout).vocab)]
    return Run(folder, heldout, uri, settings, run_id, checkpoints, documents)


def write_disc_run(run: Run, folder: Path) -> Path:
    """A run folder like ``run``'s whose MLflow run recorded a discriminative model: what only skip-thought's readers
    refuse."""
    settings = TrainSettings(objective="disc", corpus=run.settings.corpus, wordvecs=run.settings.wordvecs)
    run_id, _ = store.open_run(store.client(run.uri), "disc", str(folder), folder.name,
                               params=driver.run_params(settings))
    objective = build_objective("skipthought", run.settings.objective_settings,
                                vocab=PreparedCorpus(run.settings.corpus).vocab, word_vectors=None)
    name = write_checkpoint(folder, "checkpoint_2026-11-29_06-00-00.000001", objective, ckpt.Progress(step=4), run_id)
    (folder / SNAPSHOT).write_text(json.dumps({"checkpoint_results": [{"checkpoint_dir_name": name}]}))
    return folder


def mark_cut(corpus: Path, **block) -> None:
    """Give a corpus the ``cut`` block ``skipview data cut`` writes in its meta.json (``rest``: the documents the
    cut leaves out)."""
    meta = json.loads((corpus / "meta.json").read_text())
    (corpus / "meta.json").write_text(json.dumps({**meta, "cut": {**CUT, **block}}))
