"""`skipview data prepare`: output checked against a brute-force reference, determinism, formats, vocabulary cuts."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sentencex import segment
from typer.testing import CliRunner

from skipview.models.corpus import PreparedCorpus
from skipview.models.text import Tokenizer
from skipview.models.vocab import SPECIALS, UNK
from skipview.platform.cli import app
from skipview.platform.data.prepare import PrepareOptions, prepare_corpus

from data_samples import ARTICLES, BOOK_A, BOOK_B, REAL_DATA


def reference_sentences(documents: list[list[str]], split: bool = True) -> list[list[list[str]]]:
    """Per document, its sentences as token lists: the obvious in-memory computation."""
    tokenize = Tokenizer()
    out = []
    for paragraphs in documents:
        sentences = []
        for paragraph in paragraphs:
            for sentence in (segment("en", paragraph) if split else [paragraph]):
                if tokens := tokenize(sentence):
                    sentences.append(tokens)
        out.append(sentences)
    return out


def book_paragraphs(text: str) -> list[str]:
    return [" ".join(line.strip() for line in block.splitlines()) for block in text.split("\n\n") if block.strip()]


def decoded(corpus: PreparedCorpus) -> list[list[list[str]]]:
    bounds = list(corpus.doc_index) + [corpus.num_sentences]
    return [[corpus.vocab.decode(corpus.sentence(i)) for i in range(a, b)] for a, b in zip(bounds, bounds[1:])]


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_books_match_reference(books_corpus, tmp_path):
    meta = prepare_corpus(books_corpus, tmp_path / "out", progress=False)
    corpus = PreparedCorpus(tmp_path / "out")
    expected = reference_sentences([book_paragraphs(BOOK_A), book_paragraphs(BOOK_B)])
    assert decoded(corpus) == expected
    # hard-wrapped lines were joined: the quote spanning two lines is one sentence
    assert ["he", "said", '"', "well", ",", "i", "wo", "n't", "!", '"', "and", "stayed", "home", "."] in expected[0]
    assert ["mr", ".", "smith", "did", "n't", "go", "to", "the", "market", "."] in expected[0]  # no split at Mr.

    counts = Counter(t for doc in expected for s in doc for t in s)
    assert corpus.vocab.words[: len(SPECIALS)] == list(SPECIALS)
    ranked = sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))
    assert list(zip(corpus.vocab.words[4:], corpus.vocab.counts[4:].tolist())) == ranked
    assert corpus.tokens.dtype == np.uint32 and corpus.offsets.dtype == np.int64
    assert meta["documents"] == 2 and meta["sentences"] == sum(map(len, expected))
    assert meta["tokens"] == sum(counts.values()) and meta["unk_tokens"] == 0
    assert [f["file"] for f in meta["input"]["per_file"]] == ["books/a.txt.gz", "books/b.txt"]
    assert meta["input"]["per_file"][1]["sha256"] == hashlib.sha256(BOOK_B.encode()).hexdigest()
    assert meta["tokenizer"] == Tokenizer().to_dict() and corpus.tokenizer == Tokenizer()


def test_output_is_byte_identical_across_runs_workers_and_batch_sizes(books_corpus, tmp_path):
    prepare_corpus(books_corpus, tmp_path / "a", workers=1, progress=False)
    prepare_corpus(books_corpus, tmp_path / "b", workers=2, batch_chars=40, progress=False)
    prepare_corpus(books_corpus, tmp_path / "c", workers=2, progress=False)
    assert digest(tmp_path / "a") == digest(tmp_path / "b") == digest(tmp_path / "c")
    assert sorted(digest(tmp_path / "a")) == ["doc_index.npy", "meta.json", "offsets.npy", "tokens.bin", "vocab.tsv"]


def test_tokens_are_mapped_to_final_ids_in_place_chunk_by_chunk(books_corpus, tmp_path, monkeypatch):
    """finish() rewrites tokens.bin in place: chunks smaller than the store (and a last partial one) give the same
    bytes, and no second token file ever sits beside it (the store is on disk once at the peak)."""
    from skipview.platform.data import prepare

    prepare_corpus(books_corpus, tmp_path / "whole", progress=False)
    seen = []
    original_fromfile = np.fromfile

    def fromfile(file, *args, **kwargs):            # what the staging folder holds while finish() reads
        seen.append(sorted(p.name for p in Path(file.name).parent.iterdir()))
        return original_fromfile(file, *args, **kwargs)

    monkeypatch.setattr(prepare, "_CHUNK", 7)
    monkeypatch.setattr(prepare.np, "fromfile", fromfile)
    prepare_corpus(books_corpus, tmp_path / "chunked", progress=False)
    assert digest(tmp_path / "chunked") == digest(tmp_path / "whole")
    assert len(seen) > 3 and all(names == ["doc_starts.scratch", "lengths.scratch", "tokens.bin", "vocab.tsv"]
                                 for names in seen[:3])


def test_jsonl_text_field_and_paragraphs(jsonl_corpus, tmp_path):
    with pytest.raises(Exception, match="no sentence"):
        prepare_corpus(jsonl_corpus, tmp_path / "wrong-field", progress=False)   # default field "text" absent
    assert not (tmp_path / "wrong-field").exists()
    meta = prepare_corpus(jsonl_corpus, tmp_path / "out", PrepareOptions(text_field="body"), progress=False)
    expected = reference_sentences([a["body"].split("\n") for a in ARTICLES])
    assert decoded(PreparedCorpus(tmp_path / "out")) == expected
    assert ["the", "u.s", ".", "economy", "grew", "."] in expected[1]  # no sentence break inside U.S.
    assert meta["documents"] == 2


def test_lines_format_keeps_sentences_and_splits_documents_on_blank_lines(lines_corpus, tmp_path):
    prepare_corpus(lines_corpus, tmp_path / "out", PrepareOptions(format="lines"), workers=1, progress=False)
    assert decoded(PreparedCorpus(tmp_path / "out")) == [
        [["the", "first", "sentence", "."], ["the", "second", "one", "."]],
        [["another", "document", "starts", "here", "."]],
    ]


def test_vocabulary_cuts_map_rare_words_to_unk(books_corpus, tmp_path):
    full = prepare_corpus(books_corpus, tmp_path / "full", progress=False)
    meta = prepare_corpus(books_corpus, tmp_path / "cut", PrepareOptions(min_count=2), progress=False)
    corpus, reference = PreparedCorpus(tmp_path / "cut"), PreparedCorpus(tmp_path / "full")
    kept = {w for w, c in zip(reference.vocab.words[4:], reference.vocab.counts[4:]) if c >= 2}
    assert set(corpus.vocab.words[4:]) == kept
    expected = [[w if w in kept else UNK for w in s] for doc in decoded(reference) for s in doc]
    assert [s for doc in decoded(corpus) for s in doc] == expected
    assert meta["unk_tokens"] == sum(s.count(UNK) for s in expected) > 0
    assert meta["tokens"] == full["tokens"]

    prepare_corpus(books_corpus, tmp_path / "top", PrepareOptions(max_vocab=10), progress=False)
    top = PreparedCorpus(tmp_path / "top")
    assert top.vocab.words == reference.vocab.words[:10]
    assert int(top.tokens.max()) == 9


def test_the_vocabulary_is_capped_at_a_million_words_unless_asked_otherwise(books_corpus, tmp_path):
    # the cap bounds a corpus of any size (the papers' vocabularies were bounded); 0 on the command line lifts it
    assert PrepareOptions().max_vocab == 1_000_000
    for arguments, expected in (([], 1_000_000), (["--max-vocab", "0"], None), (["--max-vocab", "12"], 12)):
        out = tmp_path / f"cap{expected}"
        done = CliRunner().invoke(app, ["data", "prepare", str(books_corpus), str(out), "--no-progress", *arguments])
        assert done.exit_code == 0, done.output
        assert json.loads((out / "meta.json").read_text())["options"]["max_vocab"] == expected


def test_lowercase_option(books_corpus, tmp_path):
    prepare_corpus(books_corpus, tmp_path / "cased", PrepareOptions(lowercase=False), progress=False)
    corpus = PreparedCorpus(tmp_path / "cased")
    assert "Smith" in corpus.vocab and "smith" not in corpus.vocab
    assert corpus.tokenizer == Tokenizer(lowercase=False)


def test_existing_output_is_kept_unless_overwrite(books_corpus, tmp_path):
    prepare_corpus(books_corpus, tmp_path / "out", progress=False)
    before = digest(tmp_path / "out")
    with pytest.raises(FileExistsError, match="--overwrite"):
        prepare_corpus(books_corpus, tmp_path / "out", PrepareOptions(min_count=2), progress=False)
    assert digest(tmp_path / "out") == before
    prepare_corpus(books_corpus, tmp_path / "out", PrepareOptions(min_count=2), overwrite=True, progress=False)
    assert digest(tmp_path / "out") != before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.skipif(not (REAL_DATA / "corpora" / "gutenberg_novels").is_dir(), reason="../shared/data not present")
def test_real_gutenberg_books(tmp_path):
    books = sorted((REAL_DATA / "corpora" / "gutenberg_novels" / "books").glob("*.txt.gz"))[:2]
    for book in books:
        (tmp_path / "raw").mkdir(exist_ok=True)
        (tmp_path / "raw" / book.name).symlink_to(book)
    meta = prepare_corpus(tmp_path / "raw", tmp_path / "out", progress=False)
    corpus = PreparedCorpus(tmp_path / "out")
    assert meta["documents"] == 2 and meta["input"]["skipped"] == {}
    first_book = gzip.open(books[0], "rt", encoding="utf-8").read()
    expected = reference_sentences([book_paragraphs(first_book)])[0]
    assert decoded(corpus)[0] == expected
    assert 10 < meta["mean_sentence_length"] < 40
    assert json.loads((tmp_path / "out" / "meta.json").read_text()) == meta
