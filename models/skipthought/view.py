"""The inference side of skip-thought: a ``View`` for ``SentenceEncoder``.

The skip-thought vector is the encoder's final state (uni-skip) or the concatenation of the forward and
backward final states (bi-skip) — the same vector for every task, so both pooling modes return it (the paper
feeds it to linear models unchanged). The view carries its own word-embedding table: the trained rows plus,
after vocabulary expansion, a mapped row for every other word of the corpus vocabulary that has a word vector.
Ids beyond the table are ``<unk>``, as in training.

This module imports nothing of ``SentenceEncoder``: ``SentenceEncoder.load`` imports it to rebuild a saved view.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from skipview.models.batching import Sentences
from skipview.models.skipthought.network import ResetGate, SentenceGRUEncoder
from skipview.models.views import Mode, View, register_view
from skipview.models.vocab import UNK_ID


@register_view
class SkipThoughtView(View):
    kind = "skipthought"

    def __init__(self, encoder: Literal["uni", "bi"], num_words: int, embedding_dim: int, hidden_size: int,
                 reset_gate: ResetGate = "paper"):
        super().__init__()
        self.encoder_kind, self.num_words = encoder, num_words
        self.embedding_dim, self.hidden_size, self.reset_gate = embedding_dim, hidden_size, reset_gate
        self.embedding = nn.Embedding(num_words, embedding_dim)
        self.encoder = SentenceGRUEncoder(embedding_dim, hidden_size, encoder == "bi", reset_gate)

    def config(self) -> dict:
        return {"encoder": self.encoder_kind, "num_words": self.num_words, "embedding_dim": self.embedding_dim,
                "hidden_size": self.hidden_size, "reset_gate": self.reset_gate}

    def output_dim(self, mode: Mode) -> int:
        return self.hidden_size

    def encode(self, sentences: Sentences, mode: Mode, word_vectors: torch.Tensor | None) -> torch.Tensor:
        ids = sentences.ids.masked_fill(sentences.ids >= self.num_words, UNK_ID)
        return self.encoder(self.embedding.weight, ids, sentences.lengths_cpu)
