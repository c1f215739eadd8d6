"""The CPU training step (unrolled GRUs, the vocabulary loss in chunks) against the step written plainly: the
same loss and the same gradient for every parameter, to float tolerance."""

import torch

from skipview.models.batching import Sentences, TripleBatch
from skipview.models.registry import build_objective
from skipview.models.skipthought.network import _pack
from skipview.models.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, Vocab

WORDS, BATCH, MAX_LEN = 300, 24, 30


def plain_step_loss(network, batch: TripleBatch) -> torch.Tensor:
    """Eq. 10 as the step computed it before the CPU path was optimised: ``nn.GRU`` over packed sequences (ATen's
    kernel) for the encoder and both decoders, every target's whole row of logits, ``cross_entropy`` summed, the
    sum over both decoders averaged per example."""
    current = batch.sentences
    embedded = network.embedding(network.clip_ids(current.ids))
    context = network.encoder.gru(_pack(embedded, current.lengths_cpu))[1][-1]
    total = 0
    for decoder, target in ((network.next_decoder, batch.next), (network.previous_decoder, batch.previous)):
        ids, lengths = network.clip_ids(target.ids), target.lengths_cpu
        inputs = torch.cat([torch.full((len(ids), 1), BOS_ID), ids], dim=1)
        targets = torch.cat([ids, torch.zeros(len(ids), 1, dtype=ids.dtype)], dim=1)
        targets[torch.arange(len(ids)), lengths] = EOS_ID
        words = network.embedding(inputs)
        words_and_context = torch.cat([words, context[:, None].expand(-1, words.shape[1], -1)], dim=-1)
        states = decoder.gru(_pack(words_and_context, lengths + 1))[0].data
        logits = network.vocabulary_projection(states)
        total = total + torch.nn.functional.cross_entropy(logits, _pack(targets, lengths + 1).data, reduction="sum",
                                                          ignore_index=PAD_ID)
    return total / len(current.ids)


def _sentences(generator) -> Sentences:
    lengths = torch.randint(1, MAX_LEN + 1, (BATCH,), generator=generator).tolist()
    lengths[5] = 0                                      # an empty sentence: one <pad>, never a target
    return Sentences.from_arrays([torch.randint(len(SPECIALS), WORDS + 40, (n,), generator=generator).tolist()
                                  for n in lengths])   # ids past the training vocabulary are read as <unk>


def test_cpu_step_has_the_plain_steps_loss_and_gradients():
    generator = torch.Generator().manual_seed(0)
    vocab = Vocab(list(SPECIALS) + [f"w{i}" for i in range(WORDS + 40)], [0] * len(SPECIALS) + [1] * (WORDS + 40))
    settings = {"vocab_size": WORDS, "embedding_dim": 16, "hidden_size": 32, "reset_gate": "fused"}
    objective = build_objective("skipthought", settings, vocab=vocab, word_vectors=None)
    batch = TripleBatch(_sentences(generator), _sentences(generator), _sentences(generator))
    results = []
    for loss_of in (lambda: objective(batch).loss, lambda: plain_step_loss(objective.network, batch)):
        objective.zero_grad()
        loss = loss_of()
        loss.backward()
        results.append([loss, *(p.grad for p in objective.parameters())])
    assert len(results[0]) == 1 + len(list(objective.parameters()))
    for step, plain in zip(*results):
        torch.testing.assert_close(step, plain, rtol=1e-5, atol=1e-6)
