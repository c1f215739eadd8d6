"""The last states of a bi-directional ``nn.GRU``, unrolled over time step by step: the CPU training path of f.

``nn.GRU`` over a ``PackedSequence`` is one fused call on a GPU (cuDNN) but not on a CPU: there ATen walks the time
steps itself, projects each step's inputs with its own small matrix product, and takes them with a ``narrow`` of
the whole packed input. The backward of every ``narrow`` allocates a zero tensor the size of the whole packed input
and adds it into the input's gradient, so a step costs O(steps x tokens x width) of zero-filling and adding on top
of the matrix products. Profiled in a ``skipview train`` worker (disc, h = 256, N = 512, the novels, 2 threads)
those fills and adds were a third of the step, and because a fresh multi-megabyte buffer is page-faulted in and
unmapped each time, a third more again in a non-main thread such as Ray Train's (glibc's per-thread arenas return
such buffers to the kernel eagerly).

Here the inputs of all time steps and both directions are projected with one matrix product, split by time step
(whose backward is a single concatenation), and the recurrence runs on the shrinking (forward) or growing
(backward) set of sentences still inside their length. The parameters are the ``nn.GRU``'s own and the equations
are PyTorch's (``torch.nn.GRU`` docs):

    r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
    z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
    h' = (1 - z) * n + z * h

so the result equals ``nn.GRU``'s to float rounding (``tests/test_views.py``) and checkpoints are unchanged.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence


def _gates(projected_input: torch.Tensor, projected_state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """z and n of one step from W_i x + b_i (rows, 3h) and W_h h + b_h (rows, 3h, or (3h,) for every row)."""
    x_r, x_z, x_n = projected_input.chunk(3, dim=1)
    h_r, h_z, h_n = projected_state.chunk(3, dim=-1)
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    return z, torch.tanh(x_n + r * h_n)


def _step(projected_input: torch.Tensor, h: torch.Tensor, w_hh: torch.Tensor, b_hh: torch.Tensor) -> torch.Tensor:
    """One GRU step for the rows of ``h``; ``projected_input`` is W_i x + b_i for those rows, (rows, 3h)."""
    z, n = _gates(projected_input, nn.functional.linear(h, w_hh, b_hh))
    return n + z * (h - n)          # = (1 - z) * n + z * h


def _first_step(projected_input: torch.Tensor, b_hh: torch.Tensor, state_dtype: torch.dtype) -> torch.Tensor:
    """``_step`` from the zero state of ``state_dtype``, without its product: W_h 0 + b_h is b_h (in the product's
    dtype, the projection's), so the values are the same and the step's three matrix products (one forward, two
    backward) are saved."""
    z, n = _gates(projected_input, b_hh.to(projected_input.dtype))
    n = n.to(torch.promote_types(n.dtype, state_dtype))
    return n - z * n                # = n + z * (0 - n)


def _start(step_inputs: list[torch.Tensor] | tuple[torch.Tensor, ...], w_hh: torch.Tensor, b_hh: torch.Tensor,
           state_dtype: torch.dtype) -> torch.Tensor:
    """The states after the first of ``step_inputs`` (in the order the recurrence takes them) from zero states. When
    it is the only step the product is kept, so that W_h still receives a gradient (zeros, as before): a parameter
    left out of the graph would be skipped by the optimiser and fail DDP's reduction."""
    if len(step_inputs) > 1:
        return _first_step(step_inputs[0], b_hh, state_dtype)
    return _step(step_inputs[0], step_inputs[0].new_zeros(step_inputs[0].shape[0], w_hh.shape[1], dtype=state_dtype),
                 w_hh, b_hh)


def forward_recurrence(step_inputs: list[torch.Tensor], w_hh: torch.Tensor, b_hh: torch.Tensor,
                       ) -> tuple[list[torch.Tensor], torch.Tensor]:
    """A GRU run forward over packed time steps: ``step_inputs[t]`` is W_i x_t + b_i for the sentences still
    inside their length at step t, rows sorted longest first (a ``PackedSequence``'s layout). Starts from zero
    states. Returns every step's states (their concatenation is the packed output) and each sentence's last
    state, (B, h) in the sorted order."""
    h = _start(step_inputs, w_hh, b_hh, step_inputs[0].dtype)
    states, ended = [h], []
    for projected_input in step_inputs[1:]:
        rows = projected_input.shape[0]
        if rows < h.shape[0]:                   # the sentences that end leave from the bottom rows
            ended.append(h[rows:])
            h = h[:rows]
        h = _step(projected_input, h, w_hh, b_hh)
        states.append(h)
    return states, torch.cat([h, *reversed(ended)])


def bigru_last_states(gru: nn.GRU, x: torch.Tensor, lengths_cpu: torch.Tensor) -> torch.Tensor:
    """[h_fwd_last; h_bwd_last] of a one-layer bi-directional batch-first ``gru`` over padded ``x`` (B, L, D) with
    host ``lengths_cpu`` (B,), each >= 1: (B, 2h), rows in the input's order."""
    _check(gru)
    packed, order = _pack_longest_first(x, lengths_cpu)
    # both directions' input projections in one product: (tokens, 6h)
    projected = nn.functional.linear(packed.data, *_input_projection(gru))
    return _bidirectional_last_states(gru, projected, packed.batch_sizes.tolist(), order, x.dtype)


def project_words(ids: torch.Tensor, word_vectors: torch.Tensor, weight: torch.Tensor,
                  bias: torch.Tensor | None) -> torch.Tensor:
    """``linear(embedding(ids, word_vectors), weight, bias)`` for token ids (tokens,): the same values and gradients,
    with each distinct word of the batch projected once. A GRU's input projection (forward, its input's and W_i's
    gradients) is 44 % of its multiply-adds at h = 256 over 300-d vectors (16 % at h = 1024), and a batch repeats
    its words: at N = 128 a batch of the novels-and-news corpus has 0.34 distinct words per token (0.23 at N = 512;
    the synthetic Zipf corpus of benchmarks/train_step.py 0.56). The distinct words' projections are gathered per
    token (the gather's backward sums their gradients per word), so every token's W_i x + b_i is the same product
    and W_i's gradient the same sum, in another order."""
    words, position = torch.unique(ids, return_inverse=True)
    return nn.functional.linear(word_vectors.index_select(0, words), weight, bias).index_select(0, position)


def bigru_last_states_of_words(gru: nn.GRU, word_vectors: torch.Tensor, ids: torch.Tensor,
                               lengths_cpu: torch.Tensor) -> torch.Tensor:
    """``bigru_last_states(gru, embedding(ids, word_vectors), lengths_cpu)`` for padded token ids (B, L): the same
    values and gradients, each distinct word of the batch projected once (``project_words``)."""
    _check(gru)
    packed, order = _pack_longest_first(ids, lengths_cpu)
    projected = project_words(packed.data, word_vectors, *_input_projection(gru))
    return _bidirectional_last_states(gru, projected, packed.batch_sizes.tolist(), order, word_vectors.dtype)


def _pack_longest_first(padded: torch.Tensor, lengths_cpu: torch.Tensor):
    """``padded``'s rows (B, L, ...) packed longest first, and the order that sorted them (on ``padded``'s device)."""
    lengths, order = lengths_cpu.sort(descending=True)
    order = order.to(padded.device)
    return pack_padded_sequence(padded.index_select(0, order), lengths, batch_first=True), order


def _check(gru: nn.GRU) -> None:
    if not (gru.bidirectional and gru.batch_first and gru.num_layers == 1 and gru.bias):
        raise ValueError("bigru_last_states needs a one-layer, bi-directional, batch-first nn.GRU with biases")


def _input_projection(gru: nn.GRU) -> tuple[torch.Tensor, torch.Tensor]:
    """Both directions' W_i and b_i stacked: one (6h, D) product for the two."""
    return (torch.cat([gru.weight_ih_l0, gru.weight_ih_l0_reverse]),
            torch.cat([gru.bias_ih_l0, gru.bias_ih_l0_reverse]))


def _bidirectional_last_states(gru: nn.GRU, projected: torch.Tensor, batch_sizes: list[int], order: torch.Tensor,
                               state_dtype: torch.dtype) -> torch.Tensor:
    """The recurrences over ``projected`` (packed tokens, 6h: both directions' W_i x + b_i) of sentences sorted
    longest first by ``order``; ``batch_sizes``: sentences still running at each time step, non-increasing. The
    backward direction's zero states are ``state_dtype`` (the input's), the forward's the projection's."""
    forward_in, backward_in = projected.split(projected.shape[1] // 2, dim=1)
    forward_steps, backward_steps = forward_in.split(batch_sizes), backward_in.split(batch_sizes)
    hidden = gru.hidden_size

    _, forward_last = forward_recurrence(list(forward_steps), gru.weight_hh_l0, gru.bias_hh_l0)

    # backward direction: starts at each sentence's last token, so sentences join at the bottom as it goes back
    h = _start(backward_steps[::-1], gru.weight_hh_l0_reverse, gru.bias_hh_l0_reverse, state_dtype)
    for step in range(len(batch_sizes) - 2, -1, -1):
        rows = batch_sizes[step]
        if rows > h.shape[0]:
            h = torch.cat([h, h.new_zeros(rows - h.shape[0], hidden)])
        h = _step(backward_steps[step], h, gru.weight_hh_l0_reverse, gru.bias_hh_l0_reverse)

    last = torch.cat([forward_last, h], dim=1)
    return last.index_select(0, order.argsort())
