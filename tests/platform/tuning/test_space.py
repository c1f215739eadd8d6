"""Search-space files: the shipped ones load and convert to Ray Tune; bad ones fail naming file, line and key."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

from skipview.platform.tuning.space import SearchSpaceError, apply_trial, load_space

SPACES = Path(__file__).resolve().parents[3] / "tune_spaces"


STRUCTURE_ONLY: dict = {}       # no config classes: these tests are about the file's structure


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("name", ["disc", "gen", "skipthought"])
def test_shipped_spaces_load_and_convert(name):
    """Checked against the registry's objective configs and TrainSettings (the classes a trial builds)."""
    from ray.tune.search.sample import Domain

    space = load_space(SPACES / f"{name}.yaml")
    assert space.objective == name
    assert space.searched()["training"], "every objective searches at least the training settings"
    converted = space.to_tune()
    assert set(converted) == set(space.space)
    for section, keys in space.searched().items():
        for key in keys:
            assert isinstance(converted[section][key], Domain)


def test_integer_bounds_are_inclusive_and_constants_pass_through(tmp_path):
    space = load_space(write(tmp_path, """
        objective: disc
        space:
          objective:
            window: {distribution: randint, low: 1, high: 3}
            heads: {distribution: lograndint, low: 1, high: 4}
            views: fg
          training:
            batch_size: {distribution: qrandint, low: 64, high: 256, q: 64}
            lr: {distribution: loguniform, low: 1e-4, high: 1e-3}
    """), STRUCTURE_ONLY)
    converted = space.to_tune()
    assert converted["objective"]["views"] == "fg"
    windows = {converted["objective"]["window"].sample() for _ in range(300)}
    heads = {converted["objective"]["heads"].sample() for _ in range(300)}
    batches = {converted["training"]["batch_size"].sample() for _ in range(300)}
    assert windows == {1, 2, 3}
    assert heads == {1, 2, 3, 4}
    assert batches == {64, 128, 192, 256}
    lrs = [converted["training"]["lr"].sample() for _ in range(300)]
    assert all(1e-4 <= lr <= 1e-3 for lr in lrs)       # "1e-4" was read as a number, not a string


@pytest.mark.parametrize("body, line, key, reason", [
    ("""
        objective: disc
        space:
          objective:
            window: {distribution: randint, low: 5, high: 1}
     """, 5, "space.objective.window", "must be below"),
    ("""
        objective: disc
        space:
          training:
            lr: {distribution: loguniform, low: 0, high: 1}
     """, 5, "space.training.lr", "positive"),
    ("""
        objective: disc
        space:
          training:
            batch_size: {distribution: choise, choices: [1, 2]}
     """, 5, "space.training.batch_size", "'choise'"),
    ("""
        objective: disc
        space:
          training:
            batch_size:
              distribution: choice
              choices: []
     """, 7, "space.training.batch_size.choices", "at least 1"),
    ("""
        objective: disc
        space:
          training:
            lr: {distribution: uniform, low: 0.1, high: 0.2, step: 3}
     """, 5, "space.training.lr.step", "Extra inputs"),
    ("""
        objective: disk
        space:
          training:
            lr: {distribution: uniform, low: 0.1, high: 0.2}
     """, 2, "objective", "disc"),
    ("""
        objective: disc
        space:
          optimiser:
            lr: {distribution: uniform, low: 0.1, high: 0.2}
     """, 4, "space.optimiser", "objective"),
    ("""
        objective: disc
        space:
          training:
            lr: [0.1, 0.2]
     """, 5, "space.training.lr", "distribution mapping"),
    ("""
        objective: disc
        space:
          training:
            batch_size: 128
     """, 3, "space", "nothing to search"),
])
def test_errors_name_file_line_and_key(tmp_path, body, line, key, reason):
    path = write(tmp_path, body)
    with pytest.raises(SearchSpaceError) as caught:
        load_space(path, STRUCTURE_ONLY)
    message = str(caught.value)
    assert f"{path}:{line}: {key}: " in message, message
    assert reason in message, message


def test_invalid_yaml_names_file_and_line(tmp_path):
    path = write(tmp_path, "objective: disc\nspace:\n  training: {lr: [\n")
    with pytest.raises(ValueError, match=rf"{path}:\d+: not valid YAML"):
        load_space(path)


class ObjectiveSettings(BaseModel):
    window: int = 3
    views: Literal["fg", "ff", "gg", "f", "g"] = "fg"


class TrainingSettings(BaseModel):
    batch_size: int = 512
    lr: float = 5e-4


def test_keys_and_values_are_checked_against_the_config_classes(tmp_path):
    classes = {"objective": ObjectiveSettings, "training": TrainingSettings}
    good = write(tmp_path, """
        objective: disc
        space:
          objective:
            window: {distribution: randint, low: 1, high: 5}
            views: {distribution: choice, choices: [fg, f]}
          training:
            lr: {distribution: loguniform, low: 1e-4, high: 1e-3}
    """)
    assert load_space(good, classes).searched() == {"objective": ["window", "views"], "training": ["lr"]}

    bad = write(tmp_path, """
        objective: disc
        space:
          objective:
            windw: {distribution: randint, low: 1, high: 5}
            views: {distribution: choice, choices: [fg, fh]}
          training:
            batch_size: {distribution: uniform, low: 64.5, high: 512}
    """)
    with pytest.raises(SearchSpaceError) as caught:
        load_space(bad, classes)
    message = str(caught.value)
    assert f"{bad}:5: space.objective.windw: not a field of ObjectiveSettings" in message
    assert f"{bad}:6: space.objective.views: 'fh' is not a valid ObjectiveSettings.views" in message
    assert f"{bad}:8: space.training.batch_size: 64.5 is not a valid TrainingSettings.batch_size" in message


def test_optuna_search_accepts_the_converted_space():
    """Ray 2.60's OptunaSearch with the installed Optuna: it converts our domains and TPE proposes in bounds."""
    from ray.tune.search.optuna import OptunaSearch

    space = load_space(SPACES / "disc.yaml")
    searcher = OptunaSearch(metric="sts14", mode="max", seed=0)
    assert searcher.set_search_properties("sts14", "max", space.to_tune())
    for trial in range(4):
        config = searcher.suggest(str(trial))
        assert 1 <= config["objective"]["context_window"] <= 5
        assert config["training"]["batch_size"] in (128, 256, 512)
        searcher.on_trial_complete(str(trial), {"sts14": float(config["objective"]["context_window"])})


def test_shipped_keys_are_checked_against_the_real_settings(tmp_path):
    path = write(tmp_path, """
        objective: disc
        space:
          objective:
            context_windw: {distribution: randint, low: 1, high: 5}
            views: {distribution: choice, choices: [fg, gf]}
          training:
            optimizer.lrr: {distribution: loguniform, low: 1e-4, high: 1e-3}
            batch_size.lr: {distribution: loguniform, low: 1e-4, high: 1e-3}
            batch_size: {distribution: randint, low: 1, high: 8}
    """)
    with pytest.raises(SearchSpaceError) as caught:
        load_space(path)
    message = str(caught.value)
    assert f"{path}:5: space.objective.context_windw: not a field of DiscriminativeConfig" in message
    assert f"{path}:6: space.objective.views: 'gf' is not a valid DiscriminativeConfig.views" in message
    assert f"{path}:8: space.training.optimizer.lrr: not a field of OptimizerSettings" in message
    assert f"{path}:9: space.training.batch_size.lr: TrainSettings.batch_size is not a section" in message
    assert f"{path}:10: space.training.batch_size: 1 is not a valid TrainSettings.batch_size" in message   # ge=2


def test_a_trial_applied_to_base_settings_validates_as_training_settings():
    from skipview.platform.training.config import TrainSettings

    base = TrainSettings(objective="disc", corpus="/c", objective_settings={"hidden_size": 32, "views": "fg"},
                         optimizer={"lr": 5e-4, "grad_clip": 10.0}).model_dump(mode="json")
    trial = {"objective": {"context_window": 2, "learn_temperature": False},
             "training": {"batch_size": 256, "optimizer.lr": 1e-3}}
    settings = TrainSettings.model_validate(apply_trial(base, trial))
    assert settings.model_dump(mode="json")["objective_settings"] == {"hidden_size": 32, "views": "fg",
                                                                      "context_window": 2, "learn_temperature": False}
    assert settings.batch_size == 256
    assert settings.optimizer.lr == 1e-3 and settings.optimizer.grad_clip == 10.0     # siblings kept
    assert base["optimizer"]["lr"] == 5e-4                                             # the base is not mutated
