"""MTEB's own STS evaluation of skipview encoders on local SentEval files (platform/evaluation/mteb_sts.py): a toy
STS task through MTEB's real evaluator, offline, checked against scipy; the side-by-side command; the real files."""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys

import numpy as np
import pytest
from scipy.stats import spearmanr
from typer.testing import CliRunner

pytest.importorskip("mteb", reason="MTEB is the 'st' extra (pip install 'skipview[st]')")

import mteb.abstasks.abstask  # noqa: E402

from skipview.platform.cli import app  # noqa: E402
from skipview.platform.evaluation import mteb_sts  # noqa: E402
from skipview.platform.evaluation.datasets import STS_SUBSETS, load_task  # noqa: E402

runner = CliRunner()
WORDS = ["the", "cat", "dog", "sat", "ran", "do", "n't"]  # the tiny_wordvecs vocabulary


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Any connection, name lookup or Hub dataset load fails the test: MTEB must fetch nothing."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"network or Hub access attempted: {args[:2]}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(mteb.abstasks.abstask, "load_dataset", refuse)


def toy_sts12(root, seed=0):
    """A SentEval ``STS12-en-test`` folder: each subset eight pairs of random sentences over ``WORDS`` with random
    gold scores; returns {subset: (a, b, gold)}."""
    rng = np.random.default_rng(seed)
    folder, subsets = STS_SUBSETS["sts12"]
    (root / "STS" / folder).mkdir(parents=True)
    written = {}
    for subset in subsets:
        a, b = ([" ".join(rng.choice(WORDS, rng.integers(2, 6))) for _ in range(8)] for _ in "ab")
        gold = rng.uniform(0, 5, 8).round(2)
        (root / "STS" / folder / f"STS.input.{subset}.txt").write_text("".join(f"{x}\t{y}\n" for x, y in zip(a, b)))
        (root / "STS" / folder / f"STS.gs.{subset}.txt").write_text("".join(f"{g}\n" for g in gold))
        written[subset] = (a, b, gold)
    return written


class LetterCounts:
    """A toy encoder independent of skipview: each sentence's letter counts, plus one so no vector is zero."""

    def encode(self, sentences, mode="unsupervised"):
        return np.asarray([[1 + s.count(c) for c in "abcdehnorst'"] for s in sentences], dtype=np.float32)


def cosine_spearman(a, b, gold):
    u, v = LetterCounts().encode(a), LetterCounts().encode(b)
    cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    return 100 * spearmanr(cos, gold)[0]


def test_hub_is_off_once_the_module_is_imported():
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["HF_DATASETS_OFFLINE"] == "1"


def test_mteb_scores_a_toy_sts_task_as_scipy_does(tmp_path):
    written = toy_sts12(tmp_path)
    scores = mteb_sts.evaluate(LetterCounts(), "toy/letters", tmp_path, ["sts12"])["sts12"]
    expected = {subset: cosine_spearman(*pairs) for subset, pairs in written.items()}
    assert scores["subsets"] == pytest.approx(expected, abs=1e-6)
    assert scores["main_score"] == pytest.approx(np.mean(list(expected.values())), abs=1e-6)
    assert scores["mteb_task"] == "SentEvalSTS12"


def test_a_pooled_task_is_one_spearman_over_every_pair(tmp_path):
    written = toy_sts12(tmp_path)
    a, b, gold = (np.concatenate([pairs[i] for pairs in written.values()]) for i in range(3))
    scores = mteb_sts.evaluate(LetterCounts(), "toy/letters", tmp_path, ["sts12"], pooled=True)["sts12"]
    assert scores["subsets"] == pytest.approx({"all": cosine_spearman(list(a), list(b), gold)}, abs=1e-6)


def test_the_command_puts_mteb_beside_skipview_and_they_agree(tmp_path, tiny_wordvecs, monkeypatch):
    toy_sts12(tmp_path / "senteval")
    out = tmp_path / "report" / "sts.json"
    args = ["mteb-sts", "--baseline", "wr", "--wordvecs", str(tiny_wordvecs), "--component-fit", "subset-sides",
            "--senteval-dir", str(tmp_path / "senteval"), "--tasks", "sts12", "--output", str(out)]
    monkeypatch.setattr(sys, "argv", ["/usr/bin/skipview", *args])  # what the report records as its command
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    rows = report["encoders"]["fasttext-wr"]
    assert [r["subset"] for r in rows] == [*STS_SUBSETS["sts12"][1], "mean", "all (pooled)"]
    # per subset and their mean: the same statistic, so they agree; the pooled row fits wr's component on each
    # pooled side in MTEB, on each subset's sides in skipview, so it is not compared
    assert all(r["agree"] for r in rows[:-1]) and max(abs(r["difference"]) for r in rows[:-1]) < 1e-4
    assert not rows[-1]["same_statistic"] and not rows[-1]["agree"]
    assert report["command"] == shlex.join(["skipview", *args])
    assert "| sts12 | MSRpar |" in out.with_suffix(".md").read_text()


def test_a_component_fit_mteb_cannot_reproduce_is_refused_in_one_line(tmp_path, tiny_wordvecs):
    result = runner.invoke(app, ["mteb-sts", "--baseline", "wr", "--wordvecs", str(tiny_wordvecs),
                                 "--component-fit", "task", "--senteval-dir", str(tmp_path)])
    assert result.exit_code == 2 and "'task' is not one of 'corpus', 'subset-sides'" in \
        " ".join(result.output.replace("│", " ").split())


def test_the_local_tasks_read_the_real_senteval_files(real_senteval):
    # exactly the pairs skipview's suite scores (their counts: test_datasets.py)
    for task, local in mteb_sts.LOCAL_TASKS.items():
        data = load_task(task, real_senteval)
        splits = [local.split] if local.split else list(data.splits)
        mteb_task = mteb_sts.local_task(task, real_senteval)
        mteb_task.load_data()
        assert mteb_task.metadata.hf_subsets == splits
        for subset in splits:
            rows = mteb_task.dataset[subset]["test"]
            assert rows["sentence1"] == data.splits[subset].a and rows["sentence2"] == data.splits[subset].b
            assert rows["score"] == pytest.approx(list(data.splits[subset].y))
    pooled = mteb_sts.local_task("sts14", real_senteval, pooled=True)
    pooled.load_data()
    assert pooled.metadata.hf_subsets == ["all"] and pooled.dataset["all"]["test"].num_rows == 3750
