"""Skip-thought learns, honestly measured: on a prepared corpus with planted structure (every sentence determines
its neighbours), a few hundred CPU steps through the real registry, batcher and objective bring the
next-sentence perplexity far below its starting value and below the unigram perplexity, and the decoder relies
on the encoded sentence (wrong sentence vectors make it much worse)."""

import math

import numpy as np
import torch

from prepared_data import write_prepared_corpus
from skipview.models.batching import iterate_batches
from skipview.models.registry import build_objective
from skipview.models.vocab import EOS_ID, SPECIALS, UNK_ID

NUM_TEMPLATES, NUM_WORDS, UNSEEN_WORDS = 16, 40, 5


def write_planted_corpus(directory, seed=0, documents=60, sentences_per_document=12):
    """Sentences are drawn from 16 fixed templates; the template after template k is always succ[k] (a
    permutation), so a sentence determines both neighbours. Written in the prepared-corpus format."""
    rng = np.random.default_rng(seed)
    templates = [[f"w{i}" for i in rng.choice(NUM_WORDS, size=rng.integers(3, 7))] for _ in range(NUM_TEMPLATES)]
    successor = rng.permutation(NUM_TEMPLATES)
    docs = []
    for _ in range(documents):
        k, doc = int(rng.integers(NUM_TEMPLATES)), []
        for _ in range(sentences_per_document):
            doc.append(templates[k])
            k = int(successor[k])
        docs.append(doc)
    return write_prepared_corpus(directory, docs)


def next_sentence_perplexity(objective, corpus, contexts="true"):
    """Per-token perplexity of the next sentences (words + <eos>) over one pass of the corpus, no training.
    ``contexts="shuffled"`` decodes each next sentence from another example's sentence vector."""
    network = objective.network
    total, tokens = 0.0, 0
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for batch in iterate_batches(corpus, "triple", 32, seed=99):
            context = network.encode(batch.sentences.ids, batch.sentences.lengths_cpu)
            if contexts == "shuffled":
                context = context[torch.randperm(len(context), generator=generator)]
            total += network.sentence_nll(network.next_decoder, context, batch.next.ids,
                                          batch.next.lengths_cpu).item()
            tokens += int(batch.next.lengths_cpu.sum()) + len(context)
    return math.exp(total / tokens)


def unigram_perplexity(objective, corpus):
    """The best context-free model of the same targets: token frequencies (unseen words as <unk>, + <eos>)."""
    counts = np.zeros(objective.network.num_words)
    for batch in iterate_batches(corpus, "triple", 32, seed=99):
        ids = objective.network.clip_ids(batch.next.ids)
        for row, length in zip(ids.tolist(), batch.next.lengths_cpu.tolist(), strict=True):
            np.add.at(counts, row[:length], 1)
        counts[EOS_ID] += len(ids)
    p = counts[counts > 0] / counts.sum()
    return math.exp(-(p * np.log(p)).sum())


def test_next_sentence_perplexity_falls_far_below_start_and_unigram(tmp_path):
    torch.manual_seed(0)
    corpus = write_planted_corpus(tmp_path / "corpus")
    trained_words = len(corpus.vocab) - len(SPECIALS) - UNSEEN_WORDS   # the rarest words stay <unk> in training
    settings = {"vocab_size": trained_words, "embedding_dim": 16, "hidden_size": 32, "decoder_hidden_size": 32}
    objective = build_objective("skipthought", settings, vocab=corpus.vocab, word_vectors=None)
    assert objective.network.num_words == len(corpus.vocab) - UNSEEN_WORDS
    assert int((objective.network.clip_ids(torch.from_numpy(corpus.tokens.astype(np.int64))) == UNK_ID).sum()) > 0

    start = next_sentence_perplexity(objective, corpus)
    unigram = unigram_perplexity(objective, corpus)
    optimiser = torch.optim.Adam(objective.parameters(), lr=3e-3)
    steps, epoch = 0, 0
    while steps < 300:
        for batch in iterate_batches(corpus, objective.example_kind, 16, epoch=epoch):
            out = objective(batch)
            optimiser.zero_grad()
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(objective.parameters(), 10.0)
            optimiser.step()
            objective.after_optimizer_step()
            steps += 1
            if steps == 300:
                break
        epoch += 1
    end = next_sentence_perplexity(objective, corpus)
    shuffled = next_sentence_perplexity(objective, corpus, contexts="shuffled")
    print(f"perplexity: start {start:.2f}, unigram {unigram:.2f}, after 300 steps {end:.2f}, "
          f"with shuffled sentence vectors {shuffled:.2f}")
    # measured here (init seeds 0-3): start 33.0 (about the vocabulary size), unigram 24.4, end 1.6-1.7,
    # shuffled 6.0-8.6
    assert start > 0.8 * unigram                 # an untrained model is no better than frequencies
    assert end < 0.1 * start
    assert end < 0.15 * unigram
    assert shuffled > 2.5 * end                  # the decoder reads the encoded sentence (seeds 0-3: 3.5x-5.4x)
    assert torch.isfinite(out.loss) and set(out.metrics) >= {"perplexity_next", "perplexity_previous", "loss"}
