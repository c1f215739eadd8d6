"""Swapping a model directory in: the target is always a whole directory (old or new), never missing."""

from __future__ import annotations

import threading

import pytest

from skipview.models import directories
from skipview.models.directories import swap_in


def make(path, text):
    path.mkdir()
    (path / "config.json").write_text(text)
    return path


def test_swap_replaces_the_old_directory_and_removes_it(tmp_path):
    target = make(tmp_path / "model", "old")
    swap_in(make(tmp_path / ".model.staging", "new"), target)
    assert (target / "config.json").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_swap_into_a_new_path(tmp_path):
    swap_in(make(tmp_path / ".staging", "new"), tmp_path / "model")
    assert (tmp_path / "model" / "config.json").read_text() == "new"


def test_a_reader_never_finds_the_directory_missing(tmp_path):
    if not directories.exchange(make(tmp_path / "a", "a"), make(tmp_path / "b", "b")):
        pytest.skip("no atomic exchange on this system: swap_in renames aside (a short gap is expected there)")
    target = make(tmp_path / "model", "0")
    stop, missing = threading.Event(), []

    def read():
        while not stop.is_set():
            if not (target / "config.json").is_file():
                missing.append(1)

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(1, 200):
        swap_in(make(tmp_path / f".staging-{i}", str(i)), target)
    stop.set()
    reader.join()
    assert (target / "config.json").read_text() == "199"
    assert not missing
