"""The skip-thought objective (eq. 10) behind the trainer contract of ``skipview.models.objective``.

For each tuple (s_{i-1}, s_i, s_{i+1}) the loss is the negative of eq. 10: the next- and previous-sentence
log-likelihoods under teacher forcing, each summed over the sentence's words and ``<eos>``; then averaged
over the examples of the batch (DESIGN: every loss is per example, so learning rates do not depend on the
batch size). Metrics are 0-d tensors computed without host syncs: token counts come from the host lengths.
"""

from __future__ import annotations

import torch

from skipview.models.objective import ExampleKind, Objective, ObjectiveOutput
from skipview.models.skipthought.config import SkipThoughtConfig
from skipview.models.skipthought.network import SkipThoughtNetwork


class SkipThoughtObjective(Objective):
    example_kind = ExampleKind.TRIPLE

    def __init__(self, config: SkipThoughtConfig, corpus_vocab_size: int, word_vectors: torch.Tensor | None = None):
        super().__init__()
        self.config = config
        self.network = SkipThoughtNetwork.for_vocab_size(config, corpus_vocab_size)
        # kept off the module's state (no parameter, no buffer): DDP must not broadcast it and checkpoints need
        # not carry it; it is only read when the trained encoder is exported with vocabulary expansion
        self.__dict__["word_vectors"] = word_vectors

    def forward(self, batch) -> ObjectiveOutput:
        """``batch``: a TRIPLE batch (``previous``, ``sentences``, ``next``; each with ``ids``, ``lengths_cpu``)."""
        network = self.network
        current = batch.sentences
        context = network.encode(current.ids, current.lengths_cpu)
        examples = current.ids.shape[0]
        metrics, total = {}, 0.0
        for name, decoder, target in (("next", network.next_decoder, batch.next),
                                      ("previous", network.previous_decoder, batch.previous)):
            nll = network.sentence_nll(decoder, context, target.ids, target.lengths_cpu)
            total = total + nll
            tokens = int(target.lengths_cpu.sum()) + examples          # words + one <eos> each, counted on the host
            metrics[f"nll_{name}"] = nll.detach() / examples
            metrics[f"perplexity_{name}"] = torch.exp(nll.detach() / tokens)
        loss = total / examples
        metrics["loss"] = loss.detach()
        return ObjectiveOutput(loss=loss, metrics=metrics)
