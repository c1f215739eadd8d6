"""Skip-thought's perplexity on a corpus no training read: the training objective's next- and previous-sentence
negative log-likelihood (eq. 10: teacher forcing, the full softmax, each target sentence's words and ``<eos>``;
``SkipThoughtObjective.decoder_nlls``) summed over every triple of the corpus, then ``exp(total NLL / total
tokens)`` per decoder: one figure for the whole corpus, not a mean of per-batch perplexities, which would weigh a
batch of short sentences like one of long ones.

The examples are the training examples' kind, read as training reads them: every sentence with its previous and
next in the same document, each sentence cut at the run's ``max_len`` (``batching.every_example``, in corpus
order). So the figure is the training loss's own quantity on unseen text. A held-out corpus has a vocabulary of its
own (``skipview data cut`` counts it again on its documents), so its ids are read in the training corpus's by word
(``Vocab.ids_in``): a word the training corpus never had is ``<unk>``, and one past the model's ``vocab_size``
becomes ``<unk>`` in the network (``clip_ids``), as in training.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

import torch

from skipview.models.batching import TripleBatch, every_example
from skipview.models.corpus import PreparedCorpus
from skipview.models.objective import ExampleKind
from skipview.models.skipthought.objective import SkipThoughtObjective
from skipview.models.vocab import Vocab


@dataclass(frozen=True)
class CorpusNLL:
    """The summed negative log-likelihood (nats) and predicted tokens of each decoder (``next``, ``previous``) over
    ``examples`` triples."""

    examples: int
    nll: dict[str, float]
    tokens: dict[str, int]

    def perplexity(self, decoder: str) -> float:
        return math.exp(self.nll[decoder] / self.tokens[decoder])


def heldout_batches(corpus: PreparedCorpus, training_vocab: Vocab, batch_size: int, max_len: int) -> list[TripleBatch]:
    """Every triple of ``corpus`` in corpus order, its ids those of ``training_vocab``; in memory, to be read once
    for all the checkpoints evaluated on it (a held-out slice is small)."""
    ids = torch.from_numpy(corpus.vocab.ids_in(training_vocab))
    return [TripleBatch(*(replace(sentences, ids=ids[sentences.ids])
                          for sentences in (batch.previous, batch.sentences, batch.next)))
            for batch in every_example(corpus, ExampleKind.TRIPLE, batch_size, max_len=max_len)]


def corpus_nll(objective: SkipThoughtObjective, batches: Iterable[TripleBatch]) -> CorpusNLL:
    """The objective's NLL over ``batches``, in eval mode and without gradients; summed on the host in double
    precision, batch after batch in their order, so the same batches give the same figure."""
    objective.eval()
    examples, nll, tokens = 0, {}, {}
    with torch.inference_mode():
        for batch in batches:
            examples += batch.num_sentences
            for name, (value, count) in objective.decoder_nlls(batch).items():
                nll[name] = nll.get(name, 0.0) + float(value)
                tokens[name] = tokens.get(name, 0) + count
    return CorpusNLL(examples, nll, tokens)
