"""`skipview data fetch`: local directories and archives, http(s) from a server on 127.0.0.1, SHA256SUMS checks."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from skipview.platform.data.fetch import fetch, resolve_source
from skipview.platform.errors import FetchError


def corpus_with_sums(folder: Path) -> Path:
    (folder / "books").mkdir(parents=True)
    (folder / "books" / "a.txt").write_text("Some text.\n")
    (folder / "notes.txt").write_text("More text.\n")
    lines = [f"{hashlib.sha256((folder / n).read_bytes()).hexdigest()}  {n}" for n in ("books/a.txt", "notes.txt")]
    (folder / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    return folder


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_resolve_source():
    assert resolve_source("corpora/x", "../shared/data") == "../shared/data/corpora/x"
    assert resolve_source("corpora/x", "https://host/data/") == "https://host/data/corpora/x.tar.gz"
    assert resolve_source("/abs/x", "https://host/data") == "/abs/x"
    assert resolve_source("http://other/x.tgz", "../shared/data") == "http://other/x.tgz"
    assert resolve_source("corpora/x") == "corpora/x"


def test_local_directory_is_copied_and_verified(tmp_path):
    source = corpus_with_sums(tmp_path / "data" / "corpora" / "c")
    summary = fetch("corpora/c", tmp_path / "out", root=str(tmp_path / "data"), progress=False)
    assert tree(tmp_path / "out") == tree(source)
    assert summary["verified"] == 2 and summary["files"] == 3


def test_checksum_mismatch_and_missing_file_are_errors(tmp_path):
    source = corpus_with_sums(tmp_path / "c")
    (source / "notes.txt").write_text("tampered\n")
    with pytest.raises(FetchError, match="checksum mismatch for notes.txt"):
        fetch(str(source), tmp_path / "out", progress=False)
    (source / "notes.txt").unlink()
    with pytest.raises(FetchError, match=r"SHA256SUMS:2: listed file 'notes.txt' is missing"):
        fetch(str(source), tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()
    assert fetch(str(source), tmp_path / "out", verify=False, progress=False)["verified"] == 0


def test_http_archive_from_a_local_server(tmp_path, http_server, make_tar_gz):
    source = corpus_with_sums(tmp_path / "data" / "corpora" / "c")
    make_tar_gz(source, tmp_path / "served" / "corpora" / "c.tar.gz")
    url = http_server(tmp_path / "served")
    fetch("corpora/c", tmp_path / "out", root=url, progress=False)       # ROOT/SOURCE.tar.gz
    assert tree(tmp_path / "out") == tree(source)                         # the single top folder is stripped
    with pytest.raises(FetchError, match=r"corpora/missing.tar.gz: download failed \(HTTP Error 404"):
        fetch("corpora/missing", tmp_path / "missing", root=url, progress=False)
    (tmp_path / "served" / "junk.tar.gz").write_bytes(b"not an archive")
    with pytest.raises(FetchError, match="not a readable tar archive"):
        fetch(f"{url}/junk.tar.gz", tmp_path / "junk", progress=False)
    assert not (tmp_path / "missing").exists() and not (tmp_path / "junk").exists()
    assert [p.name for p in tmp_path.iterdir() if ".partial-" in p.name] == []


def test_missing_source_and_existing_output(tmp_path):
    with pytest.raises(FetchError, match="no such file or directory"):
        fetch(str(tmp_path / "nowhere"), tmp_path / "out", progress=False)
    corpus_with_sums(tmp_path / "c")
    fetch(str(tmp_path / "c"), tmp_path / "out", progress=False)
    with pytest.raises(FileExistsError, match="--overwrite"):
        fetch(str(tmp_path / "c"), tmp_path / "out", progress=False)
