"""The skip-thought objective (eq. 10) behind the trainer contract of ``skipview.models.objective``.

For each tuple (s_{i-1}, s_i, s_{i+1}) the loss is the negative of eq. 10: the next- and previous-sentence
log-likelihoods under teacher forcing, each summed over the sentence's words and ``<eos>``; then averaged
over the examples of the batch (ARCHITECTURE.md section 3: every loss is per example, so learning rates do not depend on the
batch size). Metrics are 0-d tensors computed without host syncs: token counts come from the host lengths.

After training, ``sentence_encoder`` exports the encoder as a ``SentenceEncoder`` whose embedding table is
extended by vocabulary expansion (section 2.2) to every corpus word that has a word vector, when the run has
word vectors. The decoders stay in the objective (its checkpoint) for text generation
(``skipview.models.skipthought.generation`` on ``objective.network``).
"""

from __future__ import annotations

import numpy as np
import torch

from skipview.models.encoder import SentenceEncoder
from skipview.models.objective import ExampleKind, Objective, ObjectiveOutput
from skipview.models.skipthought.config import TRAINING_DEFAULTS, SkipThoughtConfig
from skipview.models.skipthought.network import SkipThoughtNetwork
from skipview.models.skipthought.view import SkipThoughtView
from skipview.models.text import Tokenizer
from skipview.models.vocab import Vocab
from skipview.models.vocab_expansion import VocabularyExpansion


class SkipThoughtObjective(Objective):
    example_kind = ExampleKind.TRIPLE
    config_class = SkipThoughtConfig
    training_defaults = TRAINING_DEFAULTS

    def __init__(self, config: SkipThoughtConfig, *, vocab: Vocab, word_vectors: np.ndarray | None):
        super().__init__()
        self.config = config
        self.network = SkipThoughtNetwork.for_vocab_size(config, len(vocab))
        if word_vectors is not None and len(word_vectors) != len(vocab):
            raise ValueError(f"word vectors have {len(word_vectors)} rows for a vocabulary of {len(vocab)} words: "
                             "they must be aligned with the corpus vocabulary")
        # a plain attribute, not a buffer: DDP must not broadcast it and checkpoints need not carry it; it is
        # only read when the encoder is exported with vocabulary expansion
        self.word_vectors = word_vectors

    def forward(self, batch) -> ObjectiveOutput:
        """``batch``: a TRIPLE batch (``previous``, ``sentences``, ``next``; each with ``ids``, ``lengths_cpu``)."""
        examples = batch.sentences.ids.shape[0]
        metrics, total = {}, 0.0
        for name, (nll, tokens) in self.decoder_nlls(batch).items():
            total = total + nll
            metrics[f"nll_{name}"] = nll.detach() / examples
            metrics[f"perplexity_{name}"] = torch.exp(nll.detach() / tokens)
        loss = total / examples
        metrics["loss"] = loss.detach()
        return ObjectiveOutput(loss=loss, metrics=metrics)

    def decoder_nlls(self, batch) -> dict[str, tuple[torch.Tensor, int]]:
        """Per decoder, ``next`` then ``previous``: the negative log-likelihood of its target sentences summed over
        the batch (a 0-d tensor) and the number of tokens it predicted, words and one ``<eos>`` each, counted on
        the host. What the loss and a held-out perplexity (``perplexity.py``) are made of."""
        network = self.network
        current = batch.sentences
        context = network.encode(current.ids, current.lengths_cpu)
        examples = current.ids.shape[0]
        return {name: (network.sentence_nll(decoder, context, target.ids, target.lengths_cpu),
                       int(target.lengths_cpu.sum()) + examples)
                for name, decoder, target in (("next", network.next_decoder, batch.next),
                                              ("previous", network.previous_decoder, batch.previous))}

    def sentence_encoder(self, tokenizer: Tokenizer, vocab: Vocab) -> SentenceEncoder:
        """The trained encoder as a one-view ``SentenceEncoder`` (view "uni" or "bi"), vocabulary-expanded."""
        network, config = self.network, self.config
        trained = network.embedding.weight.detach()
        metadata = {"objective": "skipthought", "config": config.model_dump(), "trained_words": network.num_words}
        if self.word_vectors is None:
            table = trained
        else:
            expansion = VocabularyExpansion.fit(trained, torch.as_tensor(self.word_vectors))
            table = expansion.embeddings
            metadata["vocab_expansion"] = {"shared_words": expansion.num_shared, "words": len(table)}
        view = SkipThoughtView(config.encoder, len(table), config.embedding_dim, config.hidden_size,
                               config.reset_gate)
        with torch.no_grad():
            view.embedding.weight.copy_(table)
        view.encoder.load_state_dict(network.encoder.state_dict())
        # whole sentences at test time, as the paper encodes them (training caps them at the batcher's max_len)
        encoder = SentenceEncoder({config.encoder: view}, vocab, tokenizer, max_len=None, metadata=metadata)
        return encoder.to(trained.device)
