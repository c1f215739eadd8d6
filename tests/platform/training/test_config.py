"""Settings: overrides, validation errors that name the key, and the learning-rate schedule against its formula."""

import math

import numpy as np
import pytest
from pydantic import ValidationError

from skipview.models import registry
from skipview.platform.tracking import store
from skipview.platform.training.config import TrainSettings, load_settings, recorded_settings
from skipview.platform.training.driver import run_params
from skipview.platform.training.loop import parameter_groups, schedule_factor

BASE = {"objective": "gen", "corpus": "/c"}


def test_config_file_then_options_then_set(tmp_path):
    config = tmp_path / "train.yaml"
    config.write_text("batch_size: 32\noptimizer: {lr: 0.01}\nobjective_settings: {hidden_size: 64}\n")
    settings = load_settings(config, BASE, ["optimizer.lr=2e-3", "objective_settings.invertible=false",
                                            "max_steps=7"])
    assert settings.batch_size == 32 and settings.optimizer.lr == 2e-3 and settings.max_steps == 7
    assert settings.objective_settings == registry.config_class("gen")(hidden_size=64, invertible=False)


def test_objective_settings_are_typed_once_and_a_wrong_key_is_named(tmp_path):
    settings = load_settings(None, BASE, ["objective_settings.negatives=3"])
    assert isinstance(settings.objective_settings, registry.config_class("gen"))      # typed, with its defaults
    assert (settings.objective_settings.negatives, settings.objective_settings.beta) == (3, 0.01)
    config = tmp_path / "train.yaml"
    config.write_text("objective_settings: {context_window: 2}\n")                   # disc's, not gen's
    with pytest.raises(ValidationError, match=r"objective_settings.context_window\n  unknown key 'context_window' "
                                              r"for objective 'gen' \(known keys: hidden_size, negatives"):
        load_settings(config, BASE, [])
    with pytest.raises(ValidationError, match=r"objective_settings.negatives\n  Input should be greater than 0"):
        load_settings(None, BASE, ["objective_settings.negatives=0"])
    # a module:factory objective brings its own settings, which its factory checks: kept as given
    own = TrainSettings(objective="tiny_objective:build", corpus="/c", objective_settings={"dim": 8})
    assert own.objective_settings == {"dim": 8}


# Today's dumps, written out: run names, MLflow params (train.*), checkpoints' saved settings and committed run
# records are made from them, and two trainings resume from checkpoints keyed on them.
REST = {"corpus": "/c", "wordvecs": None, "batch_size": 64, "max_len": 30, "max_steps": 500, "epochs": None,
        "optimizer": {"lr": 0.001, "lr_by_module": {}, "grad_clip": 10.0, "schedule": "constant",
                      "warmup_steps": 0, "betas": [0.9, 0.999], "weight_decay": 0.0},
        "precision": "auto", "seed": 0, "log_every": 10, "checkpoint_every": 100, "senteval_dir": None,
        "postprocessing_sentences": 20000, "final_eval_tasks": [], "ddp_find_unused_parameters": False}


@pytest.mark.parametrize("objective, given", [
    ("disc", {"hidden_size": 256, "views": "ff", "context_window": 2, "initial_temperature": 0.18516618774992605}),
    ("gen", {"invertible": False, "hidden_size": 64}),
    ("skipthought", {"vocab_size": 20000, "encoder": "uni", "reset_gate": "fused", "decoder_hidden_size": None}),
    ("disc", {}),
])
def test_settings_dump_only_the_objective_settings_given_in_their_order(objective, given):
    settings = TrainSettings(objective=objective, corpus="/c", objective_settings=given)
    expected = {"objective": objective, "objective_settings": given, **REST}
    dumped = settings.model_dump(mode="json")
    assert dumped == expected
    assert list(dumped) == list(expected) and list(dumped["objective_settings"]) == list(given)
    assert TrainSettings.model_validate(dumped).model_dump(mode="json") == expected     # what a worker reads back


def test_data_paths_of_a_config_file_are_made_absolute_on_the_driver(tmp_path, monkeypatch):
    """Ray's workers run in their own working directories: a config's relative ``senteval_dir`` (as in a search's
    best_config.yaml) once reached the worker as written and failed there, after Ray had started."""
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "best_config.yaml"
    config.write_text("senteval_dir: data/senteval/downstream\nwordvecs: data/wv\n")
    settings = load_settings(config, {"objective": "disc", "corpus": "data/prepared"}, [])
    assert (settings.corpus, settings.wordvecs, settings.senteval_dir) == (
        str(tmp_path / "data/prepared"), str(tmp_path / "data/wv"), str(tmp_path / "data/senteval/downstream"))
    assert load_settings(None, {"objective": "disc", "corpus": "s3://bucket/c"}, []).corpus == "s3://bucket/c"


@pytest.mark.parametrize("section", ["", "train"])
def test_a_run_s_settings_are_read_back_from_the_params_it_recorded(section):
    settings = load_settings(None, {"objective": "skipthought", "corpus": "/data/novels: train/prepared"},
                             ["objective_settings.reset_gate=fused", "epochs=3", "max_steps=null",
                              "optimizer.betas=[0.8, 0.9]", "final_eval_tasks=[sts14]", "checkpoint_every=4381"])
    recorded = run_params(settings)
    params = store.param_strings({section: recorded} if section else recorded)     # a study's: train.<setting>
    # the same values; the objective's settings come back whole, defaults included, as they were recorded
    assert run_params(recorded_settings(params)) == recorded
    assert recorded_settings(params).corpus == "/data/novels: train/prepared"


def test_config_section_of_a_params_file(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("data_root: x\ntrain:\n  settings:\n    max_steps: 9\n")
    assert load_settings(f"{params}:train.settings", BASE, []).max_steps == 9
    with pytest.raises(ValueError, match="no section 'train.other'"):
        load_settings(f"{params}:train.other", BASE, [])


def test_objective_paper_defaults_sit_under_the_config(tmp_path):
    """skip-thought's paper settings (batch 128, clip 10) apply unless the config or --set says otherwise."""
    skipthought = {"objective": "skipthought", "corpus": "/c"}
    assert load_settings(None, skipthought, []).batch_size == 128
    config = tmp_path / "train.yaml"
    config.write_text("optimizer: {lr: 0.01}\n")
    settings = load_settings(config, skipthought, ["batch_size=16"])
    assert (settings.batch_size, settings.optimizer.lr, settings.optimizer.grad_clip) == (16, 0.01, 10.0)
    assert load_settings(None, BASE, []).batch_size == TrainSettings.model_fields["batch_size"].default


def test_unknown_and_bad_keys_are_named(tmp_path):
    with pytest.raises(ValidationError, match="optimizer.lrr"):
        load_settings(None, BASE, ["optimizer.lrr=1"])
    with pytest.raises(ValidationError, match="batch_size"):
        load_settings(None, BASE, ["batch_size=1"])
    with pytest.raises(ValueError, match="expected key=value"):
        load_settings(None, BASE, ["batch_size"])


@pytest.mark.parametrize("value", [".inf", ".nan", "-.inf"])
def test_no_setting_takes_an_infinite_or_nan_value(value):
    with pytest.raises(ValidationError, match="optimizer.lr"):
        load_settings(None, {"objective": "disc", "corpus": "c"}, [f"optimizer.lr={value}"])


def test_a_run_needs_an_end():
    with pytest.raises(ValidationError, match="max_steps or epochs"):
        TrainSettings(**BASE, max_steps=None)


@pytest.mark.parametrize("schedule", ["constant", "linear", "cosine"])
def test_schedule_matches_its_formula(schedule):
    settings = TrainSettings(**BASE, max_steps=110, optimizer={"schedule": schedule, "warmup_steps": 10})
    for step in range(0, 120):
        if step < 10:
            expected = (step + 1) / 10
        else:
            t = min((step - 10) / 100, 1.0)
            expected = {"constant": 1.0, "linear": 1 - t, "cosine": 0.5 * (1 + math.cos(math.pi * t))}[schedule]
        assert schedule_factor(step, settings) == pytest.approx(expected)


def test_a_module_can_have_its_own_learning_rate():
    objective = registry.build_objective("disc", {"hidden_size": 4}, vocab=[f"w{i}" for i in range(6)],
                                         word_vectors=np.random.default_rng(0).normal(size=(6, 8)).astype("float32"))
    settings = TrainSettings(**BASE, optimizer={"lr": 1e-3, "lr_by_module": {"encoders.f": 2e-4}})
    groups = parameter_groups(objective, settings.optimizer)
    assert [group["lr"] for group in groups] == [1e-3, 2e-4]
    f_params = {id(p) for p in objective.encoders["f"].parameters()}
    assert {id(p) for p in groups[1]["params"]} == f_params
    # every parameter in exactly one group: g and the temperature follow lr
    assert sorted(id(p) for group in groups for p in group["params"]) == sorted(id(p) for p in objective.parameters())
    with pytest.raises(ValueError, match="encoders.h is not a module of the objective .*encoders.f"):
        parameter_groups(objective, settings.optimizer.model_copy(update={"lr_by_module": {"encoders.h": 1e-4}}))
    with pytest.raises(ValidationError, match="lr_by_module.`encoders.f`"):
        TrainSettings(**BASE, optimizer={"lr_by_module": {"encoders.f": 0}})
