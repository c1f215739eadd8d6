"""Tiny raw corpora in the three supported layouts (imported by conftest.py and the tests of this folder)."""

from __future__ import annotations

import gzip
import json
import tarfile
from pathlib import Path

REAL_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"

BOOK_A = """THE FIRST BOOK

Mr. Smith didn't go to the market. He said
"Well, I won't!" and stayed home.

It was a quiet day. The end?
Yes.
"""
BOOK_B = """Chapter One

The woman's hat was red -- very red. She couldn't
believe it.
"""
ARTICLES = [
    {"id": "a1", "body": "Shares rose 5.2% on Monday. Traders were pleased.\nThe index closed higher."},
    {"id": "a2", "body": "The U.S. economy grew. Analysts don't agree why."},
]
SENTENCE_LINES = "the first sentence .\nthe second one .\n\n\nanother document starts here .\n"


def write_books(folder: Path) -> Path:
    (folder / "books").mkdir(parents=True)
    with gzip.open(folder / "books" / "a.txt.gz", "wt", encoding="utf-8") as f:
        f.write(BOOK_A)
    (folder / "books" / "b.txt").write_text(BOOK_B, encoding="utf-8")
    (folder / "manifest.tsv").write_text("file\ttitle\n")  # not a corpus file: ignored
    return folder


def write_jsonl(path: Path, records=ARTICLES) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    return path


def tar_gz(folder: Path, archive: Path) -> Path:
    """``folder`` packed as one top-level directory, the usual way corpora are published."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    return archive


def write_generated_books(folder: Path, books: int, sentences_per_book: int, seed: int = 0) -> Path:
    """``books`` plain-text books of random sentences over a small made-up vocabulary: a corpus as large as a test
    needs (about 60 bytes a sentence), e.g. one that keeps ``prepare`` busy for seconds."""
    import random

    rng = random.Random(seed)
    words = [f"{a}{b}" for a in ("ka", "lo", "mi", "ne", "pu", "ri", "so", "tu") for b in ("n", "s", "l", "rt", "ve")]
    (folder / "books").mkdir(parents=True)
    for book in range(books):
        lines = []
        for sentence in range(sentences_per_book):
            lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(5, 14))).capitalize() + ".")
            if sentence % 6 == 5:
                lines.append("")                    # a paragraph of six sentences
        (folder / "books" / f"book{book:03d}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder
