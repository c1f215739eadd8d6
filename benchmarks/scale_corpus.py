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
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from skipview.models.corpus import PreparedCorpus
from skipview.models.vocab import SPECIALS, Vocab

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


def renamed_words(counts: np.ndarray, renamable: np.ndarray, copy: int, new_words: int, seed: int) -> np.ndarray:
    """Ids of the words copy ``copy`` writes as new words: the ``new_words`` rarest renamable ones, ties in a
    per-copy random order."""
    candidates = np.flatnonzero(renamable)
    if not new_words:
        return candidates[:0]
    rng = np.random.default_rng([seed, copy])
    return candidates[np.argsort(counts[candidates] + rng.random(len(candidates)), kind="stable")][:new_words]


def document_order(num_documents: int, copy: int, seed: int) -> np.ndarray:
    """Copy 0 keeps the source's order (it is the source corpus); every other copy has its own."""
    return np.arange(num_documents) if copy == 0 else np.random.default_rng([seed, copy, 1]).permutation(num_documents)


class Plan:
    """What every copy holds: the source's documents in the copy's order, with the copy's renamed words."""

    def __init__(self, source: Path, seed: int = 0):
        self.corpus = PreparedCorpus(source)
        self.seed = seed
        self.words = self.corpus.vocab.words
        self.counts = self.corpus.vocab.counts
        self.renamable = np.array([i >= len(SPECIALS) and _PLAIN_WORD.fullmatch(w) is not None
                                   for i, w in enumerate(self.words)])
        self.heaps = heaps_fit(self.corpus.tokens)
        self.doc_bounds = np.append(np.asarray(self.corpus.doc_index), self.corpus.num_sentences)

    def renamed(self, copy: int) -> np.ndarray:
        wanted = new_words_per_copy(*self.heaps, len(self.corpus.tokens), copy)
        return renamed_words(self.counts.astype(np.float64), self.renamable, copy, wanted, self.seed)

    def documents(self, copy: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(token ids, sentence ends relative to the document) of each document, in the copy's order."""
        offsets, tokens = self.corpus.offsets, self.corpus.tokens
        for doc in document_order(self.corpus.num_documents, copy, self.seed):
            first, last = int(self.doc_bounds[doc]), int(self.doc_bounds[doc + 1])
            bounds = np.asarray(offsets[first: last + 1], dtype=np.int64)
            yield np.asarray(tokens[bounds[0]: bounds[-1]]), bounds[1:] - bounds[0]


def write_copy(plan: Plan, copy: int, path: Path) -> tuple[int, int]:
    """Copy ``copy`` as text lines (blank line after each document); (sentences written, words renamed)."""
    written = list(plan.words)
    renamed = plan.renamed(copy)
    for word_id in renamed:
        written[word_id] = f"{plan.words[word_id]}-c{copy}"
    encoded = [w.encode() for w in written]
    space, line_end, document_end = (np.array([w + end for w in encoded], dtype=object)
                                     for end in (b" ", b"\n", b"\n\n"))
    sentences = 0
    partial = path.with_suffix(".partial")
    with open(partial, "wb", buffering=1 << 22) as out:
        for ids, ends in plan.documents(copy):
            pieces = space[ids]
            pieces[ends - 1] = line_end[ids[ends - 1]]          # the last token of every sentence
            pieces[-1] = document_end[ids[-1]]
            out.write(b"".join(pieces.tolist()))
            sentences += len(ends)
    partial.replace(path)
    return sentences, len(renamed)


def generate(source: Path, out: Path, copies: int, seed: int = 0) -> dict:
    plan = Plan(source, seed)
    out.mkdir(parents=True, exist_ok=True)
    record = _record(plan, source, seed)
    for copy in range(copies):
        path = out / f"copy-{copy:04d}.txt"
        sentences, renamed = write_copy(plan, copy, path)
        record["copies"].append({"file": path.name, "sentences": sentences, "new_words": renamed})
        print(json.dumps(record["copies"][-1]), flush=True)
    record["sentences"] = sum(c["sentences"] for c in record["copies"])
    record["expected_vocab"] = record["source_vocab"] + sum(c["new_words"] for c in record["copies"])
    (out.parent / f"{out.name}.generator.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def write_prepared(source: Path, out: Path, copies: int, seed: int = 0) -> dict:
    """What `skipview data prepare --format lines --max-vocab 0` makes of ``generate``'s folder, written directly
    (numpy gathers, no tokenising): for measuring training at sizes whose prepare would outlast the session. The
    files are the same byte for byte but ``meta.json``, which names the generator instead of the input files
    (tests/benchmarks/test_scale_corpus.py)."""
    plan = Plan(source, seed)
    renamed = [plan.renamed(copy) for copy in range(copies)]
    # every word's count over all copies: the source's, once per copy that keeps it
    kept_copies = np.full(len(plan.words), copies, dtype=np.int64)
    new_words, new_counts = [], []
    for copy, ids in enumerate(renamed):
        kept_copies[ids] -= 1
        new_words += [f"{plan.words[i]}-c{copy}" for i in ids]
        new_counts.append(plan.counts[ids])
    counts = np.concatenate([plan.counts * kept_copies, *new_counts])
    words = list(plan.words) + new_words
    vocab = Vocab.from_counts(dict(zip(words[len(SPECIALS):], counts[len(SPECIALS):].tolist())))
    final_id = np.array([*range(len(SPECIALS)), *(vocab.index[w] for w in words[len(SPECIALS):])], dtype=np.uint32)
    first_new = len(plan.words) + np.cumsum([0, *map(len, renamed)])      # where each copy's new words begin
    out.mkdir(parents=True, exist_ok=True)
    sentences = tokens = documents = 0
    with open(out / "tokens.bin", "wb") as token_file, open(out / "lengths.tmp", "wb") as lengths, \
            open(out / "starts.tmp", "wb") as starts:
        for copy in range(copies):
            to_final = final_id[:len(plan.words)].copy()
            to_final[renamed[copy]] = final_id[first_new[copy]: first_new[copy + 1]]
            for ids, ends in plan.documents(copy):
                token_file.write(to_final[ids].tobytes())
                starts.write(np.int64(sentences).tobytes())
                lengths.write(np.diff(ends, prepend=0).tobytes())
                sentences, tokens, documents = sentences + len(ends), tokens + len(ids), documents + 1
    offsets = np.concatenate([[0], np.cumsum(np.fromfile(out / "lengths.tmp", dtype=np.int64))])
    np.save(out / "offsets.npy", offsets)
    np.save(out / "doc_index.npy", np.fromfile(out / "starts.tmp", dtype=np.int64))
    for scratch in ("lengths.tmp", "starts.tmp"):
        (out / scratch).unlink()
    vocab.save(out / "vocab.tsv")
    meta = {"format_version": 1, "documents": documents, "sentences": sentences, "tokens": tokens,
            "mean_sentence_length": round(tokens / sentences, 4), "vocab_size": len(vocab),
            "word_types_seen": len(vocab) - len(SPECIALS), "unk_tokens": 0, "empty_sentences_dropped": 0,
            "tokenizer": plan.corpus.meta["tokenizer"],
            "input": {"sha256": plan.corpus.meta.get("input", {}).get("sha256"), "skipped": {}},
            "generated_by": {**_record(plan, source, seed), "copies": copies}}
    (out / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


def _record(plan: Plan, source: Path, seed: int) -> dict:
    return {"source": str(source), "seed": seed, "heaps": {"K": round(plan.heaps[0], 3),
                                                           "beta": round(plan.heaps[1], 4)},
            "source_vocab": len(plan.words) - len(SPECIALS), "copies": []}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="a prepared corpus (skipview data prepare)")
    parser.add_argument("out", type=Path, help="raw folder to write (copy-NNNN.txt, lines format)")
    parser.add_argument("--copies", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prepared", action="store_true",
                        help="write OUT as the prepared corpus `skipview data prepare` would make of the raw folder")
    args = parser.parse_args()
    if args.prepared:
        meta = write_prepared(args.source, args.out, args.copies, args.seed)
        print(json.dumps({k: v for k, v in meta.items() if k != "generated_by"}, indent=2))
        return
    record = generate(args.source, args.out, args.copies, args.seed)
    print(json.dumps({k: v for k, v in record.items() if k != "copies"}, indent=2))


if __name__ == "__main__":
    main()
