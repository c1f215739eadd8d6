"""A BookCorpus-sized raw corpus made from a real one: its documents repeated, each copy in its own order, with new
words per copy so that the vocabulary grows the way a real corpus's does. Streams; writes `skipview data prepare`'s
``lines`` format (one sentence per line, a blank line between documents: the layout BookCorpus itself ships in).

    python benchmarks/scale_corpus.py /work/main/data/novels_news/prepared data/scale/raw --copies 26

Why from the prepared corpus and not the raw files: the prepared corpus *is* the raw novels and news, sentence-split
and tokenised once; writing its sentences back as text lines costs numpy gathers instead of re-splitting 150 MB per
copy, and `prepare` reading the lines re-tokenises them to the same tokens (the tokeniser is idempotent), so copy 0
prepares to exactly the source corpus. Sentence splitting is the one cost of `prepare` this leaves out, as
BookCorpus (already one sentence per line) would.

Why new words: a corpus repeated as is keeps its vocabulary, while a real corpus's vocabulary keeps growing
(Heaps' law, V(n) = K n^beta). ``K`` and ``beta`` are fitted on the source corpus's own prefix curve (distinct words
in its first n tokens); copy k (k >= 1) then renames exactly V((k+1) T) - V(k T) words (T = the source's tokens) to
words no other copy has (``word-c<k>``). The renamed words are the rarest plain-letter words (ties in a per-copy
random order): in real text the words that keep appearing are rare ones, and a rare word renamed moves few tokens,
so the frequency profile of the common words, which training sees most, stays the source's.

Determinism: copy k depends only on (source, k, seed), so a corpus of N copies is the first N copies of a larger
one; memory holds the source's vocabulary and one document, never the output.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

from skipview.models.corpus import PreparedCorpus
from skipview.models.vocab import SPECIALS

_PLAIN_WORD = re.compile(r"[a-z]+")
_FIT_FROM_TOKENS = 100_000      # Heaps' law fits the tail of the curve; the first sentences are all new words


def heaps_fit(tokens: np.ndarray, points: int = 40) -> tuple[float, float]:
    """(K, beta) of V(n) = K n^beta, least squares in log-log over ``points`` prefixes of the token stream."""
    _, first_seen = np.unique(np.asarray(tokens), return_index=True)
    first_seen.sort()
    first = min(_FIT_FROM_TOKENS, max(len(tokens) // 100, 1))
    lengths = np.unique(np.geomspace(first, len(tokens), points).astype(np.int64))
    types = np.searchsorted(first_seen, lengths)          # distinct words among the first n tokens
    beta, log_k = np.polyfit(np.log(lengths), np.log(types), 1)
    return float(np.exp(log_k)), float(beta)


def new_words_per_copy(k_heaps: float, beta: float, tokens_per_copy: int, copy: int) -> int:
    """V((copy + 1) T) - V(copy T): the words copy ``copy`` adds to the ones before it."""
    if copy == 0:
        return 0
    return int(round(k_heaps * (((copy + 1) * tokens_per_copy) ** beta - (copy * tokens_per_copy) ** beta)))


def copy_words(words: list[str], counts: np.ndarray, renamable: np.ndarray, copy: int, new_words: int,
               seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Byte strings of every word id as copy ``copy`` writes it, followed by a space, a newline (sentence end) and
    a blank line (document end); and how many words it renamed."""
    written = list(words)
    candidates = np.flatnonzero(renamable)
    if new_words:
        rng = np.random.default_rng([seed, copy])
        rarest_first = candidates[np.argsort(counts[candidates] + rng.random(len(candidates)), kind="stable")]
        for word_id in rarest_first[:new_words]:
            written[word_id] = f"{words[word_id]}-c{copy}"
    encoded = [w.encode() for w in written]
    tables = tuple(np.array([w + end for w in encoded], dtype=object) for end in (b" ", b"\n", b"\n\n"))
    return (*tables, min(new_words, len(candidates)))


def write_copy(corpus: PreparedCorpus, tables, order: np.ndarray, path: Path) -> int:
    """Write the documents in ``order``; returns the sentences written."""
    space, line_end, document_end = tables
    offsets, tokens, doc_index = corpus.offsets, corpus.tokens, corpus.doc_index
    doc_bounds = np.append(np.asarray(doc_index), corpus.num_sentences)
    sentences = 0
    partial = path.with_suffix(".partial")
    with open(partial, "wb", buffering=1 << 22) as out:
        for doc in order:
            first, last = int(doc_bounds[doc]), int(doc_bounds[doc + 1])
            bounds = np.asarray(offsets[first: last + 1], dtype=np.int64)
            ids = np.asarray(tokens[bounds[0]: bounds[-1]])
            pieces = space[ids]
            ends = bounds[1:] - bounds[0] - 1                   # the last token of every sentence
            pieces[ends] = line_end[ids[ends]]
            pieces[-1] = document_end[ids[-1]]
            out.write(b"".join(pieces.tolist()))
            sentences += last - first
    partial.replace(path)
    return sentences


def generate(source: Path, out: Path, copies: int, seed: int = 0) -> dict:
    corpus = PreparedCorpus(source)
    words = corpus.vocab.words
    counts = corpus.vocab.counts.astype(np.float64)
    renamable = np.array([i >= len(SPECIALS) and _PLAIN_WORD.fullmatch(w) is not None
                          for i, w in enumerate(words)])
    k_heaps, beta = heaps_fit(corpus.tokens)
    tokens_per_copy = len(corpus.tokens)
    out.mkdir(parents=True, exist_ok=True)
    record = {"source": str(source), "seed": seed, "heaps": {"K": round(k_heaps, 3), "beta": round(beta, 4)},
              "source_vocab": len(words) - len(SPECIALS), "copies": []}
    for copy in range(copies):
        path = out / f"copy-{copy:04d}.txt"
        order = np.arange(corpus.num_documents) if copy == 0 else \
            np.random.default_rng([seed, copy, 1]).permutation(corpus.num_documents)
        tables = copy_words(words, counts, renamable, copy,
                            new_words_per_copy(k_heaps, beta, tokens_per_copy, copy), seed)
        sentences = write_copy(corpus, tables[:3], order, path)
        record["copies"].append({"file": path.name, "sentences": sentences, "new_words": tables[3]})
        print(json.dumps(record["copies"][-1]), flush=True)
    record["sentences"] = sum(c["sentences"] for c in record["copies"])
    record["expected_vocab"] = record["source_vocab"] + sum(c["new_words"] for c in record["copies"])
    (out.parent / f"{out.name}.generator.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="a prepared corpus (skipview data prepare)")
    parser.add_argument("out", type=Path, help="raw folder to write (copy-NNNN.txt, lines format)")
    parser.add_argument("--copies", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    record = generate(args.source, args.out, args.copies, args.seed)
    print(json.dumps({k: v for k, v in record.items() if k != "copies"}, indent=2))


if __name__ == "__main__":
    main()
