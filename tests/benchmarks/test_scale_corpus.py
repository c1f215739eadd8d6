"""The BookCorpus-scale generator (benchmarks/scale_corpus.py): its copies prepare back to the source corpus, in
their own document order, with the number of new words Heaps' law fitted on the source asks for."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from prepared_data import write_prepared_corpus

from skipview.models.corpus import PreparedCorpus
from skipview.platform.data.prepare import PrepareOptions, prepare_corpus

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import scale_corpus  # noqa: E402  (a benchmark script, not a package module)


def documents(rng: np.random.Generator, count: int) -> list[list[list[str]]]:
    """Documents of Zipf-distributed words, plus tokens the tokeniser treats specially ("n't", "u.s", ",")."""
    words = [f"w{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}" for i in range(400)] + ["n't", "u.s", ",", "'s", "3.5"]
    ranks = np.minimum(rng.zipf(1.3, size=count * 60), len(words)) - 1
    stream = iter(ranks.tolist())
    return [[[words[next(stream)] for _ in range(6)] for _ in range(10)] for _ in range(count)]


def test_copies_prepare_back_to_the_source_with_their_own_order_and_new_words(tmp_path):
    source = write_prepared_corpus(tmp_path / "source", documents(np.random.default_rng(0), 20))
    record = scale_corpus.generate(source.path, tmp_path / "raw", copies=3, seed=0)
    options = PrepareOptions(format="lines")

    prepare_corpus(tmp_path / "raw" / "copy-0000.txt", tmp_path / "copy0", options, workers=1, progress=False)
    first = PreparedCorpus(tmp_path / "copy0")
    assert np.array_equal(first.tokens, source.tokens) and first.vocab.words == source.vocab.words
    assert np.array_equal(first.offsets, source.offsets) and np.array_equal(first.doc_index, source.doc_index)

    prepare_corpus(tmp_path / "raw", tmp_path / "all", options, workers=1, progress=False)
    everything = PreparedCorpus(tmp_path / "all")
    assert everything.num_sentences == 3 * source.num_sentences == record["sentences"]
    assert everything.num_documents == 3 * source.num_documents
    k, beta = scale_corpus.heaps_fit(source.tokens)
    renamable = sum(w.isalpha() for w in source.vocab.words[4:])
    expected = [min(scale_corpus.new_words_per_copy(k, beta, len(source.tokens), c), renamable) for c in range(3)]
    added = [c["new_words"] for c in record["copies"]]
    assert added == expected and expected[0] == 0 and expected[1] > expected[2] > 0   # Heaps: fewer new words each
    assert len(everything.vocab) - 4 == record["expected_vocab"] == len(source.vocab) - 4 + sum(added)
    assert sum(w.endswith("-c1") for w in everything.vocab.words) == added[1]
    assert sum(w.endswith("-c2") for w in everything.vocab.words) == added[2]

    # copy 1 holds the same sentences as the source, in another document order
    def sentences(corpus, first, last):
        return [tuple(w.removesuffix("-c1") for w in corpus.vocab.decode(corpus.sentence(i)))
                for i in range(first, last)]
    n = source.num_sentences
    assert sentences(everything, n, 2 * n) != sentences(source, 0, n)
    assert sorted(sentences(everything, n, 2 * n)) == sorted(sentences(source, 0, n))


def test_the_prepared_store_written_directly_is_what_prepare_makes_of_the_copies(tmp_path):
    source = write_prepared_corpus(tmp_path / "source", documents(np.random.default_rng(1), 12))
    scale_corpus.generate(source.path, tmp_path / "raw", copies=3, seed=0)
    prepare_corpus(tmp_path / "raw", tmp_path / "prepared", PrepareOptions(format="lines", max_vocab=None),
                   workers=1, progress=False)
    meta = scale_corpus.write_prepared(source.path, tmp_path / "direct", copies=3, seed=0)
    for name in ("tokens.bin", "offsets.npy", "doc_index.npy", "vocab.tsv"):
        assert (tmp_path / "direct" / name).read_bytes() == (tmp_path / "prepared" / name).read_bytes(), name
    prepared = PreparedCorpus(tmp_path / "prepared")
    assert (meta["sentences"], meta["tokens"], meta["documents"]) == (
        prepared.num_sentences, len(prepared.tokens), prepared.num_documents)
