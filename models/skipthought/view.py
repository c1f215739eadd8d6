"""The inference side of skip-thought: a ``View`` for ``SentenceEncoder`` and combine-skip.

The skip-thought vector is the encoder's final state (uni-skip) or the concatenation of the forward and
backward final states (bi-skip) — the same vector for every task, so both pooling modes return it (the paper
feeds it to linear models unchanged). The view carries its own word-embedding table: the trained rows plus,
after vocabulary expansion, a mapped row for every other word of the corpus vocabulary that has a word vector.
Ids beyond the table are ``<unk>``, as in training.

Combine-skip (paper section 3.1) is the concatenation of a uni-skip and a bi-skip vector: a ``SentenceEncoder``
with both as views; its supervised "ensemble" is that concatenation (after the per-view L2 normalisation, as
the authors' encoder normalises each model's vectors before concatenating them).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from skipview.models.batching import Sentences
from skipview.models.encoder import PostProcessing, SentenceEncoder
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
        return self.encoder(self.embedding(ids), sentences.lengths_cpu)


def combine_skip(uni_skip: SentenceEncoder, bi_skip: SentenceEncoder) -> SentenceEncoder:
    """One encoder with the views "uni" and "bi" of a trained uni-skip and bi-skip model (same vocabulary and
    tokeniser); their fitted post-processing components come along."""
    views, components = {}, {}
    for name, model in (("uni", uni_skip), ("bi", bi_skip)):
        view = model.views[name] if name in model.views else None
        if not isinstance(view, SkipThoughtView) or view.encoder_kind != name:
            raise ValueError(f"combine-skip needs a {name}-skip model (a skip-thought view named {name!r}), "
                             f"got views {model.view_names}")
        views[name] = view
        components.update({key: u for key, u in model.postprocessing.components.items() if key[0] == name})
    if uni_skip.vocab.words != bi_skip.vocab.words or uni_skip.tokenizer != bi_skip.tokenizer:
        raise ValueError("combine-skip needs two models trained on the same vocabulary and tokeniser")
    return SentenceEncoder(views, uni_skip.vocab, uni_skip.tokenizer, max_len=uni_skip.max_len,
                           postprocessing=PostProcessing(components),
                           metadata={"objective": "skipthought", "combine_skip": True})
