"""Batches from a real prepared-corpus directory: example validity, sharding, determinism, resume, bucketing."""

import numpy as np
import pytest

from skipview.models.batching import every_example, iterate_batches, num_batches, read_sentences, sample_sentence_ids

MAX_LEN = 12


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, write_corpus):
    """Documents of 1..25 sentences (single-sentence documents included), sentence lengths 1..40."""
    rng = np.random.default_rng(0)
    words = [f"w{k}" for k in range(50)]
    docs = [[list(rng.choice(words, size=int(rng.integers(1, 41)))) for _ in range(int(rng.integers(1, 26)))]
            for _ in range(120)]
    return write_corpus(tmp_path_factory.mktemp("batching"), docs)


def all_batches(corpus, kind, batch_size=16, **kwargs):
    return list(iterate_batches(corpus, kind, batch_size, max_len=MAX_LEN, **kwargs))


def check_rows(corpus, sentences):
    for row, index in enumerate(sentences.indices):
        expected = corpus.sentence(int(index))[:MAX_LEN]
        n = int(sentences.lengths[row])
        assert n == max(len(expected), 1)
        assert sentences.ids[row, :n].tolist() == expected.tolist()
        assert (sentences.ids[row, n:] == 0).all()


def test_window_batches_are_consecutive_sentences_with_their_document_ids(corpus):
    documents = corpus.document_ids()
    batches = all_batches(corpus, "window", batch_size=32)
    assert len(batches) == num_batches(corpus, "window", 32) > 0
    for batch in batches:
        indices = batch.sentences.indices
        assert np.array_equal(indices, np.arange(indices[0], indices[0] + 32))
        assert batch.doc_ids.tolist() == documents[indices].tolist()
        check_rows(corpus, batch.sentences)


@pytest.mark.parametrize("kind", ["pair", "triple"])
def test_pairs_and_triples_stay_inside_one_document(corpus, kind):
    documents = corpus.document_ids()
    batches = all_batches(corpus, kind)
    assert len(batches) == num_batches(corpus, kind, 16) > 0
    for batch in batches:
        centre = batch.sentences.indices
        assert np.array_equal(batch.next.indices, centre + 1)
        assert (documents[centre] == documents[centre + 1]).all()
        check_rows(corpus, batch.sentences)
        check_rows(corpus, batch.next)
        if kind == "triple":
            assert np.array_equal(batch.previous.indices, centre - 1)
            assert (documents[centre - 1] == documents[centre]).all()
            check_rows(corpus, batch.previous)


@pytest.mark.parametrize("kind", ["window", "pair", "triple"])
def test_ranks_get_disjoint_shards_of_equal_length(corpus, kind):
    world = 3
    shards = [all_batches(corpus, kind, rank=r, world_size=world, seed=5) for r in range(world)]
    assert len({len(s) for s in shards}) == 1 and len(shards[0]) > 0           # DDP needs equal step counts
    seen = [np.concatenate([b.sentences.indices for b in shard]) for shard in shards]
    union = np.concatenate(seen)
    assert len(np.unique(union)) == len(union)                                   # no example on two ranks


def test_one_epoch_covers_most_valid_examples_once(corpus):
    documents = corpus.document_ids()
    valid = np.flatnonzero(documents[:-1] == documents[1:])                       # centres with a next sentence
    seen = np.concatenate([b.sentences.indices for b in all_batches(corpus, "pair")])
    assert len(np.unique(seen)) == len(seen) and set(seen) <= set(valid)
    assert len(seen) > 0.85 * len(valid)                                          # only block remainders dropped


def test_every_example_is_every_valid_triple_once_in_corpus_order(corpus):
    documents = corpus.document_ids()
    valid = np.flatnonzero((documents[1:-1] == documents[:-2]) & (documents[1:-1] == documents[2:])) + 1
    batches = list(every_example(corpus, "triple", 16, max_len=MAX_LEN))
    assert np.array_equal(np.concatenate([b.sentences.indices for b in batches]), valid)     # none left over
    assert {b.num_sentences for b in batches[:-1]} == {16} and 0 < batches[-1].num_sentences <= 16
    for batch in batches:
        assert np.array_equal(batch.previous.indices, batch.sentences.indices - 1)
        assert np.array_equal(batch.next.indices, batch.sentences.indices + 1)
        check_rows(corpus, batch.previous)
        check_rows(corpus, batch.next)
    with pytest.raises(ValueError, match="PAIR or TRIPLE"):
        next(every_example(corpus, "window", 16))


@pytest.mark.parametrize("kind", ["window", "pair"])
def test_deterministic_per_seed_and_epoch_and_resumable(corpus, kind):
    def order(**kwargs):
        return [tuple(b.sentences.indices) for b in all_batches(corpus, kind, **kwargs)]
    first = order(seed=1, epoch=0)
    assert first == order(seed=1, epoch=0)
    assert first != order(seed=1, epoch=1) and first != order(seed=2, epoch=0)
    for start in (0, 1, 7, len(first) - 1, len(first)):
        assert order(seed=1, epoch=0, start_batch=start) == first[start:]


def test_length_bucketing_wastes_little_padding(corpus):
    def waste(batches):
        padded = sum(b.sentences.ids.numel() for b in batches)
        real = sum(int(b.sentences.lengths.sum()) for b in batches)
        return padded / real - 1
    batches = all_batches(corpus, "pair")
    lengths = np.concatenate([b.sentences.lengths.numpy() for b in batches])
    shuffled = np.random.default_rng(0).permutation(lengths).reshape(-1, 16)
    random_waste = (shuffled.max(1).sum() * 16) / shuffled.sum() - 1
    print(f"padding waste: bucketed {waste(batches):.3f}, random batches {random_waste:.3f}")
    assert waste(batches) < 0.25 * random_waste


def test_truncation_and_sampling(corpus):
    long_ones = np.flatnonzero(corpus.lengths() > MAX_LEN)[:5]
    sentences = read_sentences(corpus, long_ones, MAX_LEN)
    assert sentences.ids.shape == (len(long_ones), MAX_LEN)
    sample = sample_sentence_ids(corpus, 50, seed=3, max_len=MAX_LEN)
    assert len(sample) == 50 and max(len(s) for s in sample) <= MAX_LEN
    assert [s.tolist() for s in sample] == [s.tolist() for s in sample_sentence_ids(corpus, 50, seed=3, max_len=MAX_LEN)]


def test_bad_arguments_are_rejected(corpus):
    with pytest.raises(ValueError, match="rank 2 is outside world_size 2"):
        all_batches(corpus, "pair", rank=2, world_size=2)
    with pytest.raises(ValueError, match="'sentence'"):
        all_batches(corpus, "sentence")


def _resident_kb(path) -> int:
    """Resident kB of this process's mappings of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in open("/proc/self/smaps"):
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5:           # a mapping's first line: address range ... [path]
            inside = fields[-1] == str(path)
        elif inside and fields[0] == "Rss:":
            total += int(fields[1])
    return total


def test_the_post_processing_sample_is_read_not_mapped(corpus):
    """sample_sentence_ids copies the sentences out of the files: the corpus maps stay untouched (at 30.7M
    sentences a sample through them held ~0.5 GB of scattered pages for as long as the corpus was open)."""
    from skipview.models.corpus import PreparedCorpus

    fresh = PreparedCorpus(corpus.path)                     # maps of its own, nothing read through them yet
    before = _resident_kb(fresh.path / "tokens.bin")        # the fixture's own map of the file is read already
    everything = fresh.read_sentences(range(fresh.num_sentences), MAX_LEN)
    assert [s.tolist() for s in everything] == [corpus.sentence(i)[:MAX_LEN].tolist()
                                                for i in range(corpus.num_sentences)]
    assert [len(s) for s in fresh.read_sentences([0, fresh.num_sentences - 1])] == \
        [len(corpus.sentence(0)), len(corpus.sentence(corpus.num_sentences - 1))]
    sample_sentence_ids(fresh, 50, seed=3, max_len=MAX_LEN)
    assert _resident_kb(fresh.path / "tokens.bin") == before
    fresh.sentence(0).sum()                                 # the control: reading through the map shows
    assert _resident_kb(fresh.path / "tokens.bin") > before
