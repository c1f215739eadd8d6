"""The yardstick for ``train_step.py``: the multi-view models written the plain way, from the paper's description.

    python benchmarks/plain_step.py                         # disc and gen, small size, CPU
    python benchmarks/plain_step.py --sizes small paper --steps 3 --out plain.json
    python benchmarks/plain_step.py --single gen small --steps 20     # one configuration

What a first-pass PyTorch implementation of the paper looks like, with none of the repository's work on speed:
``nn.GRU`` (bi-directional) over ``pack_padded_sequence(..., enforce_sorted=False)`` of fixed word vectors,
the linear view as the mean of ``W x_t`` over the tokens, top-component removal by power iteration on
``Z^T Z``, and

* disc (eq. 3): a_ij = cos(f_i, g_j) + cos(g_i, f_j), p_ij = softmax_n(a_in / tau), loss = -mean log p_ij over
  the pairs |i - j| <= c of the same document, tau learned;
* gen (eq. 1): x_i = U f(s_i), -mean over the words w of s_{i+1} of
  log sigma(x_i . v_w) + sum_k log sigma(-x_i . v_wk), K negatives from unigram^0.75 (``torch.multinomial``),
  and the invertibility update U <- (1 + beta) U - beta U U^T U after each Adam step.

The timing harness, the sizes, the synthetic corpus and the batches are ``train_step.py``'s (the repository's
batch reader), so both benchmarks time identical batches; only the model and its step differ. The JSON has
the same shape, with ``"benchmark": "plain_step"``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

import train_step
from skipview.models.objective import ExampleKind


@dataclass
class Output:
    loss: torch.Tensor


class BiGRU(nn.Module):
    """f: [last forward state; last backward state] of a bi-directional GRU over the real tokens."""

    def __init__(self, word_dim: int, hidden_size: int):
        super().__init__()
        self.gru = nn.GRU(word_dim, hidden_size, batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        _, last = self.gru(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        return torch.cat([last[0], last[1]], dim=-1)


def remove_top_component(z: torch.Tensor, iterations: int = 5) -> torch.Tensor:
    """z minus its projection on the top eigenvector of Z^T Z (power iteration, treated as a constant)."""
    with torch.no_grad():
        moment = z.T @ z
        u = torch.ones(z.shape[1], device=z.device)
        for _ in range(iterations):
            u = moment @ u
            u = u / u.norm()
    return z - (z @ u)[:, None] * u[None, :]


class PlainDisc(nn.Module):
    example_kind = ExampleKind.WINDOW

    def __init__(self, word_vectors: torch.Tensor, hidden_size: int, context_window: int = 3):
        super().__init__()
        self.embedding = nn.Embedding.from_pretrained(word_vectors, freeze=True)
        self.f = BiGRU(word_vectors.shape[1], hidden_size)
        self.g = nn.Linear(word_vectors.shape[1], 2 * hidden_size, bias=False)
        self.log_temperature = nn.Parameter(torch.zeros(()))
        self.context_window = context_window

    def forward(self, batch) -> Output:
        ids, lengths = batch.sentences.ids, batch.sentences.lengths_cpu
        x = self.embedding(ids)
        mask = (torch.arange(ids.shape[1])[None, :] < lengths[:, None]).to(x.device)
        f = self.f(x, lengths)
        g = (self.g(x) * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        f = nn.functional.normalize(remove_top_component(f), dim=-1)
        g = nn.functional.normalize(remove_top_component(g), dim=-1)
        agreement = f @ g.T + g @ f.T
        log_p = (agreement / self.log_temperature.exp()).log_softmax(dim=-1)
        index = torch.arange(len(ids), device=ids.device)
        positives = (((index[:, None] - index[None, :]).abs() <= self.context_window)
                     & (batch.doc_ids[:, None] == batch.doc_ids[None, :]))
        return Output(-log_p[positives].mean())

    def after_optimizer_step(self) -> None:
        pass


class PlainGen(nn.Module):
    example_kind = ExampleKind.PAIR

    def __init__(self, word_vectors: torch.Tensor, counts: torch.Tensor, hidden_size: int, negatives: int = 5,
                 beta: float = 0.01):
        super().__init__()
        self.embedding = nn.Embedding.from_pretrained(word_vectors, freeze=True)
        self.f = BiGRU(word_vectors.shape[1], hidden_size)
        self.decoder = nn.Parameter(torch.randn(word_vectors.shape[1], 2 * hidden_size) * 0.01)
        self.register_buffer("noise", counts.double() ** 0.75)
        self.negatives, self.beta = negatives, beta

    def forward(self, batch) -> Output:
        source, target = batch.sentences, batch.next
        x = self.f(self.embedding(source.ids), source.lengths_cpu) @ self.decoder.T          # (B, word dim)
        mask = (torch.arange(target.ids.shape[1])[None, :] < target.lengths_cpu[:, None]).to(x.device)
        positive = (self.embedding(target.ids) * x[:, None, :]).sum(-1)                     # (B, T)
        drawn = torch.multinomial(self.noise, target.ids.numel() * self.negatives, replacement=True)
        negative_vectors = self.embedding(drawn).view(*target.ids.shape, self.negatives, -1)
        negative = (negative_vectors * x[:, None, None, :]).sum(-1)                         # (B, T, K)
        log_likelihood = nn.functional.logsigmoid(positive) + nn.functional.logsigmoid(-negative).sum(-1)
        return Output(-log_likelihood[mask].mean())

    @torch.no_grad()
    def after_optimizer_step(self) -> None:
        u = self.decoder
        u.copy_((1 + self.beta) * u - self.beta * (u @ u.T) @ u)


def build_plain(name: str, settings: dict, *, vocab, word_vectors) -> nn.Module:
    vectors = torch.as_tensor(word_vectors)
    if name == "disc":
        return PlainDisc(vectors, settings["hidden_size"])
    if name == "gen":
        return PlainGen(vectors, torch.as_tensor(vocab.counts), settings["hidden_size"])
    raise ValueError(f"the plain yardstick has disc and gen, not {name!r}")


if __name__ == "__main__":
    train_step.main(benchmark="plain_step", build=build_plain, objectives=["disc", "gen"], description=__doc__,
                    script=__file__)
