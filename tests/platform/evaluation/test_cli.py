"""`skipview evaluate` / `neighbours` / `tsne` end to end through the real CLI on small inputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from skipview.platform.cli import app

runner = CliRunner()


def _mini_senteval(root: Path) -> Path:
    """A SentEval layout with STS14 (six subsets) and MPQA, small enough for a test."""
    words = ["the cat sat", "the dog ran", "a cat ran", "the dog sat", "do n't", "the cat"]
    folder = root / "STS" / "STS14-en-test"
    folder.mkdir(parents=True)
    for subset in ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"):
        (folder / f"STS.input.{subset}.txt").write_text("".join(f"{a}\t{b}\n" for a, b in zip(words, words[::-1])))
        (folder / f"STS.gs.{subset}.txt").write_text("".join(f"{s}\n" for s in (5, 1, 2, 2, 1, 5)))
    (root / "MPQA").mkdir()
    (root / "MPQA" / "mpqa.pos").write_text("the cat\nthe cat sat\na cat\n" * 10)
    (root / "MPQA" / "mpqa.neg").write_text("the dog\nthe dog ran\ndo n't\n" * 10)
    return root


def test_evaluate_writes_metrics_json_and_table(tmp_path, tiny_wordvecs):
    data = _mini_senteval(tmp_path / "senteval")
    out = tmp_path / "metrics.json"
    result = runner.invoke(app, ["evaluate", "--baseline", "wr", "--wordvecs", str(tiny_wordvecs),
                                 "--senteval-dir", str(data), "--tasks", "sts14,mpqa", "--protocol", "fast",
                                 "--output", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["protocol"]["kfold"] == 5 and report["component_fit"] == "subset"
    assert set(report["tasks"]) == {"sts14", "mpqa"} and "5-fold nested CV" in report["tasks"]["mpqa"]
    metrics = report["metrics"]
    for key in ("sts14.pearson.mean", "sts14.pearson.wmean", "sts14.pearson.all", "sts14.spearman.mean",
                "sts14.images.pearson", "mpqa.acc", "mpqa.dev_acc"):
        assert np.isfinite(metrics[key])
    assert metrics["mpqa.acc"] > 65  # well above chance: cat vs dog words carry the label
    assert "sts14" in result.output and "mpqa" in result.output


def test_missing_task_file_is_a_clear_error(tmp_path, tiny_wordvecs):
    data = _mini_senteval(tmp_path / "senteval")
    result = runner.invoke(app, ["evaluate", "--baseline", "avg", "--wordvecs", str(tiny_wordvecs),
                                 "--senteval-dir", str(data), "--tasks", "trec"])
    assert result.exit_code != 0
    # typer prints the error in a box as wide as the terminal, folding the long path anywhere: read it unfolded
    unfolded = re.sub(r"[\s│]+", "", result.output)
    assert "trec:missingfile" in unfolded and "TREC/train_5500.label" in unfolded


def test_encoder_options_must_name_one_encoder(tmp_path):
    result = runner.invoke(app, ["evaluate", "--senteval-dir", str(tmp_path)])
    assert result.exit_code != 0 and "--model" in result.output


def test_word_neighbours(tiny_wordvecs):
    result = runner.invoke(app, ["neighbours", "words", "cat", "--wordvecs", str(tiny_wordvecs), "--k", "2"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("cat: dog (")  # dog (0.9, 0.1, 0) is cat's nearest
    # one unknown word among the queries is named, and the others are still answered
    result = runner.invoke(app, ["neighbours", "words", "zebra", "cat", "--wordvecs", str(tiny_wordvecs)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "zebra: not in the word table"
    assert result.output.splitlines()[1].startswith("cat: dog (")
    result = runner.invoke(app, ["neighbours", "words", "zebra", "--wordvecs", str(tiny_wordvecs)])
    assert result.exit_code != 0 and "none of zebra is in the word table" in result.output


def test_word_neighbours_lower_cases_the_queries_as_the_corpus_was(tiny_wordvecs):
    result = runner.invoke(app, ["neighbours", "words", "Cat", "DOG", "--wordvecs", str(tiny_wordvecs), "--k", "1"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["Cat: dog (0.99)", "DOG: cat (0.99)"]
    meta = json.loads((tiny_wordvecs / "meta.json").read_text())
    meta["tokenizer"]["lowercase"] = False                  # a cased corpus: "Cat" is another word than "cat"
    (tiny_wordvecs / "meta.json").write_text(json.dumps(meta))
    result = runner.invoke(app, ["neighbours", "words", "Cat", "--wordvecs", str(tiny_wordvecs)])
    assert result.exit_code != 0 and "none of Cat is in the word table" in result.output


def test_tsne_writes_png(tmp_path, tiny_wordvecs):
    data = _mini_senteval(tmp_path / "senteval")
    png = tmp_path / "plots" / "mpqa.png"
    result = runner.invoke(app, ["tsne", "mpqa", "--baseline", "avg", "--wordvecs", str(tiny_wordvecs),
                                 "--senteval-dir", str(data), "--output", str(png)])
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_evaluate_a_saved_model_directory(tmp_path, tiny_wordvecs):
    """--model DIR goes through SentenceEncoder.load (an untrained tiny 'gen' model: the wiring, not the quality)."""
    import torch

    from skipview.models import registry
    from skipview.platform.evaluation.baselines import WordVectors

    words = WordVectors.load(tiny_wordvecs)
    torch.manual_seed(0)
    objective = registry.build_objective("gen", {"hidden_size": 4}, vocab=words.vocab, word_vectors=words.vectors)
    model = objective.sentence_encoder(words.tokenizer, words.vocab)
    model.fit_postprocessing(["the cat sat", "the dog ran", "a cat ran", "the dog", "do n't"])
    model_dir = model.save(tmp_path / "model")
    data = _mini_senteval(tmp_path / "senteval")
    out = tmp_path / "metrics.json"
    result = runner.invoke(app, ["evaluate", "--model", str(model_dir), "--senteval-dir", str(data),
                                 "--tasks", "sts14,mpqa", "--protocol", "fast", "--output", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["encoder"] == str(model_dir) and np.isfinite(report["metrics"]["sts14.pearson.mean"])
    assert report["component_fit"] == "subset" and report["view"] == "ensemble"
    # one view, its component the stored one (fitted above on training sentences)
    result = runner.invoke(app, ["evaluate", "--model", str(model_dir), "--view", "f", "--component-fit", "corpus",
                                 "--senteval-dir", str(data), "--tasks", "sts14", "--output", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["component_fit"] == "corpus" and report["view"] == "f"
    result = runner.invoke(app, ["evaluate", "--model", str(model_dir), "--view", "h", "--senteval-dir", str(data)])
    assert result.exit_code != 0 and "hasviews['f','g']" in re.sub(r"[\s│]+", "", result.output)


def test_sif_baseline_records_its_choices_and_a_corpus_fit_needs_a_corpus(tmp_path, tiny_wordvecs):
    data = _mini_senteval(tmp_path / "senteval")
    out = tmp_path / "metrics.json"
    result = runner.invoke(app, ["evaluate", "--baseline", "sif", "--sif-a", "0.01", "--wordvecs", str(tiny_wordvecs),
                                 "--senteval-dir", str(data), "--tasks", "sts14", "--component-fit", "task",
                                 "--output", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["encoder"] == "fasttext-sif" and report["component_fit"] == "task" and report["sif_a"] == 0.01
    result = runner.invoke(app, ["evaluate", "--baseline", "sif", "--wordvecs", str(tiny_wordvecs),
                                 "--senteval-dir", str(data), "--component-fit", "corpus"])
    assert result.exit_code != 0 and "--pc-corpus" in re.sub(r"[\s│]+", "", result.output)
