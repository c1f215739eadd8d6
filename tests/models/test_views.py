"""Encoders f and g: packed bi-GRU against per-sentence runs, pooling with padding, initialisation, frozen vectors."""

import numpy as np
import pytest
import torch

from skipview.models import registry, views
from skipview.models.batching import Sentences, WindowBatch
from torch.nn.utils.rnn import pack_padded_sequence

from skipview.models.unrolled_gru import bigru_last_states
from skipview.models.views import BiGRUView, LinearView, embed, frozen_word_vectors, pack_by_length

LENGTHS = [5, 1, 3, 4]


@pytest.fixture
def batch_and_vectors():
    torch.manual_seed(0)
    vectors = frozen_word_vectors(torch.randn(20, 6), 20)
    sentences = Sentences.from_arrays([list(torch.randint(4, 20, (n,)).tolist()) for n in LENGTHS])
    return sentences, vectors


def run_alone(view: BiGRUView, x_row: torch.Tensor):
    """Reference: one unpadded sentence through the GRU, no packing."""
    outputs, last = view.gru(x_row[None])
    return outputs[0], torch.cat([last[0, 0], last[1, 0]])


def test_packed_bigru_last_states_match_running_each_sentence_alone(batch_and_vectors):
    sentences, vectors = batch_and_vectors
    view = BiGRUView(6, 5)
    x = embed(sentences, vectors)
    batched = view.represent(x, sentences)
    for row, n in enumerate(LENGTHS):
        _, last = run_alone(view, x[row, :n])
        torch.testing.assert_close(batched[row], last, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lengths", [LENGTHS, [3, 3, 1, 7, 7, 2], [4], [1, 1]])
def test_unrolled_gru_matches_the_packed_kernel_in_values_and_gradients(lengths):
    """The CPU training path (``unrolled_gru``) against ``nn.GRU`` over a PackedSequence, with tied lengths,
    length 1, a single sentence and one time step only (where the start step's skipped product must still leave
    W_h a gradient): same last states, same gradients for every GRU parameter and the inputs."""
    torch.manual_seed(1)
    view = BiGRUView(6, 5)
    sentences = Sentences.from_arrays([list(range(4, 4 + n)) for n in lengths])
    x = torch.randn(len(lengths), max(lengths), 6)
    results = []
    for last_states in (lambda x: bigru_last_states(view.gru, x, sentences.lengths_cpu),
                        lambda x: view.states_and_last(x, sentences, need_states=False)[1]):
        view.zero_grad()
        inputs = x.clone().requires_grad_()
        last = last_states(inputs)
        (last * torch.linspace(-1, 1, last.numel()).view_as(last)).sum().backward()
        results.append([last, inputs.grad, *(p.grad for p in view.gru.parameters())])
    for ours, packed in zip(*results):
        torch.testing.assert_close(ours, packed, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lengths", [LENGTHS, [3, 3, 1, 7, 7, 2], [1, 1]])
def test_projecting_each_distinct_word_once_matches_the_embedded_input(lengths):
    """``represent_words`` (each distinct word of the batch through the input projection once, then gathered per
    token) against ``represent`` of the embedded batch: same last states and GRU gradients, repeated words
    included."""
    torch.manual_seed(2)
    view = BiGRUView(6, 5)
    vectors = frozen_word_vectors(torch.randn(12, 6), 12)
    sentences = Sentences.from_arrays([torch.randint(4, 12, (n,)).tolist() for n in lengths])
    tokens = sentences.ids[sentences.mask()]
    assert len(tokens.unique()) < len(tokens) or len(tokens) <= 2, "the batch must repeat a word"
    results = []
    for last_states in (lambda: view.represent(embed(sentences, vectors), sentences),
                        lambda: view.represent_words(sentences, vectors)):
        view.zero_grad()
        last = last_states()
        (last * torch.linspace(-1, 1, last.numel()).view_as(last)).sum().backward()
        results.append([last, *(p.grad for p in view.gru.parameters())])
    for words, embedded in zip(*results):
        torch.testing.assert_close(words, embedded, rtol=1e-5, atol=1e-6)


def test_packing_by_length_is_torchs_unsorted_packing(batch_and_vectors):
    sentences, vectors = batch_and_vectors
    x = embed(sentences, vectors)
    ours = pack_by_length(x, sentences.lengths_cpu)
    torchs = pack_padded_sequence(x, sentences.lengths_cpu, batch_first=True, enforce_sorted=False)
    for field in ("data", "batch_sizes", "sorted_indices", "unsorted_indices"):
        torch.testing.assert_close(getattr(ours, field), getattr(torchs, field), rtol=0, atol=0, msg=field)


def test_bigru_pooling_ignores_padding(batch_and_vectors):
    sentences, vectors = batch_and_vectors
    view = BiGRUView(6, 5)
    x = embed(sentences, vectors)
    x_garbage = x.clone()
    x_garbage[~sentences.mask()] = 1e3                 # padding positions must never reach a pooled value
    unsupervised = view.pool(x_garbage, sentences, "unsupervised")
    supervised = view.pool(x_garbage, sentences, "supervised")
    assert supervised.shape == (4, view.output_dim("supervised")) == (4, 40)
    for row, n in enumerate(LENGTHS):
        states, last = run_alone(view, x[row, :n])
        torch.testing.assert_close(unsupervised[row], states.mean(0), rtol=1e-5, atol=1e-6)
        expected = torch.cat([states.max(0).values, states.mean(0), states.min(0).values, last])
        torch.testing.assert_close(supervised[row], expected, rtol=1e-5, atol=1e-6)


def test_linear_pooling_ignores_padding(batch_and_vectors):
    sentences, vectors = batch_and_vectors
    view = LinearView(6, 8)
    x = embed(sentences, vectors)
    x[~sentences.mask()] = -1e3
    unsupervised = view.pool(x, sentences, "unsupervised")
    supervised = view.pool(x, sentences, "supervised")
    assert torch.equal(unsupervised, view.represent(x, sentences))
    weight = view.linear.weight
    for row, n in enumerate(LENGTHS):
        projected = x[row, :n] @ weight.T
        torch.testing.assert_close(unsupervised[row], projected.mean(0), rtol=1e-5, atol=1e-5)
        expected = torch.cat([projected.max(0).values, projected.mean(0), projected.min(0).values])
        torch.testing.assert_close(supervised[row], expected, rtol=1e-5, atol=1e-5)


def test_initialisation_follows_the_paper_appendix():
    torch.manual_seed(0)
    view = BiGRUView(300, 256)
    h = 256
    for name, param in view.gru.named_parameters():
        if name.startswith("bias_ih"):
            assert torch.all(param[: 2 * h] == 1) and torch.all(param[2 * h:] == 0)     # gates 1, candidate 0
        elif name.startswith("bias_hh"):
            assert torch.all(param == 0)
        else:                                                                           # He: std sqrt(2 / fan_in)
            assert param.std().item() == pytest.approx((2 / param.shape[1]) ** 0.5, rel=0.05)
    g = LinearView(300, 512)
    assert g.linear.bias is None
    assert g.linear.weight.std().item() == pytest.approx((2 / 300) ** 0.5, rel=0.05)


def test_pad_row_of_the_word_vectors_is_zero_and_bad_matrices_are_rejected():
    matrix = frozen_word_vectors(np.ones((5, 3), dtype=np.float32), 5)
    assert torch.all(matrix[0] == 0) and torch.all(matrix[1:] == 1)
    with pytest.raises(ValueError, match="expected \\(6, dim\\)"):
        frozen_word_vectors(np.ones((5, 3)), 6)
    with pytest.raises(ValueError, match="NaN"):
        frozen_word_vectors(np.full((5, 3), np.nan), 5)


def test_a_read_only_memory_mapped_table_is_shared_not_copied(tmp_path, monkeypatch):
    table = np.arange(15, dtype=np.float32).reshape(5, 3)
    table[0] = 0.0
    np.save(tmp_path / "vectors.npy", table)
    mapped = np.load(tmp_path / "vectors.npy", mmap_mode="r")
    matrix = frozen_word_vectors(mapped, 5)
    assert np.shares_memory(matrix.numpy(), mapped) and torch.equal(matrix, torch.from_numpy(table))
    # a table whose <pad> row is not zero cannot be used in place: it is copied, the copy's row zeroed
    table[0] = 1.0
    np.save(tmp_path / "vectors.npy", table)
    copied = frozen_word_vectors(np.load(tmp_path / "vectors.npy", mmap_mode="r"), 5)
    assert torch.all(copied[0] == 0) and torch.equal(copied[1:], torch.from_numpy(table[1:]))
    # the finiteness check reads the table in row blocks; a NaN in the last block is still found
    monkeypatch.setattr(views, "_ROWS_PER_CHECK", 2)
    table[0], table[4, 1] = 0.0, np.nan
    np.save(tmp_path / "vectors.npy", table)
    with pytest.raises(ValueError, match="NaN"):
        frozen_word_vectors(np.load(tmp_path / "vectors.npy", mmap_mode="r"), 5)


@pytest.mark.parametrize("name", ["disc", "gen"])
def test_frozen_word_vectors_receive_no_gradient(topic_corpus, name):
    corpus = topic_corpus.train
    objective = registry.build_objective(name, {"hidden_size": 4}, vocab=corpus.vocab,
                                         word_vectors=topic_corpus.word_vectors)
    assert not objective.word_vectors.requires_grad
    assert all(p.data_ptr() != objective.word_vectors.data_ptr() for p in objective.parameters())
    before = objective.word_vectors.clone()
    ids = [corpus.sentence(i) for i in range(6)]
    if name == "disc":
        batch = WindowBatch(Sentences.from_arrays(ids), torch.zeros(6, dtype=torch.long))
    else:
        from skipview.models.batching import PairBatch
        batch = PairBatch(Sentences.from_arrays(ids[:3]), Sentences.from_arrays(ids[3:]))
    optimiser = torch.optim.SGD(objective.parameters(), lr=1.0)
    objective(batch).loss.backward()
    optimiser.step()
    assert objective.word_vectors.grad is None
    assert torch.equal(objective.word_vectors, before)


def test_usif_weighted_g_is_w_times_the_mean_of_weighted_unit_word_vectors_and_is_saved_with_the_model(
        topic_corpus, tmp_path):
    """g with ``g_word_weights: usif`` reads each word as uSIF does (unit vector times a / (a/2 + p(w)), p from the
    corpus counts), computed by hand here; the factors are part of the saved model, and the plain g is unchanged."""
    from skipview.models.encoder import SentenceEncoder
    from skipview.models.word_weights import usif_weights

    from skipview.models.vocab import Vocab

    corpus, vectors = topic_corpus.train, topic_corpus.word_vectors
    # uSIF's a needs some word above p = 1 - (1 - 1/|V|)^11 (0.099 for this vocabulary): one filler word made common
    counts = corpus.vocab.counts.copy()
    counts[corpus.vocab.index["fill0"]] = counts.sum()
    vocab = Vocab(corpus.vocab.words, counts)
    objective = registry.build_objective("disc", {"views": "fg", "hidden_size": 4, "g_word_weights": "usif"},
                                         vocab=vocab, word_vectors=vectors)
    g = objective.encoders["g"]
    from skipview.models.batching import iterate_batches
    sentences = next(iterate_batches(corpus, objective.example_kind, 6, seed=0, epoch=0)).sentences
    weights = usif_weights(counts)
    expected = []
    for row, n in enumerate(sentences.lengths.tolist()):
        ids = sentences.ids[row, :n].numpy()
        unit = vectors[ids] / np.linalg.norm(vectors[ids], axis=1, keepdims=True)
        expected.append(g.linear.weight.detach().numpy() @ (unit * weights[ids, None]).mean(0))
    got = g.represent_words(sentences, objective.word_vectors)
    np.testing.assert_allclose(got.detach().numpy(), np.stack(expected), rtol=1e-4, atol=1e-6)
    assert "word_scale" not in dict(objective.encoders["f"].named_buffers())      # f reads the plain vectors

    encoder = objective.sentence_encoder(corpus.tokenizer, corpus.vocab)
    texts = topic_corpus.held_out_sentences[:5]
    before = encoder.encode(texts, view="g", postprocessing="none")
    loaded = SentenceEncoder.load(encoder.save(tmp_path / "model"))
    np.testing.assert_allclose(loaded.encode(texts, view="g", postprocessing="none"), before, rtol=1e-5, atol=1e-6)

    plain = registry.build_objective("disc", {"views": "g", "hidden_size": 4}, vocab=corpus.vocab,
                                     word_vectors=vectors).encoders["g"]
    assert plain.config() == {"input_dim": vectors.shape[1], "output_dim": 8}         # old models load as before


def test_learned_usif_weights_start_at_usif_move_with_training_and_are_saved(topic_corpus, tmp_path):
    """``usif_learned``: g starts as the uSIF-weighted g (every log-gain 0), the objective's gradient reaches the
    gains of the words in the batch (and only those), and the learned weights are what the saved model encodes."""
    from skipview.models.batching import iterate_batches
    from skipview.models.encoder import SentenceEncoder
    from skipview.models.vocab import Vocab

    corpus, vectors = topic_corpus.train, topic_corpus.word_vectors
    counts = corpus.vocab.counts.copy()
    counts[corpus.vocab.index["fill0"]] = counts.sum()             # uSIF's a needs a common word (as above)
    vocab = Vocab(corpus.vocab.words, counts)
    fixed, learned = (registry.build_objective("disc", {"views": "g", "hidden_size": 4, "g_word_weights": weights},
                                               vocab=vocab, word_vectors=vectors) for weights in ("usif", "usif_learned"))
    learned.encoders["g"].linear.load_state_dict(fixed.encoders["g"].linear.state_dict())
    batch = next(iterate_batches(corpus, learned.example_kind, 6, seed=0, epoch=0))
    before = learned.encoders["g"].represent_words(batch.sentences, learned.word_vectors).detach()
    torch.testing.assert_close(before, fixed.encoders["g"].represent_words(batch.sentences, fixed.word_vectors))

    gain = learned.encoders["g"].word_log_gain
    learned(batch).loss.backward()
    seen = torch.zeros_like(gain, dtype=torch.bool)
    seen[batch.sentences.ids[batch.sentences.mask()]] = True
    assert gain.grad[seen].abs().sum() > 0 and not gain.grad[~seen].any()
    torch.optim.SGD(learned.parameters(), lr=1.0).step()
    assert not torch.allclose(learned.encoders["g"].represent_words(batch.sentences, learned.word_vectors), before)

    encoder = learned.sentence_encoder(corpus.tokenizer, vocab)
    texts = topic_corpus.held_out_sentences[:5]
    loaded = SentenceEncoder.load(encoder.save(tmp_path / "model"))
    assert loaded.views["g"].config()["word_weights"] == "usif_learned"
    np.testing.assert_allclose(loaded.encode(texts, view="g", postprocessing="none"),
                               encoder.encode(texts, view="g", postprocessing="none"), rtol=1e-5, atol=1e-6)
