"""``skipview data prepare``: raw corpus -> prepared-corpus directory (ARCHITECTURE.md section 2).

One streaming pass, in three steps:

1. The reader (``readers.py``) turns files into pieces (paragraphs, or sentences for the ``lines`` format) and
   groups them into batches of about ``batch_chars`` characters.
2. Worker processes split the pieces into sentences (sentencex) and tokenise them (the canonical
   :class:`~skipview.models.text.Tokenizer`). A batch comes back as its distinct words plus an array of local ids,
   so only compact arrays cross the process boundary. At most ``2 * workers + 2`` batches are in flight, and results
   are merged strictly in input order: the output does not depend on the number of workers or on the batch size.
3. The main process maps local ids to provisional ids (order of first appearance), appends them to ``tokens.bin``
   and counts words. When the input is exhausted it ranks the vocabulary (frequency, then alphabetically, specials
   first) and maps ``tokens.bin`` to the final ids in place, chunk by chunk: the store exists once on disk, never
   as a scratch file beside its final copy.

Memory therefore holds the vocabulary and a bounded number of batches, never the corpus: peak RSS grows only with
the number of distinct words (Heaps' law), not with the number of tokens. Everything is written into a staging
folder and renamed into place at the end; ``meta.json`` holds no timestamps or absolute paths, so two runs on the
same input with the same options give byte-identical directories.
"""

from __future__ import annotations

import json
import logging
import os
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from importlib.metadata import version
from multiprocessing.pool import AsyncResult
from pathlib import Path
from typing import BinaryIO

import numpy as np
from sentencex import segment  # the fastest well-kept rule-based splitter measured here (~50 MB/s per core)
from tqdm import tqdm

from skipview.models.text import Tokenizer
from skipview.models.vocab import SPECIALS, UNK_ID, Vocab
from skipview.platform.data.readers import BadInputError, InputReport, Piece, find_sources, read_pieces
from skipview.platform.data.staging import staged_directory
from skipview.platform.processes import end_pool, worker_pool

log = logging.getLogger("skipview.data")

FORMAT_VERSION = 1
DEFAULT_MAX_VOCAB = 1_000_000
_CHUNK = 1 << 22                # values per step when rewriting the scratch files
_SENTENCE_LANGUAGE = "en"


@dataclass(frozen=True)
class PrepareOptions:
    """Every setting that changes the output; all of it is stored in ``meta.json``."""

    format: str = "auto"
    text_field: str = "text"
    lowercase: bool = True
    # including the 4 specials; None keeps every word with min_count. The default bounds the vocabulary (and so the
    # word-vector table, 1.2 GB at dim 300, and every model directory) whatever the corpus size, as the papers'
    # were bounded: skip-thought trains on 20,000 words; the multi-view models read fixed fastText vectors, zero for
    # words outside fastText's table (1M words for wiki-news-300d-1M, which the paper does not name). Below ~30M
    # novel-and-news sentences no word is cut (reports/benchmarks/scale.md).
    max_vocab: int | None = DEFAULT_MAX_VOCAB
    min_count: int = 1
    max_line_bytes: int = 1 << 20
    strict: bool = False


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)))


def prepare_corpus(corpus: str | Path, out: str | Path, options: PrepareOptions = PrepareOptions(),
                   workers: int | None = None, batch_chars: int = 1 << 18, overwrite: bool = False,
                   progress: bool = True) -> dict:
    """Prepare ``corpus`` into the directory ``out``; returns the ``meta.json`` content."""
    workers = workers or default_workers()
    sources = find_sources(corpus, options.format)
    report = InputReport(strict=options.strict)
    tokenizer = Tokenizer(lowercase=options.lowercase)
    log.info("preparing %d file(s) from %s with %d worker(s)", len(sources), corpus, workers)
    with staged_directory(out, overwrite=overwrite) as folder:
        store = _TokenStore(folder)
        pieces = read_pieces(sources, report, options.text_field, options.max_line_bytes)
        bar = tqdm(desc="prepare", unit=" sent", unit_scale=True, disable=not progress, mininterval=1.0)
        with bar:
            for result, new_document_flags in _tokenize_in_order(pieces, tokenizer, workers, batch_chars):
                store.add(result, new_document_flags)
                bar.update(len(result[2]))
                bar.set_postfix_str(f"{report.text_bytes / 1e6:.0f} MB read", refresh=False)
        if store.sentences == 0:
            raise BadInputError(f"{corpus}: empty corpus, no sentence left to prepare "
                                f"(skipped: {dict(report.skipped) or 'nothing'})")
        vocab, unk_tokens = store.finish(options.max_vocab, options.min_count)
        meta = {
            "format_version": FORMAT_VERSION,
            "documents": store.documents,
            "sentences": store.sentences,
            "tokens": store.tokens,
            "mean_sentence_length": round(store.tokens / store.sentences, 4),
            "vocab_size": len(vocab),
            "word_types_seen": len(store.word_ids),
            "unk_tokens": unk_tokens,
            "empty_sentences_dropped": store.empty_sentences,
            "tokenizer": tokenizer.to_dict(),
            "sentence_splitter": {"name": "sentencex", "version": version("sentencex"),
                                  "language": _SENTENCE_LANGUAGE},
            "options": {k: v for k, v in asdict(options).items() if k != "strict"},
            "input": report.to_dict(),
        }
        (folder / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    skipped = meta["input"]["skipped"]
    log.info("prepared %s: %d documents, %d sentences, %d tokens, vocabulary %d%s", out, meta["documents"],
             meta["sentences"], meta["tokens"], meta["vocab_size"],
             f"; skipped {skipped} (see meta.json)" if skipped else "")
    return meta


def corpus_statistics(meta: dict) -> dict:
    """The numbers worth tracking as DVC metrics (deterministic, unlike timings)."""
    keys = ("documents", "sentences", "tokens", "mean_sentence_length", "vocab_size", "word_types_seen",
            "unk_tokens", "empty_sentences_dropped")
    return {**{k: meta[k] for k in keys}, "text_mb": round(meta["input"]["text_bytes"] / 1e6, 3),
            "skipped": meta["input"]["skipped"]}


# ---- step 2: sentence splitting and tokenisation in worker processes -------------------------------------------

BatchResult = tuple[list[str], np.ndarray, np.ndarray, np.ndarray, int]


def tokenize_batch(pieces: list[tuple[str, bool]], lowercase: bool) -> BatchResult:
    """(distinct words, local ids of all tokens, sentence lengths, sentences per piece, empty sentences dropped)."""
    tokenizer = Tokenizer(lowercase=lowercase)
    local: dict[str, int] = {}
    ids: list[int] = []
    lengths: list[int] = []
    per_piece: list[int] = []
    empty = 0
    for text, is_sentence in pieces:
        produced = 0
        for sentence in ((text,) if is_sentence else segment(_SENTENCE_LANGUAGE, text)):
            tokens = tokenizer(sentence)
            if not tokens:
                empty += 1
                continue
            ids.extend([local.setdefault(t, len(local)) for t in tokens])
            lengths.append(len(tokens))
            produced += 1
        per_piece.append(produced)
    return (list(local), np.asarray(ids, dtype=np.uint32), np.asarray(lengths, dtype=np.int64),
            np.asarray(per_piece, dtype=np.int64), empty)


def _batches(pieces: Iterable[Piece], batch_chars: int) -> Iterator[list[Piece]]:
    batch, size = [], 0
    for piece in pieces:
        batch.append(piece)
        size += len(piece.text)
        if size >= batch_chars:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _tokenize_in_order(pieces: Iterable[Piece], tokenizer: Tokenizer, workers: int,
                       batch_chars: int) -> Iterator[tuple[BatchResult, list[bool]]]:
    """Results in input order, with a bounded number of batches in flight (Pool.imap would read ahead unboundedly)."""
    if workers == 1:
        for batch in _batches(pieces, batch_chars):
            yield tokenize_batch([(p.text, p.is_sentence) for p in batch], tokenizer.lowercase), \
                [p.new_document for p in batch]
        return
    # The workers die with this process however it ends (a killed parent would leave them waiting forever), and a
    # stop ends them (end_pool) rather than waiting for them: a worker blocked writing a large result into the pipe
    # that the stopping parent no longer reads never finishes, and ProcessPoolExecutor's shutdown waited for it
    # (a SIGTERM'd prepare hung until SIGKILL, reports/stopping.md).
    pool = worker_pool(workers)
    in_flight: deque[tuple[AsyncResult, list[bool]]] = deque()
    try:
        for batch in _batches(pieces, batch_chars):
            payload = [(p.text, p.is_sentence) for p in batch]
            in_flight.append((pool.apply_async(tokenize_batch, (payload, tokenizer.lowercase)),
                              [p.new_document for p in batch]))
            if len(in_flight) > 2 * workers + 1:
                result, flags = in_flight.popleft()
                yield result.get(), flags
        while in_flight:
            result, flags = in_flight.popleft()
            yield result.get(), flags
        pool.close()
    finally:
        end_pool(pool)              # after close(): the workers have finished and exit; otherwise they are ended


# ---- step 3: provisional ids, counts, and the final files ------------------------------------------------------

class _TokenStore:
    def __init__(self, folder: Path):
        self.folder = folder
        self.word_ids: dict[str, int] = {}
        self.counts = np.zeros(1 << 16, dtype=np.int64)
        self.sentences = self.tokens = self.documents = self.empty_sentences = 0
        self._document_pending = False
        self._tokens = open(folder / "tokens.bin", "wb")       # provisional ids until finish() maps them
        self._lengths = open(folder / "lengths.scratch", "wb")
        self._doc_starts = open(folder / "doc_starts.scratch", "wb")

    def add(self, result: BatchResult, new_document_flags: list[bool]) -> None:
        words, local_ids, lengths, per_piece, empty = result
        to_provisional = np.fromiter((self.word_ids.setdefault(w, len(self.word_ids)) for w in words),
                                     dtype=np.uint32, count=len(words))
        if len(self.word_ids) > len(self.counts):
            self.counts = np.concatenate([self.counts, np.zeros(len(self.word_ids) * 2 - len(self.counts), np.int64)])
        self.counts[to_provisional] += np.bincount(local_ids, minlength=len(words))
        self._tokens.write(to_provisional[local_ids].tobytes())
        self._lengths.write(lengths.tobytes())
        # A document starts at the first sentence of its first piece that produced any sentence; a document
        # whose pieces produced none disappears (it would be an empty range in doc_index.npy).
        starts = []
        for new_document, produced in zip(new_document_flags, per_piece.tolist()):
            self._document_pending |= new_document
            if produced and self._document_pending:
                starts.append(self.sentences)
                self._document_pending = False
            self.sentences += produced
        self._doc_starts.write(np.asarray(starts, dtype=np.int64).tobytes())
        self.documents += len(starts)
        self.tokens += len(local_ids)
        self.empty_sentences += empty

    def finish(self, max_vocab: int | None, min_count: int) -> tuple[Vocab, int]:
        for f in (self._tokens, self._lengths, self._doc_starts):
            f.close()
        words = list(self.word_ids)
        counts = self.counts[: len(words)]
        vocab = Vocab.from_counts(dict(zip(words, counts.tolist())), max_size=max_vocab, min_count=min_count)
        if len(vocab) >= np.iinfo(np.uint32).max:
            raise ValueError(f"vocabulary of {len(vocab)} words does not fit uint32 ids; set --max-vocab")
        to_final = np.full(len(words), UNK_ID, dtype=np.uint32)
        for final_id, word in enumerate(vocab.words[len(SPECIALS):], start=len(SPECIALS)):
            to_final[self.word_ids[word]] = final_id
        unk_tokens = int(counts[to_final == UNK_ID].sum())
        vocab.save(self.folder / "vocab.tsv")

        # Plain chunked reads and writes, not memory maps: mapped pages of these big files would count towards
        # the resident set and make peak RSS grow with the corpus after all. In place: a second file of final ids
        # beside the provisional one held the store twice on disk at the peak (6.4 GB at 800M tokens).
        with open(self.folder / "tokens.bin", "r+b") as tokens:
            while len(chunk := np.fromfile(tokens, dtype=np.uint32, count=_CHUNK)):
                tokens.seek(-chunk.nbytes, os.SEEK_CUR)
                tokens.write(to_final[chunk].tobytes())
        with open(self.folder / "lengths.scratch", "rb") as lengths, \
                _npy_writer(self.folder / "offsets.npy", np.int64, self.sentences + 1) as offsets:
            end = np.zeros(1, dtype=np.int64)
            offsets.write(end.tobytes())
            while len(chunk := np.fromfile(lengths, dtype=np.int64, count=_CHUNK)):
                chunk = np.cumsum(chunk) + end[0]
                offsets.write(chunk.tobytes())
                end[0] = chunk[-1]
        with open(self.folder / "doc_starts.scratch", "rb") as starts, \
                _npy_writer(self.folder / "doc_index.npy", np.int64, self.documents) as doc_index:
            while len(chunk := np.fromfile(starts, dtype=np.int64, count=_CHUNK)):
                doc_index.write(chunk.tobytes())
        for scratch in ("lengths.scratch", "doc_starts.scratch"):
            (self.folder / scratch).unlink()
        return vocab, unk_tokens


@contextmanager
def _npy_writer(path: Path, dtype, length: int) -> Iterator[BinaryIO]:
    """An open ``.npy`` file of a 1-d array whose data the caller appends; checks that exactly ``length`` came."""
    dtype = np.dtype(dtype)
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (length,)})
        data_start = f.tell()
        yield f
        written = (f.tell() - data_start) // dtype.itemsize
    if written != length:
        raise RuntimeError(f"{path}: wrote {written} values, expected {length}")
