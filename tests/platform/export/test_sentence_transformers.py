"""`skipview export sentence-transformers`: every kind of model skipview saves, exported and loaded by
``SentenceTransformer`` in a fresh process, gives skipview's own vectors; a refused export says why in one line and
writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from objective_steps import train_steps
from prepared_data import write_training_data

from skipview.models import registry
from skipview.models.batching import sample_sentence_ids
from skipview.models.corpus import PreparedCorpus
from skipview.models.encoder import SentenceEncoder

SKIPVIEW = [sys.executable, "-m", "skipview.platform.cli"]
SENTENCES = ["w1 w2 w3 w4 .", "W5, w6 w7!", "", "w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 w20 w21",
             "an unknownword w40", "w59"]
# each kind of model skipview saves: (objective, its settings, the views an export may pick)
KINDS = {
    "disc": ("disc", {"hidden_size": 6}, ["ensemble", "f", "g"]),
    "disc-usif-g": ("disc", {"hidden_size": 6, "g_word_weights": "usif"}, ["g"]),
    "gen": ("gen", {"hidden_size": 6}, ["ensemble", "f", "g"]),
    # vocab_size below the corpus's 60 words: the export holds the expanded vocabulary (section 2.2)
    "skipthought-uni": ("skipthought", {"encoder": "uni", "vocab_size": 20, "embedding_dim": 8, "hidden_size": 10,
                                        "reset_gate": "fused"}, ["uni"]),
    "skipthought-bi": ("skipthought", {"encoder": "bi", "vocab_size": 20, "embedding_dim": 8, "hidden_size": 10},
                       ["bi"]),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[PreparedCorpus, np.ndarray]:
    # Zipf-like counts, as a corpus has: uSIF's weights need words above and below its frequency threshold
    corpus, wordvecs = write_training_data(tmp_path_factory.mktemp("export"), documents=6, sentences_per_doc=20,
                                           counts=[6000 // (rank + 1) for rank in range(60)])
    return PreparedCorpus(corpus), np.load(wordvecs / "vectors.npy")


def trained_model(kind: str, data, folder: Path) -> Path:
    """A few training steps of ``kind``, its post-processing fitted and stored, saved as skipview saves it."""
    corpus, vectors = data
    name, settings, _ = KINDS[kind]
    torch.manual_seed(0)
    objective = registry.build_objective(name, settings, vocab=corpus.vocab, word_vectors=vectors)
    train_steps(objective, corpus, steps=3, batch_size=16, lr=0.01)
    encoder = objective.sentence_encoder(corpus.tokenizer, corpus.vocab)
    encoder.fit_postprocessing(sample_sentence_ids(corpus, 60))
    return encoder.save(folder / kind)


def export(model: Path, out: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SKIPVIEW, "export", "sentence-transformers", str(model), str(out), *options],
                          capture_output=True, text=True, timeout=300)


def sentence_transformer_vectors(folder: Path) -> np.ndarray:
    """``SentenceTransformer(folder).encode(SENTENCES)`` in a fresh process, offline, as a user would run it."""
    script = ("import json, sys; from sentence_transformers import SentenceTransformer; "
              "v = SentenceTransformer(sys.argv[1], device='cpu', trust_remote_code=True).encode(json.loads(sys.argv[2])); "
              "print(json.dumps(v.tolist()))")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", script, str(folder), json.dumps(SENTENCES)], capture_output=True,
                          text=True, timeout=300, env=env, check=True)
    return np.asarray(json.loads(done.stdout.splitlines()[-1]), dtype=np.float32)


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_view_and_post_processing_exports_to_the_same_vectors(kind, data, tmp_path):
    from sentence_transformers import SentenceTransformer

    from skipview.platform.export.sentence_transformers import export

    model = trained_model(kind, data, tmp_path)
    encoder = SentenceEncoder.load(model)
    for view in KINDS[kind][2]:
        for mode, postprocessing in (("unsupervised", "stored"), ("unsupervised", "none"), ("supervised", "stored")):
            out = export(model, tmp_path / f"st-{view}-{mode}-{postprocessing}", view=view, mode=mode,
                         postprocessing=postprocessing)
            ours = encoder.encode(SENTENCES, mode, view, postprocessing=postprocessing)
            theirs = SentenceTransformer(str(out), device="cpu", trust_remote_code=True).encode(SENTENCES, batch_size=4)
            np.testing.assert_allclose(theirs, ours, atol=1e-5, rtol=0, err_msg=f"{kind} {view} {mode} {postprocessing}")
            if postprocessing == "stored":          # the stored components are in force: removing none differs
                assert not np.allclose(ours, encoder.encode(SENTENCES, mode, view, postprocessing="none"), atol=1e-4)
    if kind.startswith("skipthought"):
        assert len(encoder.vocab) > KINDS[kind][1]["vocab_size"] + 4      # the expanded vocabulary went along


@pytest.fixture(scope="module")
def exported(data, tmp_path_factory) -> tuple[Path, Path, subprocess.CompletedProcess, str]:
    """A disc model exported once by the command, with its MLflow run and two score records for the card: the
    model, the folder, the finished command and the run's id. The card's test and the evaluation's test both read
    this one folder (each export command costs a process importing sentence-transformers, ~7 CPU s)."""
    from skipview.platform.tracking import store

    tmp_path = tmp_path_factory.mktemp("exported")
    model = trained_model("disc", data, tmp_path)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = store.client(uri)
    run = client.create_run(client.create_experiment("export"), run_name="disc-toy",
                            tags={"corpus.hash": "dvc:abc123", "git_commit": "0123abc",
                                  "skipview.command": "skipview train --objective disc --corpus data/toy"})
    client.log_param(run.info.run_id, "batch_size", "16")
    client.log_metric(run.info.run_id, "sts14", 51.5, step=300)
    evaluated = tmp_path / "eval.json"
    evaluated.write_text(json.dumps({"encoder": str(model), "protocol": {"name": "fast"},
                                     "metrics": {"sts14.spearman.all": 48.25}}))
    usif = tmp_path / "usif.json"
    usif.write_text(json.dumps({"encoder": "usif", "protocol": {"name": "fast"}, "metrics": {"sts14.spearman.all": 60.5}}))
    out = tmp_path / "st"
    done = export(model, out, "--run", run.info.run_id, "--tracking-uri", uri, "--scores", str(evaluated),
                  "--scores", str(usif))
    assert done.returncode == 0, done.stderr[-3000:]
    return model, out, done, run.info.run_id


@pytest.mark.slow
def test_the_command_writes_a_folder_a_fresh_process_loads_with_a_card_of_the_run_data_command_and_scores(exported):
    model, out, done, run_id = exported
    assert json.loads(done.stdout)["max_abs_difference_to_skipview"] <= 1e-5
    np.testing.assert_allclose(sentence_transformer_vectors(out), SentenceEncoder.load(model).encode(SENTENCES),
                               atol=1e-5, rtol=0)
    card = (out / "README.md").read_text()
    assert card.startswith("---\nlibrary_name: sentence-transformers\n")
    for expected in ("`dvc:abc123`", "`0123abc`", "skipview train --objective disc --corpus data/toy",
                     "| `batch_size` | `16` |", "sts14 51.5", "| `sts14.spearman.all` | 48.25 | 60.50 |", run_id):
        assert expected in card, expected


@pytest.mark.slow
def test_a_refused_export_names_the_path_in_one_line_and_writes_nothing(data, tmp_path):
    not_a_model = tmp_path / "notes"
    not_a_model.mkdir()
    done = export(not_a_model, tmp_path / "out")
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and str(not_a_model) in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()

    model = trained_model("gen", data, tmp_path)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("mine")
    done = export(model, taken)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and str(taken) in done.stderr, done.stderr
    assert [p.name for p in taken.iterdir()] == ["mine.txt"]

    done = export(model, tmp_path / "out", "--view", "h")
    assert done.returncode == 1 and "unknown view 'h'" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith((".out", "out"))) == []


@pytest.mark.slow
def test_skipview_evaluate_scores_an_exported_folder_as_the_model_it_came_from(exported, tmp_path):
    """The suite reads a sentence-transformers folder through `--model`: the same STS14 as the model directory with
    its stored components (`--component-fit corpus`), the post-processing the export keeps."""
    from prepared_data import write_toy_sts14

    model, out, _, _ = exported
    senteval = write_toy_sts14(tmp_path / "senteval")
    scores = {}
    for name, path in (("skipview", model), ("sentence-transformers", out)):
        record = tmp_path / f"{name}.json"
        done = subprocess.run([*SKIPVIEW, "evaluate", "--model", str(path), "--tasks", "sts14", "--component-fit",
                               "corpus", "--senteval-dir", str(senteval), "--output", str(record)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        scores[name] = json.loads(record.read_text())["metrics"]
    assert scores["skipview"].keys() == scores["sentence-transformers"].keys()
    for key, value in scores["skipview"].items():
        assert scores["sentence-transformers"][key] == pytest.approx(value, abs=1e-3), key
    done = subprocess.run([*SKIPVIEW, "evaluate", "--model", str(out), "--tasks", "sts14", "--view", "f",
                           "--senteval-dir", str(senteval)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "encodes with the view and post-processing it was exported with" in done.stderr
