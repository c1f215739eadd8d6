"""The skip-thought network against the paper's equations, written out step by step on tiny tensors."""

import math

import pytest
import torch

from skipview.models.skipthought.config import SkipThoughtConfig
from skipview.models.skipthought.network import (ConditionalGRUDecoder, SentenceGRUEncoder, SkipThoughtNetwork, _pack,
                                                 _unrolled_on, make_gru)
from skipview.models.vocab import BOS_ID, EOS_ID, UNK_ID

E, C, H = 3, 4, 5   # word embedding, sentence vector, decoder state


def _randomise(module: torch.nn.Module, seed: int) -> None:
    """Random weights *and* biases, so no term of the equations is hidden by a zero."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.7)


def _as_table(embedded: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded vectors [B, T, E] as the (word vectors, ids) the modules read: one row of the table per position."""
    return embedded.reshape(-1, embedded.shape[-1]), torch.arange(embedded.shape[0] * embedded.shape[1]).view(
        embedded.shape[:2])


def _paper_decoder(gru: torch.nn.GRU, x_prev: torch.Tensor, h_i: torch.Tensor, reset_inside: bool) -> torch.Tensor:
    """Eqs. 5-8 for one sentence, one step at a time: ``x_prev`` [T, E] (x^{t-1}), ``h_i`` [C] -> h^t [T, H].

    The paper's matrices are read out of the fused GRU's stacked weights (rows r, z, n; input columns
    [x ; h_i]): W^d = the x columns, C = the h_i columns, U^d = weight_hh. The paper's update gate z weighs
    the candidate (eq. 8); PyTorch's weighs h^{t-1}, so the paper's z-gate parameters are PyTorch's negated.
    ``reset_inside`` selects eq. 7 as printed, U (r ⊙ h); otherwise the reset multiplies (U h + b)."""
    w_ih, w_hh, b_ih, b_hh = gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0
    (W_r, W_z, W), (C_r, C_z, C_) = w_ih[:, :E].chunk(3), w_ih[:, E:].chunk(3)
    U_r, U_z, U = w_hh.chunk(3)
    (bi_r, bi_z, bi_n), (bh_r, bh_z, bh_n) = b_ih.chunk(3), b_hh.chunk(3)
    W_z, U_z, C_z, b_z = -W_z, -U_z, -C_z, -(bi_z + bh_z)   # paper's z = 1 - PyTorch's z
    h = torch.zeros(H)
    states = []
    for x in x_prev:
        r = torch.sigmoid(W_r @ x + U_r @ h + C_r @ h_i + bi_r + bh_r)                        # eq. 5
        z = torch.sigmoid(W_z @ x + U_z @ h + C_z @ h_i + b_z)                                # eq. 6
        if reset_inside:
            h_bar = torch.tanh(W @ x + U @ (r * h) + C_ @ h_i + bi_n + bh_n)                  # eq. 7 as printed
        else:
            h_bar = torch.tanh(W @ x + r * (U @ h + bh_n) + C_ @ h_i + bi_n)                  # fused placement
        h = (1 - z) * h + z * h_bar                                                           # eq. 8
        states.append(h)
    return torch.stack(states)


def _decoder_states(lengths, reset_gate):
    decoder = ConditionalGRUDecoder(E, C, H, reset_gate)
    _randomise(decoder, seed=0)
    generator = torch.Generator().manual_seed(1)
    x_prev = torch.randn(len(lengths), max(lengths), E, generator=generator)
    h_i = torch.randn(len(lengths), C, generator=generator)
    packed = decoder(*_as_table(x_prev), h_i, torch.tensor(lengths))
    padded, _ = torch.nn.utils.rnn.pad_packed_sequence(packed, batch_first=True)
    return decoder, x_prev, h_i, padded


@pytest.mark.parametrize("reset_gate", ["paper", "fused"])
def test_conditional_gru_computes_eqs_5_to_8(reset_gate):
    """``paper``: eq. 7 as printed, U (r ⊙ h); ``fused``: the reset after the recurrent product."""
    lengths = [4, 7, 1]
    decoder, x_prev, h_i, states = _decoder_states(lengths, reset_gate)
    with torch.no_grad():
        for b, length in enumerate(lengths):
            reference = _paper_decoder(decoder.gru, x_prev[b, :length], h_i[b], reset_inside=reset_gate == "paper")
            torch.testing.assert_close(states[b, :length], reference, atol=1e-5, rtol=1e-5)


def test_eq_7_as_printed_is_a_different_function():
    """The paper prints U (r ⊙ h); the fused kernel (and the authors' code) compute r ⊙ (U h). With the same
    weights the states differ well beyond rounding, so the setting is a real choice (see network.py)."""
    paper = _decoder_states([6], "paper")[3]
    fused = _decoder_states([6], "fused")[3]
    assert (paper[0] - fused[0]).abs().max() > 1e-2


@pytest.mark.parametrize("reset_gate", ["paper", "fused"])
def test_decoder_step_matches_teacher_forced_states(reset_gate):
    decoder, x_prev, h_i, fused = _decoder_states([5], reset_gate)
    state = None
    with torch.no_grad():
        for t in range(5):
            state = decoder.step(x_prev[:, t], h_i, state)
            torch.testing.assert_close(state[0, 0], fused[0, t], atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("reset_gate", ["paper", "fused"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_encoder_reads_each_sentence_alone_padding_never_leaks(bidirectional, reset_gate):
    encoder = SentenceGRUEncoder(E, 2 * H, bidirectional, reset_gate)
    _randomise(encoder, seed=2)
    lengths = [3, 6, 1, 6]
    embedded = torch.randn(len(lengths), 6, E, generator=torch.Generator().manual_seed(3))
    embedded[0, 3:] = 100.0   # garbage in the padding must not matter
    directions = [("_l0", lambda x: x)] + ([("_l0_reverse", lambda x: x.flip(1))] if bidirectional else [])
    with torch.no_grad():
        batch = encoder(*_as_table(embedded), torch.tensor(lengths))
        for b, length in enumerate(lengths):
            sentence = embedded[b : b + 1, :length]
            halves = []
            for suffix, order in directions:   # each direction alone: a plain GRU over the (reversed) sentence
                single = make_gru(E, encoder.gru.hidden_size, reset_gate)
                for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                    getattr(single, kind + "_l0").copy_(getattr(encoder.gru, kind + suffix))
                halves.append(single(order(sentence))[1][0, 0])
            torch.testing.assert_close(batch[b], torch.cat(halves), atol=1e-6, rtol=1e-6)
    assert batch.shape == (len(lengths), 2 * H)


@pytest.mark.parametrize("part", ["decoder", "uni-encoder", "bi-encoder"])
def test_cpu_unrolled_fused_form_matches_the_packed_kernel_in_values_and_gradients(part):
    """On a CPU the fused form runs unrolled (``models/unrolled_gru.py``) with the decoder's context projected
    once per sentence and each distinct word projected once; against ``nn.GRU`` over the same PackedSequence of
    the words' vectors it gives the same outputs and the same gradients for every parameter, the word vectors
    (words repeated within and across sentences) and the context (tied lengths, length 1)."""
    lengths = torch.tensor([4, 1, 6, 4])
    generator = torch.Generator().manual_seed(4)
    table = torch.randn(5, E, generator=generator)
    ids = torch.randint(0, 5, (len(lengths), 6), generator=generator)
    h_i = torch.randn(len(lengths), C, generator=generator)
    if part == "decoder":
        module = ConditionalGRUDecoder(E, C, H, "fused")
        ours = lambda x, c: module(x, ids, c, lengths).data
        kernel = lambda x, c: module.gru(_pack(torch.cat([x[ids], c[:, None].expand(-1, 6, -1)], -1),
                                               lengths))[0].data
    else:
        module = SentenceGRUEncoder(E, 2 * H, part == "bi-encoder", "fused")
        # an encoder has no context: c only scales both outputs alike, so both runs have the same gradients to compare
        ours = lambda x, c: module(x, ids, lengths) * c.sum()
        kernel = lambda x, c: torch.cat(tuple(module.gru(_pack(x[ids], lengths))[1]), -1) * c.sum()
    _randomise(module, seed=5)
    assert _unrolled_on(module.gru, table), "the module's own forward must take the unrolled path here"
    results = []
    for run in (ours, kernel):
        module.zero_grad()
        x, c = table.clone().requires_grad_(), h_i.clone().requires_grad_()
        out = run(x, c)
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        results.append([out, x.grad, c.grad, *(p.grad for p in module.parameters())])
    for unrolled, packed in zip(*results):
        torch.testing.assert_close(unrolled, packed, rtol=1e-5, atol=1e-6)


def _tiny_network(encoder="uni", num_words=12) -> SkipThoughtNetwork:
    config = SkipThoughtConfig(encoder=encoder, vocab_size=num_words, embedding_dim=E, hidden_size=C,
                               decoder_hidden_size=H)
    return SkipThoughtNetwork(config, num_words)


def test_initialisation_orthogonal_recurrent_uniform_otherwise():
    config = SkipThoughtConfig(encoder="bi", vocab_size=600, embedding_dim=40, hidden_size=64,
                               decoder_hidden_size=48)
    network = SkipThoughtNetwork(config, 604)
    seen_recurrent = 0
    for name, parameter in network.named_parameters():
        if "weight_hh" in name:
            for block in parameter.detach().chunk(3, dim=0):
                torch.testing.assert_close(block @ block.T, torch.eye(block.shape[0]), atol=1e-5, rtol=0)
            seen_recurrent += 1
        elif "bias" in name:
            assert parameter.abs().max() == 0, name
        else:
            values = parameter.detach().flatten()
            assert values.abs().max() <= 0.1, name
            # U[-0.1, 0.1]: std 0.1/sqrt(3) = 0.0577, mean 0 (every such tensor here has > 2,000 entries)
            assert abs(values.std().item() - 0.1 / math.sqrt(3)) < 0.004, name
            assert abs(values.mean().item()) < 0.006, name
    assert seen_recurrent == 4   # bi-encoder forward + backward, two decoders
    # the decoders' C matrices are input weights: uniform, part of weight_ih
    assert network.next_decoder.gru.weight_ih_l0.shape == (3 * 48, 40 + 64)


def test_decoders_have_separate_parameters_and_share_only_the_vocabulary_matrix():
    network = _tiny_network()
    next_ids = {id(p) for p in network.next_decoder.parameters()}
    previous_ids = {id(p) for p in network.previous_decoder.parameters()}
    assert next_ids.isdisjoint(previous_ids)
    assert network.vocabulary_projection.weight.shape == (12, H)


def test_sentence_nll_is_teacher_forced_log_likelihood_of_words_then_eos():
    """Brute force: feed <bos>, w1, ... one step at a time and add -log P(w1), ..., -log P(<eos>)."""
    torch.manual_seed(0)
    network = _tiny_network(num_words=12)
    _randomise(network, seed=4)
    ids = torch.tensor([[5, 7, 4, 0], [9, 20, 0, 0], [6, 6, 8, 11]])   # 20 is beyond the vocabulary: <unk>
    lengths = torch.tensor([3, 2, 4])
    context = torch.randn(3, C)
    with torch.no_grad():
        total = network.sentence_nll(network.next_decoder, context, ids, lengths)
        expected = 0.0
        for b in range(3):
            words = [w if w < 12 else UNK_ID for w in ids[b, : lengths[b]].tolist()]
            previous, state = BOS_ID, None
            for target in words + [EOS_ID]:
                logits, state = network.next_token_logits(network.next_decoder, context[b : b + 1],
                                                          torch.tensor([previous]), state)
                expected -= torch.log_softmax(logits[0], dim=-1)[target].item()
                previous = target
    assert total.item() == pytest.approx(expected, rel=1e-5)


def test_bi_encoder_needs_an_even_hidden_size():
    with pytest.raises(ValueError, match="even"):
        SkipThoughtConfig(encoder="bi", hidden_size=7)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_printed_gru_on_a_packed_batch_is_each_sentence_alone_with_its_own_initial_state(bidirectional):
    """PrintedGRU runs a packed batch in the packing's sorted order (its lengths then come from the host's
    batch_sizes, no device read-back): outputs, final states and initial states must still line up with the
    caller's rows, as nn.GRU's do."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    gru = make_gru(E, H, "paper", bidirectional=bidirectional).double()
    _randomise(gru, seed=3)
    lengths = torch.tensor([3, 6, 1, 4])                           # unsorted, so the packing permutes the rows
    x = torch.randn(4, 6, E, dtype=torch.double)
    h0 = torch.randn(2 if bidirectional else 1, 4, H, dtype=torch.double)
    packed_out, h_n = gru(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False), h0)
    out, _ = pad_packed_sequence(packed_out, batch_first=True)
    for i, n in enumerate(lengths.tolist()):
        alone, h_alone = gru(x[i : i + 1, :n], h0[:, i : i + 1])
        torch.testing.assert_close(out[i, :n], alone[0])
        torch.testing.assert_close(h_n[:, i], h_alone[:, 0])
