"""The summed full-softmax cross-entropy of a linear layer's outputs, ``cross_entropy(hidden @ weight.T + bias,
targets, reduction="sum")``, computed in chunks of rows so that the (rows x classes) logits are never stored whole.

Skip-thought's decoders score every target word against the whole vocabulary (eq. 10, no sampled softmax). Written
as a ``Linear`` then ``cross_entropy``, a batch of 128 at 5,000 words stores 2,700 x 5,000 logits per decoder (54 MB),
their log-softmax and, in the backward, a zero-filled gradient of the same size and the softmax's own: on a CPU those
buffers are page-faulted in, written and read back from memory, and the vocabulary's part of the step ran at half
the core's matrix-product rate, 777 of a 1,012 ms step (h 256, batch 128, one thread;
reports/benchmarks/skipthought_step.json). Here each chunk of rows is scored (the bias added by the product itself),
its log-sum-exp taken, and its exponentials, while still in the cache, enter the gradients' products; the softmax's
division and the one-hot target are applied to those products' small operands and results, so that the only passes
over a chunk's logits are the product, the maximum, the shift, the exponential (in base 2) and the sum. The
gradients of ``hidden``, ``weight`` and ``bias`` are accumulated in the forward, and the backward only scales them
by the loss's gradient. The three matrix products are the same as the unfused layer's (the logits, the gradient of
``hidden`` and of ``weight``), so the arithmetic is the same up to float rounding and summation order
(tests/models/test_linear_cross_entropy.py).

A chunk is scored transposed, classes by rows (``weight @ hidden_chunk.T``): with the small inner dimension of a
decoder's state the product runs faster in that layout on a CPU (86-89 against 62-74 GFLOP/s at h = 256, 5,000
classes, 256 rows, one thread, in two measurements).
"""

from __future__ import annotations

import math

import torch

CHUNK_ROWS = 256    # a chunk's logits (5,000 classes: 5 MB) stay in a core's share of the cache
LOG2_E, LN_2 = 1 / math.log(2), math.log(2)


def linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, targets: torch.Tensor,
                         ignore_index: int, chunk_rows: int = CHUNK_ROWS) -> torch.Tensor:
    """``cross_entropy(linear(hidden, weight, bias), targets, reduction="sum", ignore_index=ignore_index)``:
    ``hidden`` (rows, d), ``weight`` (classes, d), ``bias`` (classes,), ``targets`` (rows,) -> a 0-d tensor. Rows
    whose target is ``ignore_index`` add nothing to the loss or the gradients."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in (hidden, weight, bias)):
        return _LinearCrossEntropy.apply(hidden, weight, bias, targets, ignore_index, chunk_rows)
    return _chunked(hidden, weight, bias, targets, ignore_index, chunk_rows, gradients=None)


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, ignore_index, chunk_rows):
        gradients = (torch.empty_like(hidden), torch.zeros_like(weight), torch.zeros_like(bias))
        loss = _chunked(hidden, weight, bias, targets, ignore_index, chunk_rows, gradients)
        ctx.save_for_backward(*gradients)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        grad_hidden, grad_weight, grad_bias = ctx.saved_tensors
        return grad_hidden * grad_loss, grad_weight * grad_loss, grad_bias * grad_loss, None, None, None


def _chunked(hidden, weight, bias, targets, ignore_index, chunk_rows, gradients):
    """The summed loss; with ``gradients`` (hidden's, weight's, bias's; the last two zeroed) also the loss's
    gradients, written into them."""
    loss = hidden.new_zeros(())
    bias_column = bias.unsqueeze(1) * LOG2_E
    # every chunk's logits in one buffer: a fresh 5 MB tensor per chunk is page-faulted in by its first write
    # (the bias's copy ran at 5 GB/s, 10 ms of a decoder's 276)
    buffer = hidden.new_empty(weight.shape[0] * min(chunk_rows, hidden.shape[0]))
    for start in range(0, hidden.shape[0], chunk_rows):
        rows = slice(start, start + chunk_rows)
        chunk, chunk_targets = hidden[rows], targets[rows]
        kept = chunk_targets != ignore_index
        columns = torch.arange(chunk.shape[0], device=chunk.device)
        # the logits in base 2, log2(e) x (weight chunk^T + bias) (classes, rows), the scale folded into the product:
        # exp2 takes a third of exp's time on a CPU (0.35 against 1.05 ms for 5,000 x 256, AVX-512, one thread)
        logits = torch.addmm(bias_column, weight, chunk.T, alpha=LOG2_E,
                             out=buffer[: weight.shape[0] * chunk.shape[0]].view(weight.shape[0], chunk.shape[0]))
        # an ignored row's target may be any id (even out of range): read one that exists, then drop the row
        safe_targets = chunk_targets.where(kept, 0)
        target_logits = logits[safe_targets, columns]
        # the log-sum-exp by hand, so that the exponentials it takes are kept: they are the softmax's numerators
        # (torch.logsumexp would take them again, and exp is the costliest of the chunk's element-wise passes)
        largest = logits.amax(dim=0)
        exponentials = logits.sub_(largest).exp2_()
        totals = exponentials.sum(dim=0)
        loss = loss + ((largest + totals.log2() - target_logits) * kept).sum() * LN_2
        if gradients is None:
            continue
        grad_hidden, grad_weight, grad_bias = gradients
        # d loss / d logits = exponentials / totals - one-hot. Neither part is written into the chunk: the division
        # scales the products' small operands and results (a row's 1 / total, 0 for an ignored row) instead of
        # every logit, and the one-hot's products are the target rows of ``weight`` and ``chunk``
        scale = kept.to(chunk.dtype) / totals
        kept_rows = kept.to(chunk.dtype).unsqueeze(1)
        # the bias's product first, while the exponentials are still in the cache from the sum: after the two large
        # products have streamed weight and its gradient through, it ran at a third of its in-cache rate
        grad_bias.addmv_(exponentials, scale)
        grad_bias.index_add_(0, safe_targets, kept_rows.squeeze(1), alpha=-1)
        torch.mm(exponentials.T, weight, out=grad_hidden[rows])
        grad_hidden[rows].mul_(scale.unsqueeze(1)).sub_(weight[safe_targets] * kept_rows)
        grad_weight.addmm_(exponentials, chunk * scale.unsqueeze(1))
        grad_weight.index_add_(0, safe_targets, chunk * kept_rows, alpha=-1)
    return loss
