"""Vocabulary: ids by line of ``vocab.tsv`` (``word<TAB>count``), specials first, then by frequency."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = range(len(SPECIALS))


class Vocab:
    def __init__(self, words: Sequence[str], counts: Sequence[int]):
        if tuple(words[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"vocabulary must start with the specials {SPECIALS}, got {tuple(words[:4])}")
        self.words = list(words)
        self.counts = np.asarray(counts, dtype=np.int64)
        self.index = {w: i for i, w in enumerate(self.words)}
        if len(self.index) != len(self.words):
            raise ValueError("vocabulary has duplicate words")

    @classmethod
    def from_counts(cls, counts: dict[str, int], max_size: int | None = None, min_count: int = 1) -> "Vocab":
        """Most frequent first; ties broken alphabetically so the same counts always give the same ids."""
        ranked = sorted(((w, c) for w, c in counts.items() if c >= min_count and w not in SPECIALS),
                        key=lambda wc: (-wc[1], wc[0]))
        if max_size is not None:
            ranked = ranked[: max(0, max_size - len(SPECIALS))]
        return cls(list(SPECIALS) + [w for w, _ in ranked], [0] * len(SPECIALS) + [c for _, c in ranked])

    @classmethod
    def load(cls, path: str | Path) -> "Vocab":
        words, counts = [], []
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 2 or not parts[1].isdigit():
                    raise ValueError(f"{path}:{line_no}: expected 'word<TAB>count', got {line.rstrip()!r}")
                words.append(parts[0])
                counts.append(int(parts[1]))
        return cls(words, counts)

    def save(self, path: str | Path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            for w, c in zip(self.words, self.counts):
                f.write(f"{w}\t{int(c)}\n")

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def ids_in(self, other: "Vocab") -> np.ndarray:
        """Each of this vocabulary's ids as ``other``'s id of the same word, ``<unk>`` where ``other`` lacks it
        (int64, indexed by this vocabulary's ids; the specials keep theirs): how a corpus counted with its own
        vocabulary (a ``skipview data cut``) is read in another's ids."""
        return np.array([other.index.get(word, UNK_ID) for word in self.words], dtype=np.int64)

    def encode(self, tokens: Iterable[str]) -> list[int]:
        return [self.index.get(t, UNK_ID) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.words[i] for i in ids]
