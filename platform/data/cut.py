"""``skipview data cut``: a prepared corpus cut to whole documents in a seeded order, for learning curves.

The documents of the source corpus are put in one order drawn from ``seed``; the cut is the shortest prefix of that
order holding at least ``sentences`` sentences (every document when the corpus has fewer, or when ``sentences`` is
0). So cuts of the same source and seed are nested: each is a prefix of every larger one, and a model trained on a
larger cut has read every sentence of the smaller one. Documents stay whole: no training example crosses a
document (``doc_index.npy``), and a cut document is never half a book. ``rest=True`` writes the documents the cut
leaves out instead, in the same order: a held-out slice that no model trained on the cut has read.

The result is a prepared corpus like ``skipview data prepare``'s (ARCHITECTURE.md section 2), as preparing only the
cut's documents would make it: the vocabulary is counted again on the cut (SIF and uSIF weight words by these counts)
and ranked and capped as the source was (its ``max_vocab`` and ``min_count``), so ids differ between cuts. Its
``meta.json`` keeps the source's tokenizer, splitter, options and raw input, and adds a ``cut`` block (seed, sentences
asked for, the source's size and vocabulary checksum); no path or time, so the same source, size and seed give
byte-identical directories. Written aside and swapped in (``staging.py``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np

from skipview.models.corpus import PreparedCorpus
from skipview.models.vocab import SPECIALS, UNK_ID, Vocab
from skipview.platform.data.readers import BadInputError
from skipview.platform.data.staging import staged_directory

log = logging.getLogger("skipview.data")


def document_order(documents: int, seed: int) -> np.ndarray:
    """The documents' order every cut of a corpus with ``documents`` documents and this ``seed`` is a prefix of."""
    return np.random.default_rng(seed).permutation(documents)


def cut_corpus(prepared: str | Path, out: str | Path, sentences: int, seed: int, overwrite: bool = False,
               rest: bool = False) -> dict:
    """Write the cut of ``prepared`` (at least ``sentences`` sentences of whole documents in the seeded order; 0 =
    every document) to ``out``, or with ``rest`` the documents it leaves out; returns its ``meta.json`` content."""
    if sentences < 0:
        raise BadInputError(f"--sentences {sentences}: give a number of sentences >= 1 (0 = every document)")
    try:
        source = PreparedCorpus(prepared)
    except (FileNotFoundError, ValueError) as error:
        raise BadInputError(str(error)) from None
    bounds = np.append(np.asarray(source.doc_index, dtype=np.int64), source.num_sentences)
    order = document_order(source.num_documents, seed)
    reached = np.cumsum(np.diff(bounds)[order])
    wanted = sentences or source.num_sentences
    cut = min(int(np.searchsorted(reached, wanted)) + 1, len(order))
    if reached[cut - 1] < wanted:
        log.info("%s has %d sentences, fewer than the %d asked for: the cut is every document", prepared,
                 source.num_sentences, wanted)
    kept = order[cut:] if rest else order[:cut]
    if len(kept) == 0:
        raise BadInputError(f"--rest of a cut of {wanted} sentences of {prepared} is empty: the cut holds every "
                            "document")

    counts = np.zeros(len(source.vocab), dtype=np.int64)
    for doc in kept:
        counts += np.bincount(source.tokens[source.offsets[bounds[doc]]: source.offsets[bounds[doc + 1]]],
                              minlength=len(counts))
    options = source.meta["options"]
    seen = {word: int(count) for word, count in zip(source.vocab.words[len(SPECIALS):],
                                                    counts[len(SPECIALS):].tolist()) if count}
    vocab = Vocab.from_counts(seen, max_size=options["max_vocab"], min_count=options["min_count"])
    to_cut = source.vocab.ids_in(vocab).astype(np.uint32)

    with staged_directory(out, overwrite=overwrite) as folder:
        offsets, doc_index, written, tokens, unk = [np.zeros(1, dtype=np.int64)], [], 0, 0, 0
        with open(folder / "tokens.bin", "wb") as token_file:
            for doc in kept:
                first, last = bounds[doc], bounds[doc + 1]
                ids = to_cut[source.tokens[source.offsets[first]: source.offsets[last]]]
                token_file.write(ids.tobytes())
                doc_index.append(written)
                written += int(last - first)
                offsets.append(np.asarray(source.offsets[first + 1: last + 1], dtype=np.int64)
                               - source.offsets[first] + tokens)
                tokens += len(ids)
                unk += int((ids == UNK_ID).sum())
        offsets = np.concatenate(offsets)
        np.save(folder / "offsets.npy", offsets)
        np.save(folder / "doc_index.npy", np.asarray(doc_index, dtype=np.int64))
        vocab.save(folder / "vocab.tsv")
        meta = {
            "format_version": source.meta["format_version"],
            "documents": len(kept),
            "sentences": len(offsets) - 1,
            "tokens": tokens,
            "mean_sentence_length": round(tokens / (len(offsets) - 1), 4),
            "vocab_size": len(vocab),
            "word_types_seen": len(seen),
            "unk_tokens": unk,
            "empty_sentences_dropped": 0,     # prepare's count; a cut drops no sentence
            **{key: source.meta[key] for key in ("tokenizer", "sentence_splitter", "options", "input")},
            "cut": {"seed": seed, "sentences_asked": sentences, "source_documents": source.num_documents,
                    "source_sentences": source.num_sentences,
                    "source_vocab_sha256": hashlib.sha256((source.path / "vocab.tsv").read_bytes()).hexdigest(),
                    # only where set: a cut's own bytes stay as they were, so DVC sees the curve's cuts unchanged
                    **({"rest": True} if rest else {})},
        }
        (folder / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    log.info("cut %s: %d of %d documents, %d of %d sentences, %d tokens, vocabulary %d", out, meta["documents"],
             source.num_documents, meta["sentences"], source.num_sentences, tokens, len(vocab))
    return meta


def cut_statistics(meta: dict) -> dict:
    """The numbers worth tracking as DVC metrics (the learning curve's x axis among them)."""
    keys = ("documents", "sentences", "tokens", "mean_sentence_length", "vocab_size", "unk_tokens")
    return {**{key: meta[key] for key in keys}, "seed": meta["cut"]["seed"],
            "sentences_asked": meta["cut"]["sentences_asked"], "source_sentences": meta["cut"]["source_sentences"]}
