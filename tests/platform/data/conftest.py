"""Tiny raw corpora in the three supported layouts, written fresh for each test."""

from __future__ import annotations

import http.server
import threading
from functools import partial
from pathlib import Path

import pytest

from data_samples import SENTENCE_LINES, tar_gz, write_books, write_jsonl


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
