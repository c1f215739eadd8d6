"""The supervised analysis's encoders: a view of one model, or one view each of two separately trained models as one
ensemble (Table 6's f+g and ff+gg rows), the mean of their vectors on STS and their concatenation as classifier
features, each part post-processed as the study's runs do."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from prepared_data import write_toy_mr

from skipview.models import registry
from skipview.platform.evaluation.baselines import WordVectors
from skipview.platform.evaluation.encoding import CombinedEncoder, ModelEncoder
from skipview.platform.evaluation.suite import run_tasks
from skipview.platform.studies.analyses import compare_encoders

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def two_models(tiny_data, toy_senteval, tmp_path_factory):
    """Two untrained single-view models over the toy vectors (the wiring, not the quality) and MR beside STS14."""
    _, wordvecs = tiny_data
    words = WordVectors.load(wordvecs)
    root = tmp_path_factory.mktemp("models")
    dirs = {}
    for seed, views in ((0, "f"), (1, "g")):
        torch.manual_seed(seed)
        objective = registry.build_objective("disc", {"views": views, "hidden_size": 4}, vocab=words.vocab,
                                             word_vectors=words.vectors)
        dirs[views] = objective.sentence_encoder(words.tokenizer, words.vocab).save(root / views)
    write_toy_mr(toy_senteval, np.random.default_rng(0))
    return dirs


def test_an_ensemble_of_two_models_is_one_row_scored_as_their_combined_encoder(tiny_data, toy_senteval, two_models,
                                                                                tmp_path):
    corpus, wordvecs = tiny_data
    f_dir, g_dir = two_models["f"], two_models["g"]
    out = tmp_path / "sup"
    compare_encoders.main(["--wordvecs", str(wordvecs), "--pc-corpus", str(corpus), "--senteval-dir",
                           str(toy_senteval), "--model", f"f+g={f_dir}@f+{g_dir}@g", "--model", f"f={f_dir}@f",
                           "--supervised", "mr", "--protocol", "fast", "--fits", "task", "--supervised-fits", "task",
                           "--baselines", "", "--out", str(out)])
    rows = {row["encoder"]: row for row in json.loads(out.with_suffix(".json").read_text())["rows"]}
    assert list(rows) == ["f+g ensemble", "f f"]

    from skipview.models.encoder import SentenceEncoder
    parts = [ModelEncoder(SentenceEncoder.load(f_dir), "f", "task"), ModelEncoder(SentenceEncoder.load(g_dir), "g",
                                                                                  "task")]
    expected = run_tasks(CombinedEncoder(parts), ["sts14", "mr"], str(toy_senteval), "fast")
    assert rows["f+g ensemble"]["metrics"] == pytest.approx(expected)
    # the ensemble is not one of its parts: f alone scores otherwise on STS14
    assert rows["f+g ensemble"]["scores"]["sts14"] != pytest.approx(rows["f f"]["scores"]["sts14"])
    assert "| f+g ensemble | task |" in out.with_suffix(".md").read_text()


def test_each_part_of_an_ensemble_names_its_view(tiny_data, toy_senteval, two_models, tmp_path, capsys):
    corpus, wordvecs = tiny_data
    with pytest.raises(SystemExit):
        compare_encoders.main(["--wordvecs", str(wordvecs), "--pc-corpus", str(corpus), "--senteval-dir",
                               str(toy_senteval), "--model", f"f+g={two_models['f']}+{two_models['g']}@g",
                               "--out", str(tmp_path / "sup")])
    assert "each part of an ensemble names its view" in capsys.readouterr().err
    assert not (tmp_path / "sup.json").exists()


def test_resume_keeps_a_row_of_the_same_model_measures_a_retrained_one_again_and_skips_an_absent_one(
        tiny_data, toy_senteval, two_models, tmp_path, capsys):
    import os

    corpus, wordvecs = tiny_data
    out = tmp_path / "sup"
    argv = ["--wordvecs", str(wordvecs), "--pc-corpus", str(corpus), "--senteval-dir", str(toy_senteval),
            "--model", f"gone={tmp_path / 'elsewhere'}@f", "--model", f"f={two_models['f']}@f",
            "--protocol", "fast", "--fits", "task", "--baselines", "", "--out", str(out), "--resume"]

    def measured() -> float:
        return json.loads(out.with_suffix(".json").read_text())["rows"][0]["measured_at"]

    compare_encoders.main(argv)
    assert f"not measured: {tmp_path / 'elsewhere'} is not on this machine" in capsys.readouterr().out
    first = measured()                                           # the model on another machine left no row
    compare_encoders.main(argv)                                  # the same model: the row is kept
    assert measured() == first and "kept from" in capsys.readouterr().out
    for saved in two_models["f"].iterdir():                      # the model is saved again after the row was measured
        os.utime(saved, (first + 10, first + 10))
    compare_encoders.main(argv)
    assert "kept from" not in capsys.readouterr().out            # measured again, not kept
