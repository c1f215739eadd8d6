"""Objectives by name from typed configuration.

Training, tuning and the ablation matrix only pass ``(name, settings dict)``; every ablation of the multi-view
paper's Table 6 is a setting (``disc`` ``views: fg|ff|gg|f|g``, ``gen`` ``invertible: false``), not a copy of
code. Settings are validated by a pydantic model per objective that rejects unknown keys, and errors name the
offending key.

An objective module registers itself with ``@register_objective(name, ConfigClass)``; the class is constructed
as ``cls(config, vocab=..., word_vectors=...)``.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
from collections.abc import Callable
from typing import Annotated

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from skipview.models.objective import Objective
from skipview.models.vocab import Vocab

# Modules that define objectives (importing one registers it). skip-thought lives in its own package and is
# picked up once it exists in the tree.
OBJECTIVE_MODULES = ("skipview.models.discriminative", "skipview.models.generative", "skipview.models.skipthought")

_REGISTRY: dict[str, tuple[type["ObjectiveConfig"], type[Objective]]] = {}


class ObjectiveConfig(BaseModel):
    """Base of every objective's settings: unknown keys are errors, values are validated and immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def register_objective(name: str, config_class: type[ObjectiveConfig]) -> Callable[[type[Objective]], type[Objective]]:
    def decorator(cls: type[Objective]) -> type[Objective]:
        if name in _REGISTRY and _REGISTRY[name][1] is not cls:
            raise ValueError(f"objective {name!r} is registered twice ({_REGISTRY[name][1]} and {cls})")
        _REGISTRY[name] = (config_class, cls)
        return cls
    return decorator


def import_objective_modules() -> None:
    for module in OBJECTIVE_MODULES:
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module)


def objective_names() -> list[str]:
    import_objective_modules()
    return sorted(_REGISTRY)


def _entry(name: str) -> tuple[type[ObjectiveConfig], type[Objective]]:
    import_objective_modules()
    if name not in _REGISTRY:
        raise ValueError(f"unknown objective {name!r}; known objectives: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def registered_objective(name: str) -> str:
    """``name`` if an objective of that name is registered, else a ValueError listing the known ones. The one
    list of objectives is this registry: search spaces and the ablation matrix validate their names with this."""
    _entry(name)
    return name


# An objective name field of a settings file (search space, ablation matrix): validated against this registry.
ObjectiveName = Annotated[str, AfterValidator(registered_objective)]


def config_class(name: str) -> type[ObjectiveConfig]:
    return _entry(name)[0]


def training_defaults(name: str) -> dict:
    """The objective's paper training settings (``Objective.training_defaults``), a fresh copy to build on."""
    return copy.deepcopy(_entry(name)[1].training_defaults)


def parse_config(name: str, settings: dict | None) -> ObjectiveConfig:
    """Validate ``settings`` for objective ``name``; a ValueError names every bad or unknown key."""
    config_cls = _entry(name)[0]
    try:
        return config_cls.model_validate(settings or {})
    except ValidationError as error:
        problems = []
        for item in error.errors():
            key = ".".join(str(part) for part in item["loc"]) or "<settings>"
            if item["type"] == "extra_forbidden":
                problems.append(f"unknown key {key!r} (known keys: {', '.join(config_cls.model_fields)})")
            else:
                problems.append(f"key {key!r}: {item['msg']} (got {item.get('input')!r})")
        raise ValueError(f"invalid settings for objective {name!r}: " + "; ".join(problems)) from None


def build_objective(name: str, settings: dict | None, *, vocab: Vocab, word_vectors: np.ndarray | None) -> Objective:
    config = parse_config(name, settings)
    return _entry(name)[1](config, vocab=vocab, word_vectors=word_vectors)
