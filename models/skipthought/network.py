"""The skip-thought network: a GRU sentence encoder and two conditional-GRU decoders (Kiros et al. 2015, eqs. 1-9).

Every recurrence runs over packed sequences, so padding never enters a state. On a GPU the ``fused`` form (below)
is PyTorch's GRU, one cuDNN call; when training on a CPU it is unrolled step by step (``models/unrolled_gru.py``:
ATen's packed CPU GRU spends much of its backward zero-filling buffers the size of the whole input), each distinct
word of the batch goes through a GRU's input projection once (``project_words``: the encoder and the decoders take
the word vectors and the ids), and the decoders project their context ``C h_i``, the same at every step, once per
sentence instead of once per word.

The decoder's conditional GRU (eqs. 5-8) adds ``C_r h_i``, ``C_z h_i`` and ``C h_i`` to the gate and candidate
pre-activations, outside the reset gate, exactly where a GRU adds its input projection. A GRU whose input at
step t is ``[x_{t-1}; h_i]`` therefore computes eqs. 5-8 with ``[W; C]`` as its input weights
(tests/models/test_skipthought_network.py checks this against the equations written out step by step).

Where the reset gate acts, in the encoder (eq. 3) and the decoders (eq. 7), is a setting (``reset_gate``):

- ``paper`` (default): eqs. 3 and 7 as printed, ``U (r ⊙ h)``. No fused kernel computes this form, so
  ``PrintedGRU`` runs it as a loop over time steps (the input projections of all steps are one matrix product).
- ``fused``: ``r ⊙ (U h + b)``, PyTorch's GRU (cuDNN on GPU). It is what the authors' released skip-thought code
  computes, but a different function of the weights from the printed one (no re-parameterisation maps one to the
  other; tests/models/test_skipthought_network.py shows both). On CPU a small uni-skip step runs 1.5x faster
  than ``paper`` (reports/benchmarks/skipthought_reset_gate.json), so the ablation's skip-thought row and
  tune_spaces/skipthought.yaml train this form.

Both keep ``nn.GRU``'s parameters (names, shapes, initialisation), so a state dict loads in either. The update
gate is the paper's up to the labelling ``z <-> 1 - z`` (PyTorch keeps ``z ⊙ h_{t-1}``), which only negates the
gate's weights.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence, invert_permutation, pack_padded_sequence, pad_packed_sequence

from skipview.models.linear_cross_entropy import linear_cross_entropy
from skipview.models.skipthought.config import SkipThoughtConfig
from skipview.models.unrolled_gru import bigru_last_states_of_words, forward_recurrence, project_words
from skipview.models.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID

UNIFORM_INIT_RANGE = 0.1  # paper section 3.1: non-recurrent weights ~ U[-0.1, 0.1]


def to_device(host: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Host tensor -> ``device`` without stalling the host: copied from pinned memory, the transfer is queued
    behind the device's work; a blocking or pageable copy would wait for that work to finish (a sync)."""
    if device.type == "cpu":
        return host
    return host.pin_memory().to(device, non_blocking=True)


def _pack(padded: torch.Tensor, lengths: torch.Tensor) -> PackedSequence:
    """Pack a batch-first padded tensor. ``lengths`` are host tensors throughout this module: packing needs them
    on the host, and reading them back from an accelerator would force a sync. The sort is done here rather
    than by ``pack_padded_sequence(enforce_sorted=False)``, whose blocking copy of the order to the device
    synchronises the stream on every call. The sort is stable, so equal lengths always pack the same way."""
    lengths, order = torch.sort(lengths, descending=True, stable=True)
    order = to_device(order, padded.device)
    packed = pack_padded_sequence(padded.index_select(0, order), lengths, batch_first=True)
    return PackedSequence(packed.data, packed.batch_sizes, order, invert_permutation(order))


class PrintedGRU(nn.GRU):
    """One-layer GRU whose candidate state is ``tanh(W x + U (r ⊙ h))`` (eqs. 3 and 7 as printed), with
    ``nn.GRU``'s parameters and calling convention (batch-first tensors or packed sequences, optional h0)."""

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        if packed:
            # Unpacked in the packing's own (length-sorted) order: its lengths then follow from the host's
            # batch_sizes, where unpacking into the caller's order reads the device permutation back to the
            # host (pad_packed_sequence's ``unsorted_indices.cpu()``), a sync on every call.
            padded, lengths = pad_packed_sequence(PackedSequence(input.data, input.batch_sizes), batch_first=True)
            if hx is not None and input.sorted_indices is not None:
                hx = hx.index_select(1, input.sorted_indices)
        else:
            padded, lengths = input, torch.full((input.shape[0],), input.shape[1], dtype=torch.long)
        batch, width = padded.shape[:2]
        steps = torch.arange(width)
        valid = to_device(steps < lengths.unsqueeze(1), padded.device)                       # [B, T]
        outputs, finals = [], []
        for direction, suffix in enumerate(["_l0", "_l0_reverse"][: 2 if self.bidirectional else 1]):
            if suffix.endswith("reverse"):
                # each sentence read backwards from its own last word; padding stays at the end
                order = (lengths.unsqueeze(1) - 1 - steps).where(steps < lengths.unsqueeze(1), steps)
                order = to_device(order, padded.device)
                x = padded.gather(1, order.unsqueeze(-1).expand_as(padded))
            else:
                x = padded
            h = padded.new_zeros(batch, self.hidden_size) if hx is None else hx[direction]
            states, h = self._run(x, valid, h, suffix)
            if suffix.endswith("reverse"):
                states = states.gather(1, order.unsqueeze(-1).expand_as(states))
            outputs.append(states)
            finals.append(h)
        output, h_n = torch.cat(outputs, dim=-1), torch.stack(finals)
        if not packed:
            return output, h_n
        # the same packing (and order) as the input, and h_n in the caller's order, as nn.GRU returns them
        repacked = pack_padded_sequence(output, lengths, batch_first=True)
        if input.unsorted_indices is not None:
            h_n = h_n.index_select(1, input.unsorted_indices)
        return PackedSequence(repacked.data, repacked.batch_sizes, input.sorted_indices, input.unsorted_indices), h_n

    def _run(self, x: torch.Tensor, valid: torch.Tensor, h: torch.Tensor, suffix: str):
        w_ih, w_hh = getattr(self, "weight_ih" + suffix), getattr(self, "weight_hh" + suffix)
        b_ih, b_hh = getattr(self, "bias_ih" + suffix), getattr(self, "bias_hh" + suffix)
        H = self.hidden_size
        projected = nn.functional.linear(x, w_ih, b_ih)                         # every step's W x at once
        states = []
        for t in range(x.shape[1]):
            x_r, x_z, x_n = projected[:, t].chunk(3, dim=-1)
            h_r, h_z = nn.functional.linear(h, w_hh[: 2 * H], b_hh[: 2 * H]).chunk(2, dim=-1)
            r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
            candidate = torch.tanh(x_n + nn.functional.linear(r * h, w_hh[2 * H:], b_hh[2 * H:]))
            # past its sentence's end a state is carried unchanged, so padding never enters it
            h = torch.where(valid[:, t : t + 1], z * h + (1 - z) * candidate, h)
            states.append(h)
        return torch.stack(states, dim=1), h


ResetGate = Literal["paper", "fused"]


def _unrolled_on(gru: nn.GRU, inputs: torch.Tensor) -> bool:
    """Whether the fused form runs unrolled (``models/unrolled_gru.py``): when training on a CPU. What it saves is
    in the backward; without one (encoding for evaluation) ATen's packed kernel is the faster. The printed form
    has its own loop."""
    return inputs.device.type == "cpu" and torch.is_grad_enabled() and not isinstance(gru, PrintedGRU)


def make_gru(input_size: int, hidden_size: int, reset_gate: ResetGate, bidirectional: bool = False) -> nn.GRU:
    gru_class = PrintedGRU if reset_gate == "paper" else nn.GRU
    return gru_class(input_size, hidden_size, batch_first=True, bidirectional=bidirectional)


class SentenceGRUEncoder(nn.Module):
    """Eqs. 1-4: the sentence vector is the final GRU state (uni-skip) or the concatenation of the final states
    of a forward and a backward GRU, i.e. the sentence read in reverse (bi-skip)."""

    def __init__(self, embedding_dim: int, hidden_size: int, bidirectional: bool, reset_gate: ResetGate = "paper"):
        super().__init__()
        self.output_size = hidden_size
        self.gru = make_gru(embedding_dim, hidden_size // 2 if bidirectional else hidden_size, reset_gate,
                            bidirectional)

    def forward(self, word_vectors: torch.Tensor, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The sentences ``ids`` [B, T] (padded ids of rows of ``word_vectors`` [words, E]), ``lengths`` [B] (>= 1) ->
        sentence vectors [B, hidden_size]. Unrolled, each distinct word is projected once (``project_words``)."""
        if _unrolled_on(self.gru, word_vectors):
            if self.gru.bidirectional:
                return bigru_last_states_of_words(self.gru, word_vectors, ids, lengths)
            packed = _pack(ids, lengths)
            projected = project_words(packed.data, word_vectors, self.gru.weight_ih_l0, self.gru.bias_ih_l0)
            _, last = forward_recurrence(list(projected.split(packed.batch_sizes.tolist())),
                                         self.gru.weight_hh_l0, self.gru.bias_hh_l0)
            return last.index_select(0, packed.unsorted_indices)
        _, last = self.gru(_pack(nn.functional.embedding(ids, word_vectors), lengths))  # [directions, B, h]
        return torch.cat(tuple(last), dim=-1)


class ConditionalGRUDecoder(nn.Module):
    """Eqs. 5-8: a GRU language model whose input at step t is ``[x_{t-1}; h_i]``, starting from a zero state."""

    def __init__(self, embedding_dim: int, context_size: int, hidden_size: int, reset_gate: ResetGate = "paper"):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.gru = make_gru(embedding_dim + context_size, hidden_size, reset_gate)

    def forward(self, word_vectors: torch.Tensor, ids: torch.Tensor, context: torch.Tensor,
                lengths: torch.Tensor) -> PackedSequence:
        """Teacher forcing: ``ids`` [B, T] are the previous words (padded ids of rows of ``word_vectors``
        [words, E]), ``context`` [B, C] the encoded sentence; returns the packed hidden states h^t (only the real
        steps, so the vocabulary projection skips padding). Unrolled, each distinct word is projected once
        (``project_words``)."""
        if _unrolled_on(self.gru, word_vectors):
            packed = _pack(ids, lengths)
            w_ih, split = self.gru.weight_ih_l0, self.embedding_dim
            words = project_words(packed.data, word_vectors, w_ih[:, :split], self.gru.bias_ih_l0)
            contexts = nn.functional.linear(context.index_select(0, packed.sorted_indices), w_ih[:, split:])
            steps = [step + contexts[: len(step)] for step in words.split(packed.batch_sizes.tolist())]
            states, _ = forward_recurrence(steps, self.gru.weight_hh_l0, self.gru.bias_hh_l0)
            return PackedSequence(torch.cat(states), packed.batch_sizes, packed.sorted_indices,
                                  packed.unsorted_indices)
        embedded = nn.functional.embedding(ids, word_vectors)
        inputs = torch.cat([embedded, context.unsqueeze(1).expand(-1, embedded.shape[1], -1)], dim=-1)
        states, _ = self.gru(_pack(inputs, lengths))
        return states

    def step(self, embedded: torch.Tensor, context: torch.Tensor, state: torch.Tensor | None) -> torch.Tensor:
        """One step for generation: ``embedded`` [B, E] -> new state [1, B, H] (None: the zero start state)."""
        _, state = self.gru(torch.cat([embedded, context], dim=-1).unsqueeze(1), state)
        return state


class SkipThoughtNetwork(nn.Module):
    """Word embeddings, encoder, next- and previous-sentence decoders, and the vocabulary matrix V they share.

    The word embeddings are one table used by the encoder and both decoders' inputs (as in the authors'
    implementation; the paper's figure 1 colour-codes sharing that the text does not spell out). Ids at or
    beyond the training vocabulary (``num_words``) are read as ``<unk>``.
    """

    def __init__(self, config: SkipThoughtConfig, num_words: int):
        super().__init__()
        if num_words <= len(SPECIALS):
            raise ValueError(f"num_words must exceed the {len(SPECIALS)} specials, got {num_words}")
        self.config = config
        self.num_words = num_words
        self.embedding = nn.Embedding(num_words, config.embedding_dim)
        self.encoder = SentenceGRUEncoder(config.embedding_dim, config.hidden_size, config.encoder == "bi",
                                          config.reset_gate)
        self.next_decoder, self.previous_decoder = (
            ConditionalGRUDecoder(config.embedding_dim, config.hidden_size, config.decoder_size, config.reset_gate)
            for _ in range(2))
        # eq. 9 prints no bias; the authors' implementation has one (as every equation here omits biases)
        self.vocabulary_projection = nn.Linear(config.decoder_size, num_words)
        self.reset_parameters()

    @classmethod
    def for_vocab_size(cls, config: SkipThoughtConfig, corpus_vocab_size: int) -> "SkipThoughtNetwork":
        """The top ``config.vocab_size`` words of a frequency-ordered vocabulary (a prefix after the specials)."""
        return cls(config, min(corpus_vocab_size, len(SPECIALS) + config.vocab_size))

    def reset_parameters(self) -> None:
        """Paper section 3.1: orthogonal recurrent matrices, U[-0.1, 0.1] for every other weight. Biases, which the
        paper does not mention, start at zero (as in the authors' implementation). Each gate's recurrent block
        is its own orthogonal matrix (PyTorch stacks the r, z and candidate blocks in one ``weight_hh``)."""
        for name, parameter in self.named_parameters():
            with torch.no_grad():
                if "weight_hh" in name:
                    for block in parameter.chunk(3, dim=0):
                        nn.init.orthogonal_(block)
                elif "bias" in name:
                    nn.init.zeros_(parameter)
                else:
                    nn.init.uniform_(parameter, -UNIFORM_INIT_RANGE, UNIFORM_INIT_RANGE)

    def clip_ids(self, ids: torch.Tensor) -> torch.Tensor:
        return ids.masked_fill(ids >= self.num_words, UNK_ID)

    def encode(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Token ids [B, T] (padded; host ``lengths`` >= 1) -> sentence vectors h_i [B, hidden_size]."""
        return self.encoder(self.embedding.weight, self.clip_ids(ids), lengths)

    def sentence_nll(self, decoder: ConditionalGRUDecoder, context: torch.Tensor, ids: torch.Tensor,
                     lengths: torch.Tensor) -> torch.Tensor:
        """Summed negative log-likelihood of the target sentences ``ids`` [B, T] followed by ``<eos>``, with the
        decoder fed ``<bos>`` then the previous true word (teacher forcing): a 0-d tensor over the whole batch.
        A ``<pad>`` inside a sentence (how the batcher marks an empty sentence) is never a target."""
        ids = self.clip_ids(ids)
        batch, width = ids.shape
        steps = lengths + 1                                                   # the words, then <eos>
        inputs = torch.cat([ids.new_full((batch, 1), BOS_ID), ids], dim=1)    # x^{t-1}: <bos>, w^1 .. w^T
        positions = torch.arange(width + 1, device=ids.device)
        targets = torch.cat([ids, ids.new_zeros((batch, 1))], dim=1)
        targets = targets.masked_fill(positions == to_device(lengths, ids.device).unsqueeze(1), EOS_ID)
        states = decoder(self.embedding.weight, inputs, context, steps)
        return self.vocabulary_nll(states.data, _pack(targets, steps).data)

    def vocabulary_nll(self, states: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Eqs. 9-10: the summed negative log-likelihood of ``targets`` (rows,) under the full softmax over the
        vocabulary of ``states`` (rows, decoder_size); ``<pad>`` targets add nothing. In fp32 it is computed in
        chunks of rows (``models/linear_cross_entropy.py``: the logits are never stored whole; on a CPU the
        step's largest part, 777 of 1,012 ms at h 256, takes 487); under autocast (a GPU's bf16) the projection
        runs in the autocast dtype as one product, as before."""
        projection = self.vocabulary_projection
        if torch.is_autocast_enabled(states.device.type):
            return torch.nn.functional.cross_entropy(projection(states), targets, reduction="sum",
                                                     ignore_index=PAD_ID)
        return linear_cross_entropy(states, projection.weight, projection.bias, targets, ignore_index=PAD_ID)

    def next_token_logits(self, decoder: ConditionalGRUDecoder, context: torch.Tensor, previous_ids: torch.Tensor,
                          state: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """One generation step: (logits [B, num_words], new state)."""
        state = decoder.step(self.embedding(previous_ids), context, state)
        return self.vocabulary_projection(state[-1]), state
