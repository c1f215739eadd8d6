"""SentenceEncoder: save/load round trip, batch-size independence, post-processing, ensembles."""

import json

import numpy as np
import pytest
import torch

from skipview.models import registry
from skipview.models.batching import sample_sentence_ids
from skipview.models.encoder import PostProcessing, SentenceEncoder

SENTENCES = ["t0w1 fill2 fill3 t0w4 .", "Fill1 t3w2, fill5!", "", "t5w0 t5w1 t5w2 fill0 fill1 fill2 fill3 fill4",
             "unknownword fill1", "t7w3"]


@pytest.fixture(params=["disc", "gen"])
def encoder(request, topic_corpus):
    corpus = topic_corpus.train
    torch.manual_seed(0)
    objective = registry.build_objective(request.param, {"hidden_size": 8}, vocab=corpus.vocab,
                                         word_vectors=topic_corpus.word_vectors)
    model = objective.sentence_encoder(corpus.tokenizer, corpus.vocab)
    model.fit_postprocessing(sample_sentence_ids(corpus, 300))
    return model


@pytest.mark.parametrize("mode", ["unsupervised", "supervised"])
def test_save_load_round_trip_gives_identical_vectors(encoder, tmp_path, mode):
    path = encoder.save(tmp_path / "model")
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "model.safetensors",
                                                      "postprocessing.safetensors", "vocab.tsv", "word_vectors.npy"]
    loaded = SentenceEncoder.load(path)
    for view in ["ensemble", *encoder.view_names]:
        assert np.array_equal(encoder.encode(SENTENCES, mode, view), loaded.encode(SENTENCES, mode, view))
    encoder.save(path)                                                   # overwriting a model directory is fine
    assert not [p for p in tmp_path.iterdir() if p.name != "model"]     # no staging leftovers


def test_the_loaded_word_vectors_map_the_file_copy_on_write(encoder, tmp_path):
    path = encoder.save(tmp_path / "model")
    loaded = SentenceEncoder.load(path)
    stored = np.load(path / "word_vectors.npy")
    # the tensor's memory is the file's mapping (the page cache, shared), not a private copy
    pointer = loaded.word_vectors.data_ptr()
    mapped = [line.split()[0].split("-") for line in open("/proc/self/maps") if line.rstrip().endswith(
        str((path / "word_vectors.npy").resolve()))]
    assert any(int(start, 16) <= pointer < int(end, 16) for start, end in mapped)
    assert np.array_equal(loaded.word_vectors.numpy(), stored)
    loaded.word_vectors[1] += 1.0                                       # a write stays in this process
    assert np.array_equal(np.load(path / "word_vectors.npy"), stored)


def test_save_refuses_to_overwrite_a_foreign_directory(encoder, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a model directory"):
        encoder.save(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("mode", ["unsupervised", "supervised"])
def test_encode_does_not_depend_on_batch_size(encoder, mode):
    many = SENTENCES * 7
    reference = encoder.encode(many, mode, batch_size=len(many))
    for batch_size in (1, 3, 16):
        np.testing.assert_allclose(encoder.encode(many, mode, batch_size=batch_size), reference, rtol=0, atol=2e-6)


def test_postprocessing_removes_the_stored_component_and_normalises(encoder):
    for mode in ("unsupervised", "supervised"):
        for view in encoder.view_names:
            vectors = encoder.encode(SENTENCES, mode, view)
            u = encoder.postprocessing.components[(view, mode)].numpy()
            nonempty = np.linalg.norm(vectors, axis=1) > 0
            np.testing.assert_allclose(np.linalg.norm(vectors[nonempty], axis=1), 1.0, rtol=1e-5)
            np.testing.assert_allclose(vectors @ u, 0.0, atol=1e-5)
            assert vectors.shape[1] == encoder.views[view].output_dim(mode)


def test_ensemble_is_the_average_unsupervised_and_the_concatenation_supervised(encoder):
    f, g = (encoder.encode(SENTENCES, "unsupervised", v) for v in ("f", "g"))
    np.testing.assert_allclose(encoder.encode(SENTENCES, "unsupervised"), (f + g) / 2, atol=1e-6)
    f, g = (encoder.encode(SENTENCES, "supervised", v) for v in ("f", "g"))
    np.testing.assert_allclose(encoder.encode(SENTENCES, "supervised"), np.concatenate([f, g], 1), atol=1e-6)


def test_components_fitted_on_the_task_are_used_without_replacing_the_stored_ones(encoder):
    stored = {k: v.clone() for k, v in encoder.postprocessing.components.items()}
    task = encoder.fit_postprocessing(SENTENCES, store=False)
    assert all(torch.equal(encoder.postprocessing.components[k], v) for k, v in stored.items())
    vectors = encoder.encode(SENTENCES, view="f", postprocessing=task)
    np.testing.assert_allclose(vectors @ task.components[("f", "unsupervised")].numpy(), 0, atol=1e-5)
    raw = encoder.encode(SENTENCES, view="f", postprocessing="none")
    assert not np.allclose(raw, vectors)


@pytest.mark.parametrize("mode", ["unsupervised", "supervised"])
def test_input_postprocessing_fits_each_views_component_on_the_call_itself(encoder, mode):
    fitted = encoder.fit_postprocessing(SENTENCES, modes=[mode], store=False)
    for view in encoder.view_names:
        np.testing.assert_allclose(encoder.encode(SENTENCES, mode, view, postprocessing="input"),
                                   encoder.encode(SENTENCES, mode, view, postprocessing=fitted), atol=1e-6)
    # a sentence's vector now depends on the company it is encoded in
    alone = encoder.encode(SENTENCES[:3], mode, postprocessing="input")
    assert not np.allclose(alone, encoder.encode(SENTENCES, mode, postprocessing="input")[:3], atol=1e-4)


def test_tokenisation_is_the_corpus_one_and_unknown_words_map_to_unk(encoder):
    ids = encoder.token_ids(["Fill1 t3w2, fill5!", "unknownword"])
    assert encoder.vocab.decode(ids[0]) == ["fill1", "t3w2", "<unk>", "fill5", "<unk>"]     # lower-cased, split
    assert encoder.vocab.decode(ids[1]) == ["<unk>"]


def test_clear_errors(encoder, tmp_path):
    with pytest.raises(ValueError, match="unknown view 'h'"):
        encoder.encode(SENTENCES, view="h")
    with pytest.raises(ValueError, match="mode must be one of"):
        encoder.encode(SENTENCES, mode="both")
    bare = SentenceEncoder(dict(encoder.views), encoder.vocab, encoder.tokenizer, encoder.word_vectors)
    with pytest.raises(KeyError, match="fit_postprocessing"):
        bare.encode(SENTENCES)
    with pytest.raises(FileNotFoundError, match="config.json is missing"):
        SentenceEncoder.load(tmp_path)
    path = encoder.save(tmp_path / "m")
    config = json.loads((path / "config.json").read_text())
    config["views"]["f"]["kind"] = "lstm"
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(KeyError, match="unknown view kind 'lstm'"):
        SentenceEncoder.load(path)


def test_encoding_no_sentences_gives_an_empty_matrix_of_the_right_width(encoder):
    assert encoder.encode([], "supervised").shape == (0, sum(v.output_dim("supervised") for v in encoder.views.values()))


def test_postprocessing_state_round_trip():
    components = {("f", "unsupervised"): torch.ones(3), ("g1", "supervised"): torch.zeros(2)}
    restored = PostProcessing.from_state(PostProcessing(components).state()).components
    assert restored.keys() == components.keys()


def test_several_components_are_removed_piecewise_by_their_share_of_the_squared_singular_values(encoder):
    raw = encoder.raw_representations(encoder.token_ids(SENTENCES), "unsupervised", ["g"])["g"].double()
    _, s, vt = torch.linalg.svd(raw, full_matrices=False)
    share = s[:3] ** 2 / (s[:3] ** 2).sum()
    expected = raw - sum(share[i] * torch.outer(raw @ vt[i], vt[i]) for i in range(3))
    got = encoder.encode(SENTENCES, "unsupervised", "g", postprocessing="input", components=3)
    np.testing.assert_allclose(got, torch.nn.functional.normalize(expected, dim=-1).numpy(), atol=1e-5)
    with pytest.raises(ValueError, match="fitted on the input only"):
        encoder.encode(SENTENCES, "unsupervised", "g", components=3)
