"""Objectives by name from typed configuration.

Training, tuning and the ablation matrix name an objective and give its settings; every ablation of the multi-view
paper's Table 6 is a setting (``disc`` ``views: fg|ff|gg|f|g``, ``gen`` ``invertible: false``), not a copy of
code. Settings are validated by the objective's pydantic model (``Objective.config_class``, an ``ObjectiveConfig``
that rejects unknown keys), and errors name the offending key.

``OBJECTIVES`` is the list, as data: each name with the class that implements it. A module is imported when its
objective is first asked for, and an objective module never imports this one, so neither loading a model
(``SentenceEncoder.load``) nor defining an objective pulls in every other objective, and nothing imports in a loop.
The class is constructed as ``cls(config, vocab=..., word_vectors=...)``.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Mapping
from typing import Annotated, Any

import numpy as np
from pydantic import AfterValidator, ValidationError
from pydantic_core import PydanticCustomError

from skipview.models.objective import Objective, ObjectiveConfig
from skipview.models.vocab import Vocab

# name -> "module:class" of its Objective
OBJECTIVES = {
    "disc": "skipview.models.discriminative:DiscriminativeObjective",
    "gen": "skipview.models.generative:GenerativeObjective",
    "skipthought": "skipview.models.skipthought.objective:SkipThoughtObjective",
}


def objective_names() -> list[str]:
    return sorted(OBJECTIVES)


def _implementation(name: str) -> type[Objective]:
    module, _, attribute = OBJECTIVES[registered_objective(name)].partition(":")
    return getattr(importlib.import_module(module), attribute)


def registered_objective(name: str) -> str:
    """``name`` if an objective of that name is registered, else a ValueError listing the known ones. The one
    list of objectives is this registry: search spaces and the ablation matrix validate their names with this."""
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; known objectives: {', '.join(sorted(OBJECTIVES))}")
    return name


# An objective name field of a settings file (search space, ablation matrix): validated against this registry.
ObjectiveName = Annotated[str, AfterValidator(registered_objective)]


def config_class(name: str) -> type[ObjectiveConfig]:
    return _implementation(name).config_class


def training_defaults(name: str) -> dict:
    """The objective's paper training settings (``Objective.training_defaults``), a fresh copy to build on."""
    return copy.deepcopy(_implementation(name).training_defaults)


def parse_config(name: str, settings: Mapping[str, Any] | None) -> ObjectiveConfig:
    """Validate ``settings`` for objective ``name``. The ValidationError (a ValueError) names every bad or unknown
    key, an unknown one with the objective's keys; raised while validating ``TrainSettings``, its keys are located
    under ``objective_settings``."""
    config_cls = config_class(name)
    try:
        return config_cls.model_validate(settings or {})
    except ValidationError as error:
        known = ", ".join(config_cls.model_fields)
        problems = []
        for item in error.errors():
            problem = {key: item[key] for key in ("type", "loc", "input", "ctx") if key in item}
            if item["type"] == "extra_forbidden":
                key = ".".join(str(part) for part in item["loc"])
                problem["type"] = PydanticCustomError(
                    "unknown_key", f"unknown key {key!r} for objective {name!r} (known keys: {known})")
            problems.append(problem)
        raise ValidationError.from_exception_data(config_cls.__name__, problems) from None


def build_objective(name: str, config: ObjectiveConfig | dict | None, *, vocab: Vocab,
                    word_vectors: np.ndarray | None) -> Objective:
    """The objective ``name`` with ``config``: its typed settings (``TrainSettings.objective_settings``, parsed once
    where the settings came in), or a dict of them to parse (a test's or a benchmark's few keys)."""
    implementation = _implementation(name)
    if not isinstance(config, implementation.config_class):
        config = parse_config(name, config)
    return implementation(config, vocab=vocab, word_vectors=word_vectors)
