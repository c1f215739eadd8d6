"""Shared fixtures: the real SentEval directory (skip when absent) and a tiny word-vector directory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from skipview.models.text import Tokenizer
from skipview.models.vocab import SPECIALS, Vocab

# The test problems are tiny: with several threads on a shared 2-core machine, thread synchronisation costs
# 100x the arithmetic of such small ops.
torch.set_num_threads(1)

REAL_SENTEVAL = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "senteval" / "downstream"


@pytest.fixture
def real_senteval() -> Path:
    if not REAL_SENTEVAL.is_dir():
        pytest.skip(f"real SentEval data not found at {REAL_SENTEVAL.resolve()} (../shared/data from the repo root)")
    return REAL_SENTEVAL.resolve()


def write_wordvecs(path: Path, vectors: dict[str, list[float]]) -> Path:
    """A ``skipview data wordvecs`` directory: specials get zero rows, like words without a vector."""
    path.mkdir(parents=True, exist_ok=True)
    dim = len(next(iter(vectors.values())))
    vocab = Vocab(list(SPECIALS) + list(vectors), [0] * len(SPECIALS) + [10] * len(vectors))
    matrix = np.zeros((len(vocab), dim), dtype=np.float32)
    for word, vec in vectors.items():
        matrix[vocab.index[word]] = vec
    np.save(path / "vectors.npy", matrix)
    vocab.save(path / "vocab.tsv")
    (path / "meta.json").write_text(json.dumps({"dim": dim, "tokenizer": Tokenizer().to_dict()}))
    return path


@pytest.fixture
def tiny_wordvecs(tmp_path) -> Path:
    return write_wordvecs(tmp_path / "wordvecs", {
        "the": [1.0, 1.0, 0.0], "cat": [1.0, 0.0, 0.0], "dog": [0.9, 0.1, 0.0], "sat": [0.0, 1.0, 0.0],
        "ran": [0.0, 0.9, 0.1], "do": [0.0, 0.0, 1.0], "n't": [0.0, 0.0, -1.0],
    })
