"""`skipview export checkpoint` on a small skip-thought run written as the loop writes it (tests/skipthought_run.py),
without Ray: the exported model encodes as the objective's own ``sentence_encoder`` does with that checkpoint's
weights, without and with vocabulary expansion; bad input is one line and writes nothing."""

from __future__ import annotations


import numpy as np
import pytest
import torch
from prepared_data import write_training_data
from skipthought_run import write_disc_run

from skipview.models.corpus import PreparedCorpus
from skipview.models.encoder import SentenceEncoder
from skipview.models.registry import build_objective
from skipview.platform.cli import run
from skipview.platform.training import checkpoint as ckpt
from skipview.platform.training.objectives import aligned_word_vectors

# w0-w39 are the 40 words the model trained on (the corpus's most frequent, all counted alike: the first 40 after
# the specials); w40-w59 are <unk> to it, and have a word vector
TRAINED, EXPANDED = "w3 w7 w12 w20", "w3 w45 w52 w58"


def objective_at(skipthought_run, checkpoint: str, with_vectors: bool):
    corpus = PreparedCorpus(skipthought_run.settings.corpus)
    vectors = aligned_word_vectors(skipthought_run.settings.wordvecs, corpus.vocab) if with_vectors else None
    objective = build_objective("skipthought", skipthought_run.settings.objective_settings, vocab=corpus.vocab,
                                word_vectors=vectors)
    state, _ = ckpt.load(skipthought_run.folder / checkpoint, rank=0, map_location=torch.device("cpu"))
    objective.load_state_dict(state["model"])
    return objective.sentence_encoder(corpus.tokenizer, corpus.vocab)


def export(skipthought_run, out, *options) -> int:
    return run(["export", "checkpoint", str(skipthought_run.folder), str(out), "--tracking-uri", skipthought_run.uri,
                *options])


def test_the_export_encodes_as_the_objective_s_own_encoder_without_and_with_expansion(skipthought_run, tmp_path):
    plain, expanded, half = tmp_path / "plain", tmp_path / "expanded", tmp_path / "half"
    first, _, last = skipthought_run.checkpoints
    assert export(skipthought_run, plain) == 0                  # the latest kept checkpoint
    assert export(skipthought_run, expanded, "--wordvecs", skipthought_run.settings.wordvecs) == 0
    assert export(skipthought_run, half, "--step", str(skipthought_run.settings.checkpoint_every)) == 0
    sentences = [TRAINED, EXPANDED, "w1 unseen w2"]
    for out, checkpoint, with_vectors in ((plain, last, False), (expanded, last, True), (half, first, False)):
        exported = SentenceEncoder.load(out)
        own = objective_at(skipthought_run, checkpoint, with_vectors)
        np.testing.assert_allclose(exported.encode(sentences, postprocessing="none"),
                                   own.encode(sentences, postprocessing="none"), rtol=1e-6, atol=1e-6)
        recorded = exported.metadata["exported_from"]
        assert (recorded["checkpoint"], recorded["mlflow_run_id"]) == (checkpoint, skipthought_run.run_id)
        assert recorded["wordvecs"] == (skipthought_run.settings.wordvecs if with_vectors else None)
        # the post-processing is fitted on the run's own sample of training sentences, as the final model's is
        assert exported.postprocessing.components
    # expansion gives the 20 words past the trained 40 their own embeddings; the trained words keep theirs
    plain_vectors = SentenceEncoder.load(plain).encode(sentences, postprocessing="none")
    expanded_vectors = SentenceEncoder.load(expanded).encode(sentences, postprocessing="none")
    np.testing.assert_allclose(expanded_vectors[0], plain_vectors[0], rtol=1e-6, atol=1e-6)
    assert not np.allclose(expanded_vectors[1], plain_vectors[1], atol=1e-3)
    assert SentenceEncoder.load(expanded).metadata["vocab_expansion"]["words"] == len(
        PreparedCorpus(skipthought_run.settings.corpus).vocab)
    assert SentenceEncoder.load(half).metadata["exported_from"]["step"] == skipthought_run.settings.checkpoint_every


def test_bad_input_is_one_line_and_writes_nothing(skipthought_run, tmp_path, capsys):
    out = tmp_path / "model"

    def fails(*options, folder=skipthought_run.folder) -> str:
        assert run(["export", "checkpoint", str(folder), str(out), "--tracking-uri", skipthought_run.uri,
                    *options]) == 1
        assert not out.exists()
        (line,) = capsys.readouterr().err.splitlines()
        return line

    half = skipthought_run.settings.checkpoint_every
    assert (f"{skipthought_run.folder}: no kept checkpoint at step 5 (kept: {half}, {half + 3}, {2 * half})"
            in fails("--step", "5"))
    _, other_vectors = write_training_data(tmp_path / "other", words=50)        # another corpus's vocabulary
    assert f"{other_vectors}: word vectors (54 rows" in fails("--wordvecs", str(other_vectors))
    disc = write_disc_run(skipthought_run, tmp_path / "runs" / "disc-tiny")
    assert f"{disc}: a disc run" in fails(folder=disc)
