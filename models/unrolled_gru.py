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


def _step(projected_input: torch.Tensor, h: torch.Tensor, w_hh: torch.Tensor, b_hh: torch.Tensor) -> torch.Tensor:
    """One GRU step for the rows of ``h``; ``projected_input`` is W_i x + b_i for those rows, (rows, 3h)."""
    x_r, x_z, x_n = projected_input.chunk(3, dim=1)
    h_r, h_z, h_n = nn.functional.linear(h, w_hh, b_hh).chunk(3, dim=1)
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)
    return n + z * (h - n)          # = (1 - z) * n + z * h


def forward_recurrence(step_inputs: list[torch.Tensor], w_hh: torch.Tensor, b_hh: torch.Tensor,
                       ) -> tuple[list[torch.Tensor], torch.Tensor]:
    """A GRU run forward over packed time steps: ``step_inputs[t]`` is W_i x_t + b_i for the sentences still
    inside their length at step t, rows sorted longest first (a ``PackedSequence``'s layout). Starts from zero
    states. Returns every step's states (their concatenation is the packed output) and each sentence's last
    state, (B, h) in the sorted order."""
    h = step_inputs[0].new_zeros(step_inputs[0].shape[0], w_hh.shape[1])
    states, ended = [], []
    for projected_input in step_inputs:
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
    if not (gru.bidirectional and gru.batch_first and gru.num_layers == 1 and gru.bias):
        raise ValueError("bigru_last_states needs a one-layer, bi-directional, batch-first nn.GRU with biases")
    lengths, order = lengths_cpu.sort(descending=True)
    order = order.to(x.device)
    packed = pack_padded_sequence(x.index_select(0, order), lengths, batch_first=True)
    batch_sizes = packed.batch_sizes.tolist()           # sentences still running at each time step, non-increasing
    # both directions' input projections in one product: (tokens, 6h), split per time step
    projected = nn.functional.linear(packed.data, torch.cat([gru.weight_ih_l0, gru.weight_ih_l0_reverse]),
                                     torch.cat([gru.bias_ih_l0, gru.bias_ih_l0_reverse]))
    forward_in, backward_in = projected.split(projected.shape[1] // 2, dim=1)
    forward_steps, backward_steps = forward_in.split(batch_sizes), backward_in.split(batch_sizes)
    hidden = gru.hidden_size

    _, forward_last = forward_recurrence(list(forward_steps), gru.weight_hh_l0, gru.bias_hh_l0)

    # backward direction: starts at each sentence's last token, so sentences join at the bottom as it goes back
    h = x.new_zeros(0, hidden)
    for step in range(len(batch_sizes) - 1, -1, -1):
        rows = batch_sizes[step]
        if rows > h.shape[0]:
            h = torch.cat([h, x.new_zeros(rows - h.shape[0], hidden)])
        h = _step(backward_steps[step], h, gru.weight_hh_l0_reverse, gru.bias_hh_l0_reverse)

    last = torch.cat([forward_last, h], dim=1)
    return last.index_select(0, order.argsort())
