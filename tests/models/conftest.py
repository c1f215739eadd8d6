"""Shared fixtures: a real prepared-corpus directory with planted topic structure, written in the test."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch
from objective_steps import train_steps
from prepared_data import write_prepared_corpus

from skipview.models.corpus import PreparedCorpus
from skipview.models.vocab import SPECIALS


@pytest.fixture(autouse=True)
def one_thread():
    """The tensors here are tiny: one thread avoids OpenMP spin-waiting, which costs 10-20x on a shared 2-core
    machine. Restored afterwards so other test folders keep their setting."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@dataclass
class TopicCorpus:
    """Documents each about one topic. A sentence has 2 topic words and 5-8 shared filler words. Words of one
    topic have nearby vectors (a topic centroid plus noise); filler vectors are random and 3x longer, so an
    untrained encoder is dominated by filler and only a learned one separates topics."""

    train: PreparedCorpus
    held_out: PreparedCorpus              # same vocabulary as train
    held_out_sentences: list[str]
    held_out_topics: np.ndarray
    word_vectors: np.ndarray
    num_topics: int


def make_topic_documents(rng, num_docs, num_topics, topic_words, filler, sentences_per_doc=(6, 12)):
    docs, topics = [], []
    for _ in range(num_docs):
        topic = int(rng.integers(num_topics))
        doc = []
        for _ in range(int(rng.integers(*sentences_per_doc))):
            words = list(rng.choice(topic_words[topic], size=2)) + list(rng.choice(filler, size=int(rng.integers(5, 9))))
            doc.append([str(w) for w in rng.permutation(words)])
        docs.append(doc)
        topics.append(topic)
    return docs, topics


@pytest.fixture(scope="session")
def topic_corpus(tmp_path_factory) -> TopicCorpus:
    rng = np.random.default_rng(1234)
    num_topics, per_topic, dim = 8, 12, 32
    topic_words = [[f"t{t}w{k}" for k in range(per_topic)] for t in range(num_topics)]
    filler = [f"fill{k}" for k in range(10)]
    train_docs, _ = make_topic_documents(rng, 1000, num_topics, topic_words, filler)
    corpus = write_prepared_corpus(tmp_path_factory.mktemp("topic_corpus"), train_docs)
    vectors = rng.standard_normal((len(corpus.vocab), dim)).astype(np.float32)
    centroids = rng.standard_normal((num_topics, dim)).astype(np.float32)
    for i, word in enumerate(corpus.vocab.words):
        if word.startswith("fill"):
            vectors[i] *= 3.0
        elif word.startswith("t"):          # like real word vectors: words of one topic lie near each other
            vectors[i] = centroids[int(word[1:word.index("w")])] + 0.7 * vectors[i]
        if word in SPECIALS:
            vectors[i] = 0.0
    held_docs, held_topics = make_topic_documents(rng, 60, num_topics, topic_words, filler)
    held_out = write_prepared_corpus(tmp_path_factory.mktemp("topic_held_out"), held_docs, corpus.vocab)
    sentences = [" ".join(s) for doc in held_docs for s in doc]
    topics = np.array([t for doc, t in zip(held_docs, held_topics) for _ in doc])
    return TopicCorpus(corpus, held_out, sentences, topics, vectors, num_topics)


@pytest.fixture
def train():
    return train_steps


@pytest.fixture(scope="session")
def write_corpus():
    return write_prepared_corpus
