"""The exported skip-thought SentenceEncoder: same vectors as the trained network, vocabulary expansion in use,
save/load round trip, and combine-skip as the concatenation of uni-skip and bi-skip."""

import numpy as np
import pytest
import torch

from skipview.models.encoder import SentenceEncoder
from skipview.models.registry import build_objective
from skipview.models.skipthought.combine import combine_skip
from skipview.models.text import Tokenizer
from skipview.models.vocab import SPECIALS, UNK_ID, Vocab

WORDS = [f"w{i}" for i in range(30)]
TRAINED = 20                         # w0..w19 are the training vocabulary, w20..w29 only have word vectors
DIM_VECTORS = 8


@pytest.fixture(scope="module")
def vocab():
    return Vocab(list(SPECIALS) + WORDS, [0] * 4 + list(range(100, 70, -1)))


@pytest.fixture(scope="module")
def word_vectors(vocab):
    vectors = np.random.default_rng(0).standard_normal((len(vocab), DIM_VECTORS)).astype(np.float32)
    vectors[:4] = 0
    vectors[vocab.index["w29"]] = 0      # an untrained word without a vector: stays <unk>
    return vectors


def _objective(vocab, word_vectors, encoder, seed=0):
    torch.manual_seed(seed)
    settings = {"encoder": encoder, "vocab_size": TRAINED, "embedding_dim": 6, "hidden_size": 10,
                "decoder_hidden_size": 7}
    return build_objective("skipthought", settings, vocab=vocab, word_vectors=word_vectors)


def _network_vectors(objective, vocab, sentences):
    network = objective.network
    vectors = []
    with torch.no_grad():
        for sentence in sentences:
            ids = torch.tensor([vocab.encode(Tokenizer()(sentence))])
            vectors.append(network.encode(ids, torch.tensor([ids.shape[1]]))[0])
    return torch.stack(vectors)


@pytest.mark.parametrize("encoder", ["uni", "bi"])
def test_exported_encoder_gives_the_trained_networks_vectors_for_trained_words(vocab, word_vectors, encoder, tmp_path):
    objective = _objective(vocab, word_vectors, encoder)
    exported = objective.sentence_encoder(Tokenizer(), vocab)
    assert exported.view_names == [encoder]
    sentences = ["w1 w2 w3", "w5", "w7 w7 w0 w19 w3 w2", "w4 w8"]
    raw = exported.raw_representations(exported.token_ids(sentences), "unsupervised", [encoder])[encoder]
    torch.testing.assert_close(raw, _network_vectors(objective, vocab, sentences), atol=1e-6, rtol=1e-6)
    supervised = exported.encode(sentences, mode="supervised", postprocessing="none")
    torch.testing.assert_close(torch.from_numpy(supervised), torch.nn.functional.normalize(raw, dim=-1))
    exported.fit_postprocessing(sentences)
    exported.save(tmp_path / "model")
    reloaded = SentenceEncoder.load(tmp_path / "model")
    np.testing.assert_allclose(reloaded.encode(sentences), exported.encode(sentences), atol=1e-6)


def test_vocabulary_expansion_maps_untrained_words_into_the_encoder(vocab, word_vectors):
    objective = _objective(vocab, word_vectors, "uni")
    exported = objective.sentence_encoder(Tokenizer(), vocab)
    table = exported.views["uni"].embedding.weight.detach()
    trained = objective.network.embedding.weight.detach()
    assert table.shape == (len(vocab), 6)
    torch.testing.assert_close(table[: TRAINED + 4], trained)
    # the map is the least-squares fit on the trained words (brute force: normal equations)
    X = torch.from_numpy(word_vectors[4 : TRAINED + 4]).double()
    W = torch.linalg.solve(X.T @ X, X.T @ trained[4:].double())
    unseen = vocab.index["w25"]
    torch.testing.assert_close(table[unseen].double(), torch.from_numpy(word_vectors[unseen]).double() @ W,
                               atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(table[vocab.index["w29"]], trained[UNK_ID])
    # during training w25 was <unk>; the exported encoder reads its mapped embedding instead
    expanded = exported.raw_representations(exported.token_ids(["w1 w25 w2"]), "unsupervised", ["uni"])["uni"]
    as_unk = _network_vectors(objective, vocab, ["w1 w25 w2"])
    assert (expanded - as_unk).abs().max() > 1e-3
    assert exported.metadata["vocab_expansion"] == {"shared_words": TRAINED, "words": len(vocab)}


def test_without_word_vectors_untrained_words_are_unk(vocab):
    objective = _objective(vocab, None, "uni")
    exported = objective.sentence_encoder(Tokenizer(), vocab)
    with_rare = exported.raw_representations(exported.token_ids(["w1 w25 w2"]), "unsupervised", ["uni"])["uni"]
    with_unk = exported.raw_representations([np.array([vocab.index["w1"], UNK_ID, vocab.index["w2"]])],
                                            "unsupervised", ["uni"])["uni"]
    torch.testing.assert_close(with_rare, with_unk)


def test_combine_skip_concatenates_uni_and_bi_vectors(vocab, word_vectors, tmp_path):
    uni = _objective(vocab, word_vectors, "uni", seed=1).sentence_encoder(Tokenizer(), vocab)
    bi = _objective(vocab, word_vectors, "bi", seed=2).sentence_encoder(Tokenizer(), vocab)
    combined = combine_skip(uni, bi)
    sentences = ["w1 w2 w3", "w9 w25 w4"]
    vectors = combined.encode(sentences, mode="supervised", postprocessing="none")
    expected = np.concatenate([uni.encode(sentences, mode="supervised", postprocessing="none"),
                               bi.encode(sentences, mode="supervised", postprocessing="none")], axis=1)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert vectors.shape == (2, 20)
    combined.save(tmp_path / "combined")
    np.testing.assert_allclose(SentenceEncoder.load(tmp_path / "combined").encode(
        sentences, mode="supervised", postprocessing="none"), expected, atol=1e-6)
    with pytest.raises(ValueError, match="bi-skip"):
        combine_skip(uni, uni)


def test_word_vectors_must_be_aligned_with_the_vocabulary(vocab, word_vectors):
    with pytest.raises(ValueError, match="aligned"):
        _objective(vocab, word_vectors[:-1], "uni")


def test_unknown_setting_is_named(vocab):
    with pytest.raises(ValueError, match="hidden"):
        build_objective("skipthought", {"hiden_size": 3}, vocab=vocab, word_vectors=None)
