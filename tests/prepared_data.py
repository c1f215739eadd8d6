"""Prepared corpora (the ``skipview data prepare`` layout, ARCHITECTURE.md section 2) and aligned word vectors written
directly by the tests, so model and engine tests need no raw corpus."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from skipview.models.corpus import PreparedCorpus
from skipview.models.text import Tokenizer
from skipview.models.vocab import SPECIALS, Vocab


def write_prepared_corpus(path: Path, documents: list[list[list[str]]], vocab: Vocab | None = None) -> PreparedCorpus:
    """Write documents (lists of tokenised sentences) as a prepared corpus (vocabulary from their own counts
    unless one is given, e.g. to share ids with a training corpus)."""
    path.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for doc in documents:
        for sentence in doc:
            for word in sentence:
                counts[word] = counts.get(word, 0) + 1
    vocab = vocab or Vocab.from_counts(counts)
    ids, offsets, doc_index = [], [0], []
    for doc in documents:
        doc_index.append(len(offsets) - 1)
        for sentence in doc:
            ids.extend(vocab.encode(sentence))
            offsets.append(len(ids))
    np.asarray(ids, dtype=np.uint32).tofile(path / "tokens.bin")
    np.save(path / "offsets.npy", np.asarray(offsets, dtype=np.int64))
    np.save(path / "doc_index.npy", np.asarray(doc_index, dtype=np.int64))
    vocab.save(path / "vocab.tsv")
    (path / "meta.json").write_text(json.dumps({
        "sentences": len(offsets) - 1, "documents": len(documents), "tokens": len(ids),
        "tokenizer": Tokenizer().to_dict()}))
    return PreparedCorpus(path)


def write_training_data(root: Path, *, documents: int = 20, sentences_per_doc: int = 40,
                        words: int | list[str] = 60, dim: int = 12, seed: int = 0,
                        counts: list[int] | None = None) -> tuple[Path, Path]:
    """``root/prepared`` and ``root/wordvecs``: documents that drift between topics of 5 words, so the next
    sentence shares words with the current one and a contrastive objective has something to learn. ``counts``:
    the vocabulary's corpus counts (frequency weights read them), 100 each by default."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(words)] if isinstance(words, int) else words
    vocab = Vocab(list(SPECIALS) + words, [0] * len(SPECIALS) + (counts or [100] * len(words)))
    docs = []
    for _ in range(documents):
        doc, topic = [], rng.integers(len(SPECIALS), len(vocab), size=5)
        for _ in range(sentences_per_doc):
            length = int(rng.integers(3, 12))
            ids = np.where(rng.random(length) < 0.5, rng.choice(topic, length),
                           rng.integers(len(SPECIALS), len(vocab), length))
            doc.append(vocab.decode(ids))
            if rng.random() < 0.2:
                topic = rng.integers(len(SPECIALS), len(vocab), size=5)
        docs.append(doc)
    corpus = write_prepared_corpus(root / "prepared", docs, vocab).path
    wordvecs = root / "wordvecs"
    wordvecs.mkdir()
    vectors = rng.normal(size=(len(vocab), dim)).astype(np.float32)
    vectors[: len(SPECIALS)] = 0
    np.save(wordvecs / "vectors.npy", vectors)
    vocab.save(wordvecs / "vocab.tsv")
    (wordvecs / "meta.json").write_text(json.dumps({"dim": dim, "tokenizer": Tokenizer().to_dict()}))
    return corpus, wordvecs


def write_toy_sts14(root: Path) -> Path:
    """STS14's six subsets in SentEval's layout under ``root``, over the toy vocabulary of ``write_training_data``
    (the real STS14 words are all out of it, which would give constant zero vectors and no correlation); gold =
    5 x word overlap (Jaccard), so scores vary."""
    from skipview.platform.evaluation.datasets import STS_SUBSETS

    folder, subsets = STS_SUBSETS["sts14"]
    rng = np.random.default_rng(0)
    (root / "STS" / folder).mkdir(parents=True)
    for subset in subsets:
        pairs, gold = [], []
        for _ in range(40):
            a = set(rng.integers(0, 60, size=int(rng.integers(3, 8))))
            b = set(rng.choice(sorted(a), size=int(rng.integers(0, len(a) + 1)), replace=False))
            b |= set(rng.integers(0, 60, size=int(rng.integers(1, 5))))
            pairs.append(" ".join(f"w{i}" for i in sorted(a)) + "\t" + " ".join(f"w{i}" for i in sorted(b)))
            gold.append(f"{5 * len(a & b) / len(a | b):.3f}")
        (root / "STS" / folder / f"STS.input.{subset}.txt").write_text("\n".join(pairs) + "\n")
        (root / "STS" / folder / f"STS.gs.{subset}.txt").write_text("\n".join(gold) + "\n")
    return root


def write_toy_mr(senteval: Path, rng: np.random.Generator) -> None:
    """MR in SentEval's layout over the toy vocabulary: a positive sentence leans on w0-w29, a negative on w30-w59."""
    (senteval / "MR").mkdir()
    for name, low in (("pos", 0), ("neg", 30)):
        lines = [" ".join(f"w{i}" for i in rng.integers(low, low + 30, size=6)) for _ in range(60)]
        (senteval / "MR" / f"rt-polarity.{name}").write_text("\n".join(lines) + "\n")
