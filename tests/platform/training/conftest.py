"""Fixtures for the trainer tests: a synthetic prepared corpus with word vectors, and one local Ray session per
module (``ray.init`` costs seconds on 2 cores)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from skipview.models.text import Tokenizer
from skipview.models.vocab import SPECIALS, Vocab

HERE = Path(__file__).resolve().parent


def write_prepared_corpus(root: Path, *, documents: int = 20, sentences_per_doc: int = 40,
                          words: int | list[str] = 60, dim: int = 12, seed: int = 0) -> tuple[Path, Path]:
    """A prepared corpus (the ``skipview data prepare`` layout) whose next sentence shares words with the current
    one, so a contrastive objective has something to learn, and aligned word vectors."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(words)] if isinstance(words, int) else words
    vocab = Vocab(list(SPECIALS) + words, [0] * len(SPECIALS) + [100] * len(words))
    sentences, doc_starts = [], []
    for _ in range(documents):
        doc_starts.append(len(sentences))
        topic = rng.integers(len(SPECIALS), len(vocab), size=5)
        for _ in range(sentences_per_doc):
            length = int(rng.integers(3, 12))
            ids = np.where(rng.random(length) < 0.5, rng.choice(topic, length), rng.integers(len(SPECIALS), len(vocab), length))
            sentences.append(ids.astype(np.uint32))
            if rng.random() < 0.2:
                topic = rng.integers(len(SPECIALS), len(vocab), size=5)
    corpus = root / "prepared"
    corpus.mkdir(parents=True)
    np.concatenate(sentences).tofile(corpus / "tokens.bin")
    np.save(corpus / "offsets.npy", np.concatenate([[0], np.cumsum([len(s) for s in sentences])]).astype(np.int64))
    np.save(corpus / "doc_index.npy", np.asarray(doc_starts, dtype=np.int64))
    vocab.save(corpus / "vocab.tsv")
    meta = {"sentences": len(sentences), "documents": documents, "tokenizer": Tokenizer().to_dict()}
    (corpus / "meta.json").write_text(json.dumps(meta))
    wordvecs = root / "wordvecs"
    wordvecs.mkdir()
    vectors = rng.normal(size=(len(vocab), dim)).astype(np.float32)
    vectors[: len(SPECIALS)] = 0
    np.save(wordvecs / "vectors.npy", vectors)
    vocab.save(wordvecs / "vocab.tsv")
    (wordvecs / "meta.json").write_text(json.dumps({"dim": dim, "tokenizer": Tokenizer().to_dict()}))
    return corpus, wordvecs


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory) -> tuple[Path, Path]:
    return write_prepared_corpus(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def ray_session():
    """A local Ray on 2 CPUs whose workers can import the test objective (they inherit PYTHONPATH)."""
    import ray

    paths = [str(HERE), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    sys.path.insert(0, str(HERE))
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
