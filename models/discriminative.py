"""Multi-view discriminative objective ("disc"), multi-view paper section 2.3, with the Table 6 ablations.

A batch is N consecutive sentences. Each view encodes every sentence (training representation); per view the
top principal component of the batch is estimated by power iteration and projected out (section 2.4), then

    a_ij = cos(z^A_i, z^B_j) + cos(z^B_i, z^A_j)        (two views A, B: fg, ff, gg)
    a_ij = 2 cos(z_i, z_j)                              (one view: f or g)
    p_ij = exp(a_ij / tau) / sum_n exp(a_in / tau)          (n over the N sentences of the batch, n = i included)
    loss = - mean over positive pairs (i, j) of log p_ij,  positives: |i - j| <= c and same document.

tau = exp(log_tau) is trainable, initially 1.

Eq. 3 as printed: the positives are ``|i - j| <= c``, so ``j = i`` is one of them (for two views, the agreement
of a sentence's own two views, the multi-view term proper), and the denominator runs over a window of N sentences
with ``n = i`` in it, here the batch. The strict reading ``0 < |i - j| <= c`` differs; the paper is followed
(models/MULTIVIEW_CHOICES.md, items 6-7). ``self_pairs: false`` trains the strict reading instead (j = i is no
positive, n = i leaves the denominator), so the two can be compared on the same data.
"""

from __future__ import annotations

import copy
import math
from typing import Literal

import torch
from pydantic import Field

from skipview.models.batching import WindowBatch
from skipview.models.encoder import SentenceEncoder
from skipview.models.objective import ExampleKind, Objective, ObjectiveConfig, ObjectiveOutput
from skipview.models.pca import power_iteration, remove_component
from skipview.models.views import WordWeights, build_multiview_encoder, frozen_word_vectors
from skipview.models.word_weights import usif_weights

# Table 6 variants: view names of each configuration and the encoder type behind each name
VIEW_LAYOUTS: dict[str, dict[str, Literal["f", "g"]]] = {
    "fg": {"f": "f", "g": "g"},
    "ff": {"f1": "f", "f2": "f"},
    "gg": {"g1": "g", "g2": "g"},
    "f": {"f": "f"},
    "g": {"g": "g"},
}


class DiscriminativeConfig(ObjectiveConfig):
    views: Literal["fg", "ff", "gg", "f", "g"] = Field("fg", description="fg is the method; the rest are Table 6 ablations")
    hidden_size: int = Field(1024, gt=0, description="GRU hidden size per direction h; g outputs 2h")
    context_window: int = Field(3, gt=0, description="c: positives are |i-j| <= c in the same document (eq. 3)")
    remove_top_component: bool = Field(True, description="training-time top-PC removal by power iteration")
    power_iterations: int = Field(5, gt=0, description="T, power-iteration steps")
    initial_temperature: float = Field(1.0, gt=0)
    learn_temperature: bool = True
    self_pairs: bool = Field(True, description="eq. 3 as printed: j = i is a positive and n = i is in the "
                                              "denominator; false: the strict reading, 0 < |i-j| <= c and n != i")
    g_word_weights: WordWeights = Field("none", description="not the paper's: usif makes g average unit word vectors "
                                        "weighted by uSIF's a/(a/2+p(w)); usif_learned starts from those weights and "
                                        "learns one log-gain per word (views.LinearView)")


def positive_mask(doc_ids: torch.Tensor, window: int, self_pairs: bool = True) -> torch.Tensor:
    """(N, N) bool: j is a positive of i when |i - j| <= window and both are in the same document; i itself is
    one (eq. 3) unless ``self_pairs`` is false."""
    index = torch.arange(doc_ids.shape[0], device=doc_ids.device)
    distance = (index[:, None] - index[None, :]).abs()
    positives = (distance <= window) & (doc_ids[:, None] == doc_ids[None, :])
    return positives if self_pairs else positives & (distance > 0)


def agreement_matrix(views: list[torch.Tensor]) -> torch.Tensor:
    """a_ij from unit-norm representations: cos(A_i, B_j) + cos(B_i, A_j), or 2 cos(Z_i, Z_j) for one view."""
    if len(views) == 1:
        return 2.0 * views[0] @ views[0].T
    similarity = views[0] @ views[1].T
    return similarity + similarity.T


def agreement_diagnostics(views: list[torch.Tensor], neighbours: torch.Tensor) -> dict[str, torch.Tensor]:
    """How the views relate, as mean cosines (no grad): between a sentence's two views (two views only: the
    multi-view term of eq. 3; near 1 means f and g map a sentence to the same direction), and, across views
    where there are two, between a sentence and its context neighbours and between a sentence and the rest of
    the batch. The gap between the last two is what the softmax over a_ij / tau ranks."""
    similarity = views[0] @ views[-1].T
    others = ~neighbours & ~torch.eye(len(similarity), dtype=torch.bool, device=similarity.device)

    def mean(mask: torch.Tensor) -> torch.Tensor:      # 0 for an empty mask (a batch of one-sentence documents)
        return similarity.masked_fill(~mask, 0.0).sum() / mask.sum().clamp_min(1)

    metrics = {"cosine_neighbours": mean(neighbours), "cosine_others": mean(others)}
    if len(views) == 2:
        metrics["cosine_views"] = similarity.diagonal().mean()
    return metrics


def contrastive_loss(agreement: torch.Tensor, positives: torch.Tensor, temperature: torch.Tensor,
                     self_pairs: bool = True):
    """(loss, log p) : -mean over positive pairs of log softmax_n(a_in / tau)_j, n = i in the softmax unless
    ``self_pairs`` is false. No host sync."""
    logits = agreement / temperature
    if not self_pairs:
        eye = torch.eye(logits.shape[0], dtype=torch.bool, device=logits.device)
        logits = logits.masked_fill(eye, float("-inf"))
    log_p = logits.log_softmax(dim=-1)
    count = positives.sum()
    loss = -log_p.masked_fill(~positives, 0.0).sum() / count.clamp_min(1)
    return loss, log_p


class DiscriminativeObjective(Objective):
    config_class = DiscriminativeConfig
    example_kind = ExampleKind.WINDOW

    def __init__(self, config: DiscriminativeConfig, *, vocab, word_vectors):
        super().__init__()
        self.config = config
        # constant buffer (not saved in checkpoints: rebuilt from vectors.npy); DDP should not re-broadcast it
        self.register_buffer("word_vectors", frozen_word_vectors(word_vectors, len(vocab)), persistent=False)
        dim = self.word_vectors.shape[1]
        self.encoders = torch.nn.ModuleDict({
            name: build_multiview_encoder(kind, dim, config.hidden_size, config.g_word_weights, len(vocab))
            for name, kind in VIEW_LAYOUTS[config.views].items()})
        if config.g_word_weights != "none":
            weights = torch.as_tensor(usif_weights(vocab.counts))
            for name, kind in VIEW_LAYOUTS[config.views].items():
                if kind == "g":
                    self.encoders[name].set_word_scale(weights, self.word_vectors)
        log_tau = torch.tensor(math.log(config.initial_temperature))
        if config.learn_temperature:
            self.log_temperature = torch.nn.Parameter(log_tau)
        else:
            self.register_buffer("log_temperature", log_tau)

    def representations(self, batch: WindowBatch) -> list[torch.Tensor]:
        """Per view: training representations after top-PC removal, L2-normalised, float32 (N, 2h)."""
        sentences = batch.sentences
        # from token ids: on a CPU f projects each distinct word of the batch once (0.23 distinct words per token at
        # N = 512 on the novels with the news) instead of every token
        encoded = [encoder.represent_words(sentences, self.word_vectors) for encoder in self.encoders.values()]
        outputs = []
        # everything after the encoders is N x N or N x 2h work: cheap, and kept in float32 under autocast
        # (bf16 cosines and power iterations lose the small differences the softmax has to rank)
        with torch.autocast(sentences.ids.device.type, enabled=False):
            for z in encoded:
                z = z.float()
                if self.config.remove_top_component:
                    # the component is a batch statistic treated as a constant (stop-gradient), like the fixed
                    # component removed at test time
                    z = remove_component(z, power_iteration(z.detach(), self.config.power_iterations))
                outputs.append(torch.nn.functional.normalize(z, dim=-1))
        return outputs

    def forward(self, batch: WindowBatch) -> ObjectiveOutput:
        views = self.representations(batch)
        positives = positive_mask(batch.doc_ids, self.config.context_window, self.config.self_pairs)
        temperature = self.log_temperature.exp()
        with torch.autocast(views[0].device.type, enabled=False):
            loss, log_p = contrastive_loss(agreement_matrix(views), positives, temperature, self.config.self_pairs)
        with torch.no_grad():
            # share of anchors (with a neighbour in their document) whose most likely other sentence is one
            eye = torch.eye(positives.shape[0], dtype=torch.bool, device=positives.device)
            neighbours = positives & ~eye
            has_neighbour = neighbours.any(dim=1)
            guess = log_p.masked_fill(eye, float("-inf")).argmax(dim=1, keepdim=True)
            hit = neighbours.gather(1, guess).squeeze(1) & has_neighbour
            accuracy = hit.sum() / has_neighbour.sum().clamp_min(1)
            metrics = {"loss": loss.detach(), "temperature": temperature.detach(), "neighbour_accuracy": accuracy,
                       "positive_pairs": positives.sum(), **agreement_diagnostics(views, neighbours)}
        return ObjectiveOutput(loss, metrics)

    def sentence_encoder(self, tokenizer, vocab) -> SentenceEncoder:
        views = {name: copy.deepcopy(encoder).cpu().eval() for name, encoder in self.encoders.items()}
        return SentenceEncoder(views, vocab, tokenizer, self.word_vectors.cpu(),
                               metadata={"objective": "disc", "settings": self.config.model_dump()})
