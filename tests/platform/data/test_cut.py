"""`skipview data cut`: nested cuts of whole documents in a seeded order, each a prepared corpus as `prepare` would
make it of those documents (vocabulary counted again), byte-deterministic, and bad input in one line."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from skipview.models.corpus import PreparedCorpus
from skipview.models.vocab import Vocab
from skipview.platform.cli import app
from skipview.platform.data.cut import cut_corpus, document_order
from skipview.platform.data.readers import BadInputError
from skipview.platform.data.prepare import PrepareOptions, prepare_corpus

from data_samples import write_generated_books, write_jsonl


def decoded(corpus: PreparedCorpus) -> list[list[tuple[str, ...]]]:
    bounds = list(corpus.doc_index) + [corpus.num_sentences]
    return [[tuple(corpus.vocab.decode(corpus.sentence(i))) for i in range(a, b)] for a, b in zip(bounds, bounds[1:])]


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> PreparedCorpus:
    """Books of 30 sentences and news articles of two or three, prepared by the real `prepare`: documents of
    very different lengths, as the novels with the news."""
    raw = write_generated_books(tmp_path_factory.mktemp("raw"), books=8, sentences_per_book=30)
    write_jsonl(raw / "news" / "articles.jsonl.gz",
                [{"text": f"Story {i} begins. Markets moved {i} points. " + ("Then it ended. " * (i % 2))}
                 for i in range(40)])
    out = tmp_path_factory.mktemp("prepared") / "corpus"
    prepare_corpus(raw, out, PrepareOptions(format="auto", max_vocab=None), workers=1, progress=False)
    return PreparedCorpus(out)


def test_cuts_are_nested_prefixes_of_whole_documents_in_the_seeded_order(source, tmp_path):
    documents = decoded(source)
    order = document_order(source.num_documents, seed=3)
    previous: list = []
    for size in (40, 120, 250):
        meta = cut_corpus(source.path, tmp_path / f"cut{size}", size, seed=3)
        cut = PreparedCorpus(tmp_path / f"cut{size}")
        docs = decoded(cut)
        # whole source documents, in the seeded order, the shortest such prefix reaching `size` sentences
        assert docs == [documents[i] for i in order[: len(docs)]]
        assert sum(map(len, docs)) >= size > sum(map(len, docs[:-1]))
        assert docs[: len(previous)] == previous and len(docs) > len(previous)
        previous = docs
        # the vocabulary counted on the cut and ranked as `prepare` ranks it; no word of the source is lost
        counts = Counter(word for doc in docs for sentence in doc for word in sentence)
        assert cut.vocab.words == Vocab.from_counts(counts).words
        assert dict(zip(cut.vocab.words, cut.vocab.counts.tolist())) == {**dict.fromkeys(cut.vocab.words[:4], 0),
                                                                           **counts}
        assert (meta["sentences"], meta["documents"], meta["tokens"]) == (
            cut.num_sentences, len(docs), sum(len(s) for doc in docs for s in doc))
        assert meta["cut"] == {**meta["cut"], "seed": 3, "sentences_asked": size,
                               "source_sentences": source.num_sentences}


def test_the_rest_of_a_cut_is_every_other_document_in_the_same_order(source, tmp_path):
    documents = decoded(source)
    order = document_order(source.num_documents, seed=3)
    cut = decoded(PreparedCorpus(cut_corpus(source.path, tmp_path / "cut", 120, seed=3) and tmp_path / "cut"))
    meta = cut_corpus(source.path, tmp_path / "rest", 120, seed=3, rest=True)
    rest = decoded(PreparedCorpus(tmp_path / "rest"))
    assert rest == [documents[i] for i in order[len(cut):]] and len(cut) + len(rest) == source.num_documents
    assert meta["cut"]["rest"] is True and meta["sentences"] == source.num_sentences - sum(map(len, cut))
    with pytest.raises(BadInputError, match="is empty"):
        cut_corpus(source.path, tmp_path / "none", 0, seed=3, rest=True)
    assert not (tmp_path / "none").exists()


def test_a_cut_is_byte_deterministic_and_its_order_follows_the_seed(source, tmp_path):
    cut_corpus(source.path, tmp_path / "a", 100, seed=0)
    cut_corpus(source.path, tmp_path / "b", 100, seed=0)
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    cut_corpus(source.path, tmp_path / "c", 100, seed=1)
    assert decoded(PreparedCorpus(tmp_path / "c")) != decoded(PreparedCorpus(tmp_path / "a"))


@pytest.mark.parametrize("size", [0, 10_000])
def test_zero_or_more_than_the_corpus_is_every_document(source, tmp_path, size):
    cut_corpus(source.path, tmp_path / "all", size, seed=0)
    cut = PreparedCorpus(tmp_path / "all")
    assert sorted(decoded(cut)) == sorted(decoded(source))
    assert cut.vocab.words == source.vocab.words         # the same counts rank the same words the same way


def test_bad_input_is_one_line_and_leaves_no_output(source, tmp_path):
    def cli(*arguments: str):
        return CliRunner().invoke(app, ["data", "cut", *arguments])

    negative = cli(str(source.path), str(tmp_path / "neg"), "--sentences", "-5")
    assert negative.exit_code == 1
    assert negative.output.strip() == "error: --sentences -5: give a number of sentences >= 1 (0 = every document)"
    missing = cli(str(tmp_path / "nowhere"), str(tmp_path / "x"), "--sentences", "10")
    assert missing.exit_code == 1 and len(missing.output.strip().splitlines()) == 1
    assert missing.output.startswith(f"error: {tmp_path / 'nowhere'} is not a prepared corpus: missing tokens.bin")
    cut_corpus(source.path, tmp_path / "done", 10, seed=0)
    exists = cli(str(source.path), str(tmp_path / "done"), "--sentences", "10")
    assert exists.exit_code == 1 and "already exists (pass --overwrite" in exists.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["done"]
