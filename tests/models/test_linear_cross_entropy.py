"""The chunked linear + full-softmax cross-entropy against ``cross_entropy`` of the whole logits: loss and gradients."""

import pytest
import torch

from skipview.models.linear_cross_entropy import linear_cross_entropy

ROWS, WIDTH, CLASSES, IGNORED = 23, 6, 11, 0


def _problem():
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(ROWS, WIDTH, generator=generator)
    weight = torch.randn(CLASSES, WIDTH, generator=generator)
    bias = torch.randn(CLASSES, generator=generator)
    targets = torch.randint(1, CLASSES, (ROWS,), generator=generator)
    targets[[3, 17]] = IGNORED                      # ignored rows, one in each of two chunks
    return hidden, weight, bias, targets


@pytest.mark.parametrize("chunk_rows", [1, 5, ROWS, 64])
def test_chunked_loss_and_gradients_equal_the_whole_logits(chunk_rows):
    """Chunks that divide the rows, that do not, one chunk and a chunk larger than the rows: the same summed loss
    and the same gradients of the input, the weight and the bias, ignored rows adding nothing to either."""
    results = []
    for loss_of in (lambda h, w, b, t: linear_cross_entropy(h, w, b, t, IGNORED, chunk_rows),
                    lambda h, w, b, t: torch.nn.functional.cross_entropy(
                        torch.nn.functional.linear(h, w, b), t, reduction="sum", ignore_index=IGNORED)):
        inputs = [x.clone().requires_grad_() for x in _problem()[:3]]
        loss = loss_of(*inputs, _problem()[3])
        (loss * 0.37).backward()                    # a loss gradient other than 1 reaches every gradient
        results.append([loss, *(x.grad for x in inputs)])
    for chunked, whole in zip(*results):
        torch.testing.assert_close(chunked, whole, rtol=1e-5, atol=1e-6)
    assert results[0][1][[3, 17]].abs().max() == 0


def test_without_gradients_the_loss_is_the_same():
    hidden, weight, bias, targets = _problem()
    with torch.no_grad():
        torch.testing.assert_close(
            linear_cross_entropy(hidden, weight, bias, targets, IGNORED, chunk_rows=4),
            torch.nn.functional.cross_entropy(hidden @ weight.T + bias, targets, reduction="sum", ignore_index=IGNORED))


def test_logits_far_beyond_exps_range_give_the_same_loss_and_gradients():
    """Logits in the hundreds (exp would overflow float32 past 88): the shift by each row's largest logit, taken in
    base 2, keeps the loss and the gradients those of ``cross_entropy``."""
    hidden, weight, bias, targets = _problem()
    results = []
    for loss_of in (lambda h, w, b: linear_cross_entropy(h, w, b, targets, IGNORED, chunk_rows=5),
                    lambda h, w, b: torch.nn.functional.cross_entropy(
                        torch.nn.functional.linear(h, w, b), targets, reduction="sum", ignore_index=IGNORED)):
        inputs = [x.clone().requires_grad_() for x in (hidden * 30, weight, bias * 30)]
        loss = loss_of(*inputs)
        loss.backward()
        results.append([loss, *(x.grad for x in inputs)])
    assert results[0][0] > 100 and torch.isfinite(results[0][0])
    for chunked, whole in zip(*results):
        torch.testing.assert_close(chunked, whole, rtol=1e-5, atol=1e-5)


def test_gradients_written_in_the_forward_pass_gradcheck():
    """The gradients the forward writes (the softmax's division and the one-hot applied to the products' operands)
    against finite differences, in float64, with an ignored row and chunks that do not divide the rows."""
    hidden, weight, bias, targets = _problem()
    inputs = [x.double().requires_grad_() for x in (hidden[:7], weight, bias)]   # row 3 is ignored
    assert torch.autograd.gradcheck(lambda h, w, b: linear_cross_entropy(h, w, b, targets[:7], IGNORED, chunk_rows=3),
                                    inputs)
