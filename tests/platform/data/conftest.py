"""Tiny raw corpora in the three supported layouts, written fresh for each test."""

from __future__ import annotations

import gzip
import http.server
import json
import tarfile
import threading
from functools import partial
from pathlib import Path

import pytest

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


@pytest.fixture
def books_corpus(tmp_path: Path) -> Path:
    return write_books(tmp_path / "books_corpus")


@pytest.fixture
def jsonl_corpus(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "news" / "articles.jsonl.gz").parent


@pytest.fixture
def lines_corpus(tmp_path: Path) -> Path:
    path = tmp_path / "lines" / "corpus.txt"
    path.parent.mkdir()
    path.write_text(SENTENCE_LINES)
    return path.parent


@pytest.fixture
def make_books():
    return write_books


@pytest.fixture
def make_jsonl():
    return write_jsonl


def tar_gz(folder: Path, archive: Path) -> Path:
    """``folder`` packed as one top-level directory, the usual way corpora are published."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    return archive


@pytest.fixture
def make_tar_gz():
    return tar_gz


@pytest.fixture
def http_server():
    """Serve directories over http on 127.0.0.1 (an ephemeral port); yields a function folder -> base URL."""
    servers = []

    def serve(folder: Path) -> str:
        handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.RequestHandlerClass.log_message = lambda *args: None
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()
