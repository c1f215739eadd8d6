"""Registry: objectives by name from validated configuration; errors name the key."""

import pytest

from skipview.models import registry
from skipview.models.objective import ExampleKind


def test_registered_objectives_and_their_example_kinds(topic_corpus):
    names = registry.objective_names()
    assert {"disc", "gen"} <= set(names)
    corpus = topic_corpus.train
    small = {"disc": {"hidden_size": 4}, "gen": {"hidden_size": 4},
             "skipthought": {"hidden_size": 4, "embedding_dim": 4, "vocab_size": 20}}
    kinds = {name: registry.build_objective(name, settings, vocab=corpus.vocab,
                                            word_vectors=topic_corpus.word_vectors).example_kind
             for name, settings in small.items()}
    assert kinds == {"disc": ExampleKind.WINDOW, "gen": ExampleKind.PAIR, "skipthought": ExampleKind.TRIPLE}


def test_paper_defaults():
    disc = registry.config_class("disc")()
    assert (disc.views, disc.hidden_size, disc.context_window, disc.power_iterations,
            disc.initial_temperature) == ("fg", 1024, 3, 5, 1.0)
    gen = registry.config_class("gen")()
    assert (gen.hidden_size, gen.negatives, gen.noise_power, gen.invertible, gen.beta) == (1024, 5, 0.75, True, 0.01)
    skip = registry.config_class("skipthought")()           # uni-skip: GRU 2400, words 620, vocabulary 20k
    assert (skip.encoder, skip.hidden_size, skip.embedding_dim, skip.vocab_size, skip.reset_gate) == (
        "uni", 2400, 620, 20_000, "paper")
    assert registry.training_defaults("skipthought") == {"batch_size": 128,
                                                         "optimizer": {"lr": 1e-3, "grad_clip": 10.0}}


def test_unknown_key_is_named(topic_corpus):
    with pytest.raises(ValueError, match=r"unknown key 'widnow' for objective 'disc' \(known keys: views, hidden_size"):
        registry.parse_config("disc", {"widnow": 3})


def test_bad_value_is_named():
    with pytest.raises(ValueError, match=r"(?s)views\n  Input should be 'fg', 'ff'.*input_value='fff'"):
        registry.parse_config("disc", {"views": "fff"})
    with pytest.raises(ValueError, match=r"negatives\n  Input should be greater than 0"):
        registry.parse_config("gen", {"negatives": 0})


def test_unknown_objective_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown objective 'quickthought'.*disc.*gen"):
        registry.config_class("quickthought")


def test_multiview_objectives_need_word_vectors(topic_corpus):
    with pytest.raises(ValueError, match="fixed word-vector matrix"):
        registry.build_objective("gen", {}, vocab=topic_corpus.train.vocab, word_vectors=None)
