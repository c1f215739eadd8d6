"""Loaders: exact counts on every real shared task (../shared/data/README.md), SentEval's formats for the tasks
not shipped there (written here as small files), and errors that name the task and the file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skipview.platform.evaluation.datasets import TaskDataError, load_task


@pytest.mark.parametrize("task, counts", [
    ("sts12", {"MSRpar": 750, "MSRvid": 750, "SMTeuroparl": 459, "surprise.OnWN": 750, "surprise.SMTnews": 399}),
    ("sts13", {"FNWN": 189, "headlines": 750, "OnWN": 561}),
    ("sts14", {"deft-forum": 450, "deft-news": 300, "headlines": 750, "images": 750, "OnWN": 750, "tweet-news": 750}),
    ("stsb", {"train": 5749, "dev": 1500, "test": 1379}),
    ("sickr", {"train": 4500, "dev": 500, "test": 4927}),
    ("sicke", {"train": 4500, "dev": 500, "test": 4927}),
    ("mr", {"all": 10662}), ("cr", {"all": 3775}), ("subj", {"all": 10000}),
    ("sst2", {"train": 67349, "dev": 872, "test": 1821}),
])
def test_real_task_counts(real_senteval, task, counts):
    data = load_task(task, real_senteval)
    assert {name: len(split.y) for name, split in data.splits.items()} == counts


def test_real_label_balances(real_senteval):
    assert np.bincount(load_task("sicke", real_senteval).splits["train"].y).tolist() == [1299, 2536, 665]
    assert np.bincount(load_task("sst2", real_senteval).splits["train"].y).tolist() == [29780, 37569]
    assert np.bincount(load_task("mr", real_senteval).splits["all"].y).tolist() == [5331, 5331]
    assert np.bincount(load_task("cr", real_senteval).splits["all"].y).tolist() == [1368, 2407]
    stsb = load_task("stsb", real_senteval).splits
    assert all(0 <= s.y.min() and s.y.max() <= 5 for s in stsb.values())
    sick = load_task("sickr", real_senteval).splits["test"]
    assert 1 <= sick.y.min() and sick.y.max() <= 5 and not sick.b[-1].endswith("\r")


def _write(path: Path, text: str, encoding: str = "utf-8") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding))


def test_sts15_and_sts16_formats(tmp_path):
    subsets = {"sts15": ("STS15-en-test", ["answers-forums", "answers-students", "belief", "headlines", "images"]),
               "sts16": ("STS16-en-test", ["answer-answer", "headlines", "plagiarism", "postediting",
                                           "question-question"])}
    for task, (folder, names) in subsets.items():
        for name in names:
            _write(tmp_path / "STS" / folder / f"STS.input.{name}.txt", "a b\tc d\ne f\tg h\ni j\tk l\n")
            _write(tmp_path / "STS" / folder / f"STS.gs.{name}.txt", "4.2\n\n1\n")  # unscored pair dropped
        data = load_task(task, tmp_path)
        assert list(data.splits) == names
        split = data.splits[names[0]]
        assert split.a == ["a b", "i j"] and split.b == ["c d", "k l"] and split.y.tolist() == [4.2, 1.0]


def test_mpqa_trec_mrpc_formats(tmp_path):
    _write(tmp_path / "MPQA" / "mpqa.pos", "good\nvery nice\n")
    _write(tmp_path / "MPQA" / "mpqa.neg", "bad\n")
    mpqa = load_task("mpqa", tmp_path).splits["all"]
    assert mpqa.text == ["good", "very nice", "bad"] and mpqa.y.tolist() == [1, 1, 0]

    _write(tmp_path / "TREC" / "train_5500.label",
           "DESC:manner How did serfdom develop in and then leave Russia ?\nNUM:date When was Ozzy born ?\n",
           "latin-1")
    _write(tmp_path / "TREC" / "TREC_10.label", "LOC:city Where is Caf\xe9 Mozart ?\n", "latin-1")
    trec = load_task("trec", tmp_path)
    assert trec.splits["train"].text[0] == "How did serfdom develop in and then leave Russia ?"
    assert [trec.classes[i] for i in trec.splits["train"].y] == ["DESC", "NUM"]
    assert trec.splits["test"].text == ["Where is Caf\xe9 Mozart ?"]

    header = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    _write(tmp_path / "MRPC" / "msr_paraphrase_train.txt", header + "1\t1\t2\tHe said .\tHe stated .\n"
           "0\t3\t4\tA cat .\tThe stock fell .\n")
    _write(tmp_path / "MRPC" / "msr_paraphrase_test.txt", header + "1\t5\t6\tYes .\tIndeed .\n")
    mrpc = load_task("mrpc", tmp_path)
    assert mrpc.splits["train"].a == ["He said .", "A cat ."] and mrpc.splits["train"].y.tolist() == [1, 0]
    assert mrpc.splits["test"].b == ["Indeed ."]


def test_missing_file_names_task_and_file(tmp_path):
    with pytest.raises(TaskDataError, match=r"mpqa: missing file .*MPQA/mpqa.pos"):
        load_task("mpqa", tmp_path)


def test_malformed_line_names_file_and_line(tmp_path):
    _write(tmp_path / "TREC" / "train_5500.label", "DESC:manner fine question\nno colon here\n")
    _write(tmp_path / "TREC" / "TREC_10.label", "NUM:date When ?\n")
    with pytest.raises(TaskDataError, match=r"train_5500.label:2"):
        load_task("trec", tmp_path)


def test_no_directory_given(monkeypatch):
    monkeypatch.delenv("SKIPVIEW_SENTEVAL_DIR", raising=False)
    with pytest.raises(TaskDataError, match="SKIPVIEW_SENTEVAL_DIR"):
        load_task("sts14")
