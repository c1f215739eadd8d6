"""Bad input to `skipview data prepare`: every case is named with its file (and line), and is either a counted,
documented skip or a non-zero exit; no case leaves an output or a half-written directory behind."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skipview.models.corpus import PreparedCorpus
from skipview.platform.data.prepare import PrepareOptions, prepare_corpus
from skipview.platform.data.readers import BadInputError

GOOD = "A good sentence here. And another one.\n"


def bad_corpus(root: Path) -> Path:
    """One good book plus one file for each kind of bad input (names say which)."""
    books = root / "books"
    books.mkdir(parents=True)
    (books / "good.txt").write_text(GOOD)
    (books / "undecodable.txt").write_bytes(b"Caf\xe9 au lait is fine.\n\nThe rest is readable.\n")
    (books / "empty.txt").write_bytes(b"")
    (books / "blank.txt").write_bytes(b"\n  \n\n")
    (books / "binary.txt").write_bytes(b"\x7fELF\x02\x01\x00\x00" + bytes(range(256)) * 4)
    (books / "long_line.txt").write_bytes(b"Short line before.\n\n" + b"x" * 3_000_000 + b"\n\nShort line after.\n")
    (books / "not_gzip.txt.gz").write_bytes(b"this is not gzip data\n")
    # large enough that whole 1 MiB blocks decompress before the damage (numbers keep it from compressing to nothing)
    whole = gzip.compress(b"".join(b"The truncated book starts well, page %d.\n" % i for i in range(100_000)))
    (books / "truncated.txt.gz").write_bytes(whole[: len(whole) // 2])
    news = root / "news.jsonl"
    news.write_text('{"text": "Valid article."}\n{not json}\n["a list"]\n{"title": "no text"}\n')
    return root


def no_leftovers(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if ".partial-" in p.name]


def test_each_bad_input_is_skipped_counted_and_named(tmp_path, caplog):
    corpus = bad_corpus(tmp_path / "raw")
    meta = prepare_corpus(corpus, tmp_path / "out", progress=False)
    assert meta["input"]["skipped"] == {
        "bad_json": 1, "binary_file": 1, "corrupt_file": 2, "empty_file": 2, "long_line": 1,
        "missing_text": 2, "undecodable": 1,
    }
    assert {(f["file"], f["reason"]) for f in meta["input"]["skipped_files"]} == {
        ("books/empty.txt", "empty_file"), ("books/blank.txt", "empty_file"),
        ("books/binary.txt", "binary_file"), ("books/not_gzip.txt.gz", "corrupt_file"),
        ("books/truncated.txt.gz", "corrupt_file"),
    }
    messages = caplog.text
    for where in ("books/undecodable.txt:1", "books/empty.txt", "books/binary.txt", "books/long_line.txt:3",
                  "books/not_gzip.txt.gz", "books/truncated.txt.gz", "news.jsonl:2", "news.jsonl:3", "news.jsonl:4"):
        assert where in messages, where
    sentences = {" ".join(s) for d in _decode(tmp_path / "out") for s in d}
    assert {"a good sentence here .", "the rest is readable .", "short line before .", "short line after .",
            "valid article ."} <= sentences
    assert not any("caf" in s for s in sentences)                       # the undecodable line is gone
    assert any("truncated book" in s for s in sentences)                 # what was read before the damage is kept
    assert max(len(s) for s in sentences) < 1000                         # the 3 MB line is not in the output


def test_strict_stops_at_the_first_bad_input_with_its_name(tmp_path):
    corpus = bad_corpus(tmp_path / "raw")
    with pytest.raises(BadInputError, match=r"books/binary.txt: binary file"):
        prepare_corpus(corpus, tmp_path / "out", PrepareOptions(strict=True), progress=False)
    assert not (tmp_path / "out").exists() and no_leftovers(tmp_path)


@pytest.mark.parametrize("make, message", [
    (lambda root: None, "no such file or directory"),
    (lambda root: root.mkdir(), "no corpus files found"),
    (lambda root: (root.mkdir(), (root / "e.txt").write_bytes(b"")), "empty corpus"),
    (lambda root: (root.mkdir(), (root / "n.jsonl").write_text('{"title": "no text"}\n')), "empty corpus"),
])
def test_unpreparable_corpus_is_an_error(tmp_path, make, message):
    make(tmp_path / "raw")
    with pytest.raises(BadInputError, match=message) as error:
        prepare_corpus(tmp_path / "raw", tmp_path / "out", progress=False)
    assert str(tmp_path / "raw") in str(error.value)
    assert not (tmp_path / "out").exists() and no_leftovers(tmp_path)


def _decode(folder: Path) -> list[list[list[str]]]:
    corpus = PreparedCorpus(folder)
    bounds = list(corpus.doc_index) + [corpus.num_sentences]
    return [[corpus.vocab.decode(corpus.sentence(i)) for i in range(a, b)] for a, b in zip(bounds, bounds[1:])]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    return subprocess.run([sys.executable, "-m", "skipview.platform.cli", "data", "prepare", *args],
                          capture_output=True, text=True, env=env)


def test_cli_exit_codes_and_messages(tmp_path):
    corpus = bad_corpus(tmp_path / "raw")
    done = _cli(str(corpus), str(tmp_path / "out"), "--no-progress", "--metrics", str(tmp_path / "m.json"))
    assert done.returncode == 0, done.stderr
    assert "skipped (binary_file) books/binary.txt" in done.stderr
    assert json.loads((tmp_path / "m.json").read_text())["skipped"]["long_line"] == 1

    strict = _cli(str(corpus), str(tmp_path / "strict"), "--strict", "--no-progress")
    assert strict.returncode == 1 and "error: books/binary.txt: binary file" in strict.stderr
    missing = _cli(str(tmp_path / "nowhere"), str(tmp_path / "x"), "--no-progress")
    assert missing.returncode == 1 and f"error: {tmp_path / 'nowhere'}: no such file or directory" in missing.stderr
    exists = _cli(str(corpus), str(tmp_path / "out"), "--no-progress")
    assert exists.returncode == 1 and "already exists (pass --overwrite" in exists.stderr
    assert not (tmp_path / "strict").exists() and not (tmp_path / "x").exists() and no_leftovers(tmp_path)
