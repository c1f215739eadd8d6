"""Fixtures for the training, Tune and study tests (the local Ray they share is tests/conftest.py's ``ray_session``):
a synthetic prepared corpus with word vectors, a synthetic STS14 over the same toy vocabulary (the real STS14
words are all out of this vocabulary, which would give constant zero vectors and no correlation), and a small
skip-thought run written as the training loop writes it (tests/skipthought_run.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from prepared_data import write_toy_sts14, write_training_data
from skipthought_run import Run, write_skipthought_run


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    return write_training_data(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def toy_senteval(tmp_path_factory) -> Path:
    return write_toy_sts14(tmp_path_factory.mktemp("senteval"))


@pytest.fixture(scope="module")
def skipthought_run(tmp_path_factory) -> Run:
    return write_skipthought_run(tmp_path_factory.mktemp("skipthought"))
