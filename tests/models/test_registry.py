"""Registry: objectives by name from validated configuration; errors name the key."""

import pytest

from skipview.models import registry
from skipview.models.objective import ExampleKind


def test_registered_objectives_and_their_example_kinds(topic_corpus):
    names = registry.objective_names()
    assert {"disc", "gen"} <= set(names)
    corpus = topic_corpus.train
    kinds = {name: registry.build_objective(name, {"hidden_size": 4}, vocab=corpus.vocab,
                                            word_vectors=topic_corpus.word_vectors).example_kind
             for name in ("disc", "gen")}
    assert kinds == {"disc": ExampleKind.WINDOW, "gen": ExampleKind.PAIR}


def test_paper_defaults():
    disc = registry.config_class("disc")()
    assert (disc.views, disc.hidden_size, disc.context_window, disc.power_iterations,
            disc.initial_temperature) == ("fg", 1024, 3, 5, 1.0)
    gen = registry.config_class("gen")()
    assert (gen.hidden_size, gen.negatives, gen.noise_power, gen.invertible, gen.beta) == (1024, 5, 0.75, True, 0.01)


def test_unknown_key_is_named(topic_corpus):
    with pytest.raises(ValueError, match=r"objective 'disc'.*unknown key 'widnow'"):
        registry.parse_config("disc", {"widnow": 3})


def test_bad_value_is_named():
    with pytest.raises(ValueError, match=r"key 'views'.*got 'fff'"):
        registry.parse_config("disc", {"views": "fff"})
    with pytest.raises(ValueError, match=r"key 'negatives'"):
        registry.parse_config("gen", {"negatives": 0})


def test_unknown_objective_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown objective 'quickthought'.*disc.*gen"):
        registry.config_class("quickthought")


def test_multiview_objectives_need_word_vectors(topic_corpus):
    with pytest.raises(ValueError, match="fixed word-vector matrix"):
        registry.build_objective("gen", {}, vocab=topic_corpus.train.vocab, word_vectors=None)
