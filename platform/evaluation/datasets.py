"""Loaders for SentEval's ``data/downstream`` layout, one function per task family.

The file names, column layouts and label sets are SentEval's (facebookresearch/SentEval, ``senteval/*.py`` and
``data/downstream/get_transfer_data.bash``), so a directory prepared for SentEval works unchanged. Sentences are
returned as the raw strings of the files: encoders tokenise them with the canonical ``Tokenizer``, which maps
SentEval's Moses/PTB dialects to the corpus side's form.

A missing or malformed file raises ``TaskDataError`` naming the task, the file and the line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SENTEVAL_DIR_ENV = "SKIPVIEW_SENTEVAL_DIR"

STS_SUBSETS = {
    "sts12": ("STS12-en-test", ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews")),
    "sts13": ("STS13-en-test", ("FNWN", "headlines", "OnWN")),  # the SMT subset is not distributed
    "sts14": ("STS14-en-test", ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news")),
    "sts15": ("STS15-en-test", ("answers-forums", "answers-students", "belief", "headlines", "images")),
    "sts16": ("STS16-en-test", ("answer-answer", "headlines", "plagiarism", "postediting", "question-question")),
}
TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
SICK_ENTAILMENT = ("ENTAILMENT", "NEUTRAL", "CONTRADICTION")
# positive file, negative file for the single-sentence binary tasks (SentEval's BinaryClassifierEval)
BINARY_FILES = {
    "mr": ("MR/rt-polarity.pos", "MR/rt-polarity.neg"),
    "cr": ("CR/custrev.pos", "CR/custrev.neg"),
    "subj": ("SUBJ/subj.objective", "SUBJ/subj.subjective"),
    "mpqa": ("MPQA/mpqa.pos", "MPQA/mpqa.neg"),
}


class TaskDataError(FileNotFoundError):
    """A task's file is missing or malformed; the message names the task and the file."""


@dataclass
class Pairs:
    """Sentence pairs with a target: a similarity score, or a class id."""

    a: list[str]
    b: list[str]
    y: np.ndarray


@dataclass
class Sentences:
    """Single sentences with class ids."""

    text: list[str]
    y: np.ndarray


@dataclass
class TaskData:
    """Splits of one task (``train``/``dev``/``test`` or STS subset names), in file order."""

    splits: dict[str, Pairs | Sentences]
    classes: tuple[str, ...] = field(default=())


def senteval_dir(path: str | os.PathLike | None = None) -> Path:
    """``path``, or ``$SKIPVIEW_SENTEVAL_DIR``; the directory that holds SentEval's ``data/downstream`` tree."""
    chosen = path if path is not None else os.environ.get(SENTEVAL_DIR_ENV)
    if not chosen:
        raise TaskDataError(f"no SentEval data directory: pass --senteval-dir or set ${SENTEVAL_DIR_ENV} "
                            "(the folder that holds STS/, SICK/, MR/, ...)")
    root = Path(chosen)
    if not root.is_dir():
        raise TaskDataError(f"SentEval data directory {root} does not exist")
    return root


def _lines(task: str, path: Path, encoding: str = "utf-8") -> list[str]:
    """Lines without their terminators. Splits on ``\\n`` only: ``str.splitlines`` would also split on U+0085,
    which Latin-1 files contain, and change the counts."""
    if not path.is_file():
        raise TaskDataError(f"{task}: missing file {path}")
    text = path.read_text(encoding=encoding)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def _columns(task: str, path: Path, line_no: int, line: str, needed: int) -> list[str]:
    cols = line.split("\t")
    if len(cols) < needed:
        raise TaskDataError(f"{task}: {path}:{line_no}: expected at least {needed} tab-separated columns, "
                            f"got {len(cols)}")
    return cols


def _float(task: str, path: Path, line_no: int, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise TaskDataError(f"{task}: {path}:{line_no}: score {value!r} is not a number") from None


def load_sts(task: str, root: Path) -> TaskData:
    """STS12-16: ``STS.input.<subset>.txt`` (sentence1<TAB>sentence2) and ``STS.gs.<subset>.txt`` (one score per
    line); pairs with an empty gold score are dropped, as SentEval does."""
    folder, subsets = STS_SUBSETS[task]
    splits = {}
    for subset in subsets:
        inputs = root / "STS" / folder / f"STS.input.{subset}.txt"
        gold = root / "STS" / folder / f"STS.gs.{subset}.txt"
        pairs, scores = _lines(task, inputs), _lines(task, gold)
        if len(pairs) != len(scores):
            raise TaskDataError(f"{task}: {inputs} has {len(pairs)} lines but {gold} has {len(scores)}")
        a, b, y = [], [], []
        for line_no, (pair, score) in enumerate(zip(pairs, scores), 1):
            if not score.strip():
                continue
            cols = _columns(task, inputs, line_no, pair, 2)
            a.append(cols[0])
            b.append(cols[1])
            y.append(_float(task, gold, line_no, score.strip()))
        splits[subset] = Pairs(a, b, np.asarray(y))
    return TaskData(splits)


def load_stsb(task: str, root: Path) -> TaskData:
    """STS Benchmark: ``sts-{train,dev,test}.csv``, columns 4/5/6 are score, sentence 1, sentence 2."""
    splits = {}
    for split in ("train", "dev", "test"):
        path = root / "STS" / "STSBenchmark" / f"sts-{split}.csv"
        a, b, y = [], [], []
        for line_no, line in enumerate(_lines(task, path), 1):
            cols = _columns(task, path, line_no, line, 7)
            y.append(_float(task, path, line_no, cols[4]))
            a.append(cols[5])
            b.append(cols[6])
        splits[split] = Pairs(a, b, np.asarray(y))
    return TaskData(splits)


def _sick(task: str, root: Path, column: int) -> list[tuple[str, list[list[str]], Path]]:
    """(split, [sentence A, sentence B, column] rows, file) for SICK's three files."""
    out = []
    for split, name in (("train", "SICK_train.txt"), ("dev", "SICK_trial.txt"), ("test", "SICK_test_annotated.txt")):
        path = root / "SICK" / name
        lines = _lines(task, path)[1:]  # header
        rows = [_columns(task, path, i, line, 5) for i, line in enumerate(lines, 2)]
        out.append((split, [[r[1], r[2], r[column]] for r in rows], path))
    return out


def load_sick_relatedness(task: str, root: Path) -> TaskData:
    """SICK-R: ``SICK_{train,trial,test_annotated}.txt``, relatedness in [1, 5] (column 3)."""
    splits = {}
    for split, rows, path in _sick(task, root, 3):
        y = [_float(task, path, i, r[2]) for i, r in enumerate(rows, 2)]
        splits[split] = Pairs([r[0] for r in rows], [r[1] for r in rows], np.asarray(y))
    return TaskData(splits)


def load_sick_entailment(task: str, root: Path) -> TaskData:
    """SICK-E: same files, label ENTAILMENT / NEUTRAL / CONTRADICTION (column 4)."""
    splits = {}
    for split, rows, path in _sick(task, root, 4):
        for i, r in enumerate(rows, 2):
            if r[2] not in SICK_ENTAILMENT:
                raise TaskDataError(f"{task}: {path}:{i}: unknown label {r[2]!r}, expected one of {SICK_ENTAILMENT}")
        y = np.asarray([SICK_ENTAILMENT.index(r[2]) for r in rows])
        splits[split] = Pairs([r[0] for r in rows], [r[1] for r in rows], y)
    return TaskData(splits, SICK_ENTAILMENT)


def load_mrpc(task: str, root: Path) -> TaskData:
    """MRPC: ``msr_paraphrase_{train,test}.txt``, a header then ``Quality<TAB>#1 ID<TAB>#2 ID<TAB>#1 String<TAB>
    #2 String`` (4076 train / 1725 test pairs)."""
    splits = {}
    for split in ("train", "test"):
        path = root / "MRPC" / f"msr_paraphrase_{split}.txt"
        a, b, y = [], [], []
        for line_no, line in enumerate(_lines(task, path, encoding="utf-8-sig")[1:], 2):
            cols = _columns(task, path, line_no, line, 5)
            if cols[0] not in ("0", "1"):
                raise TaskDataError(f"{task}: {path}:{line_no}: quality {cols[0]!r} is not 0 or 1")
            y.append(int(cols[0]))
            a.append(cols[3])
            b.append(cols[4])
        splits[split] = Pairs(a, b, np.asarray(y))
    return TaskData(splits, ("not paraphrase", "paraphrase"))


def load_trec(task: str, root: Path) -> TaskData:
    """TREC: ``train_5500.label`` / ``TREC_10.label`` (Latin-1), lines ``COARSE:fine question words``; the six
    coarse classes are the targets (5452 train / 500 test)."""
    splits = {}
    for split, name in (("train", "train_5500.label"), ("test", "TREC_10.label")):
        path = root / "TREC" / name
        text, y = [], []
        for line_no, line in enumerate(_lines(task, path, encoding="latin-1"), 1):
            label, sep, rest = line.strip().partition(":")
            words = rest.split(" ", 1)
            if not sep or label not in TREC_CLASSES or len(words) != 2:
                raise TaskDataError(f"{task}: {path}:{line_no}: expected 'COARSE:fine question', got {line!r}")
            y.append(TREC_CLASSES.index(label))
            text.append(words[1])
        splits[split] = Sentences(text, np.asarray(y))
    return TaskData(splits, TREC_CLASSES)


def load_binary(task: str, root: Path) -> TaskData:
    """MR, CR, SUBJ, MPQA: one sentence per line in a positive and a negative file (Latin-1, as SentEval reads
    them); empty lines are kept, as in SentEval's counts (CR has four)."""
    positive, negative = (_lines(task, root / f, encoding="latin-1") for f in BINARY_FILES[task])
    y = np.r_[np.ones(len(positive), dtype=np.int64), np.zeros(len(negative), dtype=np.int64)]
    return TaskData({"all": Sentences(positive + negative, y)}, ("negative", "positive"))


def load_sst2(task: str, root: Path) -> TaskData:
    """SST-2: ``SST/binary/sentiment-{train,dev,test}``, lines ``sentence<TAB>label``."""
    splits = {}
    for split in ("train", "dev", "test"):
        path = root / "SST" / "binary" / f"sentiment-{split}"
        text, y = [], []
        for line_no, line in enumerate(_lines(task, path), 1):
            cols = _columns(task, path, line_no, line.strip(), 2)
            if cols[1] not in ("0", "1"):
                raise TaskDataError(f"{task}: {path}:{line_no}: label {cols[1]!r} is not 0 or 1")
            text.append(cols[0])
            y.append(int(cols[1]))
        splits[split] = Sentences(text, np.asarray(y))
    return TaskData(splits, ("negative", "positive"))


LOADERS = {
    **{name: load_sts for name in STS_SUBSETS},
    "stsb": load_stsb, "stsb_unsup": load_stsb,
    "sickr": load_sick_relatedness, "sickr_unsup": load_sick_relatedness,
    "sicke": load_sick_entailment,
    "mrpc": load_mrpc, "trec": load_trec, "sst2": load_sst2,
    **{name: load_binary for name in BINARY_FILES},
}


def load_task(task: str, root: str | os.PathLike | None = None) -> TaskData:
    if task not in LOADERS:
        raise KeyError(f"unknown task {task!r}; known: {', '.join(LOADERS)}")
    return LOADERS[task](task, senteval_dir(root))
