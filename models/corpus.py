"""Read-only view of a prepared corpus directory (the contract written by ``skipview data prepare``).

``tokens.bin`` uint32 ids back to back, ``offsets.npy`` (sentence i is ``tokens[offsets[i]:offsets[i+1]]``),
``doc_index.npy`` (first sentence of each document), ``vocab.tsv``, ``meta.json``. Everything is memory-mapped,
so opening a corpus costs no memory proportional to its size and every Ray worker on a node shares the pages.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

import numpy as np

from skipview.models.arrays import load_npy
from skipview.models.text import Tokenizer
from skipview.models.vocab import Vocab

FILES = ("tokens.bin", "offsets.npy", "doc_index.npy", "vocab.tsv", "meta.json")


class PreparedCorpus:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        missing = [f for f in FILES if not (self.path / f).is_file()]
        if missing:
            raise FileNotFoundError(f"{self.path} is not a prepared corpus: missing {', '.join(missing)} "
                                    "(make one with `skipview data prepare`)")
        self.meta = json.loads((self.path / "meta.json").read_text())
        self.tokens = np.memmap(self.path / "tokens.bin", dtype=np.uint32, mode="r")
        self.offsets = load_npy(self.path / "offsets.npy", mmap="r", remake="`skipview data prepare`")
        self.doc_index = load_npy(self.path / "doc_index.npy", mmap="r", remake="`skipview data prepare`")
        if len(self.offsets) < 1 or int(self.offsets[-1]) != len(self.tokens):
            raise ValueError(f"{self.path}: offsets.npy does not end at the length of tokens.bin (corrupt corpus)")

    @cached_property
    def vocab(self) -> Vocab:
        return Vocab.load(self.path / "vocab.tsv")

    @cached_property
    def tokenizer(self) -> Tokenizer:
        return Tokenizer.from_dict(self.meta["tokenizer"])

    @property
    def num_sentences(self) -> int:
        return len(self.offsets) - 1

    @property
    def num_documents(self) -> int:
        return len(self.doc_index)

    def sentence(self, i: int) -> np.ndarray:
        return np.asarray(self.tokens[self.offsets[i]: self.offsets[i + 1]])

    def read_sentences(self, indices: Iterable[int], max_len: int | None = None) -> list[np.ndarray]:
        """Copies of the sentences ``indices`` (each cut at ``max_len`` tokens), read from the files rather than
        through the maps. A sample scattered over the corpus touches pages all over ``tokens.bin`` and
        ``offsets.npy``; through the maps each touched page (with the kernel's fault-around, up to 64 KB) stays in
        this process's resident set while the corpus is open, so the post-processing fit's 20,000 sentences held
        ~0.5 GB more at 30.7M sentences than at 1.2M (reports/benchmarks/scale.md). Read, they are page cache only."""
        cap = np.iinfo(np.int64).max if max_len is None else max_len
        sentences = []
        with open(self.path / "offsets.npy", "rb") as offsets, open(self.path / "tokens.bin", "rb") as tokens:
            for i in indices:
                begin, end = np.frombuffer(os.pread(offsets.fileno(), 16, self.offsets.offset + 8 * int(i)),
                                           dtype=np.int64).tolist()
                count = min(end - begin, cap)
                sentences.append(np.frombuffer(os.pread(tokens.fileno(), 4 * count, 4 * begin), dtype=np.uint32))
        return sentences

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def document_ids(self) -> np.ndarray:
        """Document number of every sentence (int64, one entry per sentence)."""
        ids = np.zeros(self.num_sentences, dtype=np.int64)
        ids[np.asarray(self.doc_index[1:])] = 1
        return np.cumsum(ids)
