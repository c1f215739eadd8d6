"""Search spaces: one YAML file per objective (``tune_spaces/<objective>.yaml``), validated on load.

Schema (every key below is checked; unknown keys are errors)::

    objective: disc            # the objective the space is for (registered in skipview.models.registry)
    description: free text     # optional
    space:
      objective:               # the objective's settings (its config class in skipview.models.registry),
        context_window: {distribution: randint, low: 1, high: 5}        # i.e. TrainSettings.objective_settings
        initial_temperature: {distribution: loguniform, low: 0.05, high: 1.0}
        views: fg              # a plain value is held constant in every trial
      training:                # TrainSettings fields (``skipview train --config``); dotted keys reach nested ones
        batch_size: {distribution: choice, choices: [128, 256, 512]}
        optimizer.lr: {distribution: loguniform, low: 1.0e-4, high: 2.0e-3}

Distributions (``low``/``high`` are bounds; **integer bounds are inclusive at both ends** — Ray's own ``randint``
excludes ``high`` but ``qrandint`` includes it; one rule here avoids that trap):

=============  ================================  ===========================================
distribution   keys                              samples
=============  ================================  ===========================================
uniform        low, high                         float in [low, high]
quniform       low, high, q                      float in [low, high], multiple of q
loguniform     low > 0, high                     float, log-uniform
qloguniform    low > 0, high, q                  log-uniform, multiple of q
randint        low, high (ints)                  int in [low, high]
qrandint       low, high, q (ints)               int in [low, high], multiple of q
lograndint     low >= 1, high (ints)             int in [low, high], log-uniform
choice         choices (non-empty, distinct)     one of the choices
=============  ================================  ===========================================

Keys are checked against the config classes the trial will build (``validate_fields``): every key must be a
field and every bound or choice must be a valid value of that field, so a typo fails at load time, not in the
ninth trial an hour later. Errors name the file, the line and the key. A trial's values are applied to the base
training settings with ``apply_trial``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from skipview.models import registry
from skipview.models.registry import ObjectiveName
from skipview.platform.training.config import TrainSettings
from skipview.platform.yaml_source import describe, load_with_lines, written

Scalar = Union[bool, int, float, str]


class SearchSpaceError(ValueError):
    """A search-space file that is not valid; the message lists every problem as ``file:line: key: reason``."""


class _Distribution(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def values_to_check(self) -> list[Any]:
        """The values the distribution can reach at its edges, checked against the config field's type."""
        return [self.low, self.high]  # type: ignore[attr-defined]


class _Bounded(_Distribution):
    @model_validator(mode="after")
    def _ordered(self):
        if not self.low < self.high:  # type: ignore[attr-defined]
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")  # type: ignore[attr-defined]
        q = getattr(self, "q", None)
        if q is not None and q <= 0:
            raise ValueError(f"q ({q}) must be positive")
        return self


class _Positive(_Bounded):
    @model_validator(mode="after")
    def _positive(self):
        if self.low <= 0:  # type: ignore[attr-defined]
            raise ValueError(f"low ({self.low}) must be positive on a log scale")  # type: ignore[attr-defined]
        return self


class Uniform(_Bounded):
    distribution: Literal["uniform"]
    low: float
    high: float

    def to_tune(self, tune):
        return tune.uniform(self.low, self.high)


class QUniform(_Bounded):
    distribution: Literal["quniform"]
    low: float
    high: float
    q: float

    def to_tune(self, tune):
        return tune.quniform(self.low, self.high, self.q)


class LogUniform(_Positive):
    distribution: Literal["loguniform"]
    low: float
    high: float

    def to_tune(self, tune):
        return tune.loguniform(self.low, self.high)


class QLogUniform(_Positive):
    distribution: Literal["qloguniform"]
    low: float
    high: float
    q: float

    def to_tune(self, tune):
        return tune.qloguniform(self.low, self.high, self.q)


class RandInt(_Bounded):
    distribution: Literal["randint"]
    low: int
    high: int

    def to_tune(self, tune):
        return tune.randint(self.low, self.high + 1)        # Ray's randint excludes its upper bound


class QRandInt(_Bounded):
    distribution: Literal["qrandint"]
    low: int
    high: int
    q: int

    def to_tune(self, tune):
        return tune.qrandint(self.low, self.high, self.q)   # Ray's qrandint includes its upper bound


class LogRandInt(_Positive):
    distribution: Literal["lograndint"]
    low: int
    high: int

    def to_tune(self, tune):
        return tune.lograndint(self.low, self.high + 1)     # Ray's lograndint excludes its upper bound


class Choice(_Distribution):
    distribution: Literal["choice"]
    choices: list[Scalar] = Field(min_length=1)

    @model_validator(mode="after")
    def _distinct(self):
        if len({repr(c) for c in self.choices}) != len(self.choices):
            raise ValueError(f"choices must be distinct: {self.choices}")
        return self

    def values_to_check(self) -> list[Any]:
        return list(self.choices)

    def to_tune(self, tune):
        return tune.choice(list(self.choices))


Distribution = Annotated[
    Union[Uniform, QUniform, LogUniform, QLogUniform, RandInt, QRandInt, LogRandInt, Choice],
    Field(discriminator="distribution"),
]
_DISTRIBUTION = TypeAdapter(Distribution)
_TAGS = frozenset({"uniform", "quniform", "loguniform", "qloguniform", "randint", "qrandint", "lograndint", "choice"})
_SCALARS = (bool, int, float, str)


class _SpaceFile(BaseModel):
    """The file's outer structure; each parameter is parsed separately so its errors stay readable."""
    model_config = ConfigDict(extra="forbid")

    objective: ObjectiveName
    description: str = ""
    space: dict[Literal["objective", "training"], dict[str, Any]]


@dataclass(frozen=True)
class SearchSpace:
    objective: str
    space: dict[str, dict[str, Any]]       # section -> key -> a distribution or a constant
    description: str = ""
    source: str = ""                       # the file it was read from, for messages

    def searched(self) -> dict[str, list[str]]:
        """Section -> names of the keys that vary (the rest are constants)."""
        return {s: [k for k, p in keys.items() if isinstance(p, _Distribution)] for s, keys in self.space.items()}

    def to_tune(self) -> dict[str, dict[str, Any]]:
        """The Ray Tune ``param_space``: nested ``{"objective": {...}, "training": {...}}`` of Tune domains and
        constants; a trial receives the same nesting with concrete values."""
        from ray import tune

        return {section: {key: p.to_tune(tune) if isinstance(p, _Distribution) else p for key, p in keys.items()}
                for section, keys in self.space.items()}


def config_classes_for(objective: str) -> dict[str, type[BaseModel]]:
    """The classes a trial of ``objective`` validates its settings with: the objective's registered config and
    ``TrainSettings``. An objective the registry does not know yet has its section checked for structure only."""
    classes: dict[str, type[BaseModel]] = {"training": TrainSettings}
    if objective in registry.objective_names():
        classes["objective"] = registry.config_class(objective)
    return classes


def load_space(path: str | Path, config_classes: Mapping[str, type[BaseModel]] | None = None) -> SearchSpace:
    """Read and validate a search-space file; raise ``SearchSpaceError`` listing every problem.

    ``config_classes`` maps a section (``objective``, ``training``) to the pydantic class its keys must belong to;
    by default the real ones (``config_classes_for``).
    """
    path = Path(path)
    data, lines = load_with_lines(path)
    problems: list[tuple[tuple[str, ...], str]] = []
    if not isinstance(data, dict):
        raise SearchSpaceError(f"{path}:1: the file must be a mapping with keys objective, space")
    try:
        raw = _SpaceFile.model_validate(data)
    except ValidationError as exc:
        problems = [(written(e["loc"]), e["msg"]) for e in exc.errors()]
        raise SearchSpaceError(describe(path, lines, problems)) from None
    parsed: dict[str, dict[str, Any]] = {}
    for section, keys in raw.space.items():
        parsed[section] = {}
        for key, value in keys.items():
            at = ("space", section, key)
            if isinstance(value, dict):
                try:
                    parsed[section][key] = _DISTRIBUTION.validate_python(value)
                except ValidationError as exc:
                    problems += [(at + written(e["loc"], _TAGS), e["msg"]) for e in exc.errors()]
            elif isinstance(value, _SCALARS):
                parsed[section][key] = value
            else:
                problems.append((at, f"expected a distribution mapping ({{distribution: ...}}) or one constant "
                                     f"value, got {type(value).__name__}"))
    if not problems and not any(isinstance(p, _Distribution) for keys in parsed.values() for p in keys.values()):
        problems.append((("space",), "no key has a distribution: nothing to search"))
    if not problems:
        space = SearchSpace(raw.objective, parsed, raw.description, str(path))
        classes = config_classes if config_classes is not None else config_classes_for(space.objective)
        problems = [(("space",) + at, why) for at, why in validate_fields(space, classes)]
    if problems:
        raise SearchSpaceError(describe(path, lines, problems))
    return space


def validate_fields(space: SearchSpace, config_classes: Mapping[str, type[BaseModel]]
                    ) -> list[tuple[tuple[str, ...], str]]:
    """``((section, key), reason)`` for every key that is not a field of its section's class, and every bound or
    choice that the field would reject. Dotted keys (``optimizer.lr``) walk into nested settings classes."""
    problems = []
    for section, keys in space.space.items():
        cls = config_classes.get(section)
        if cls is None:
            continue
        for key, parameter in keys.items():
            field, missing = _field(cls, key)
            if field is None:
                problems.append(((section, key), missing))
                continue
            # the field's constraints (gt=0, ge=2, ...) live in its metadata, not in its annotation
            adapter = TypeAdapter(Annotated[(field.annotation, *field.metadata)] if field.metadata
                                  else field.annotation)
            values = parameter.values_to_check() if isinstance(parameter, _Distribution) else [parameter]
            for value in values:
                try:
                    adapter.validate_python(value, strict=isinstance(value, bool))
                except ValidationError as exc:
                    reason = exc.errors()[0]["msg"]
                    problems.append(((section, key), f"{value!r} is not a valid {cls.__name__}.{key}: {reason}"))
    return problems


def _field(cls: type[BaseModel], dotted: str):
    """The pydantic field behind a dotted key, or ``(None, reason)``."""
    *parents, leaf = dotted.split(".")
    owner = cls
    for part in parents:
        field = owner.model_fields.get(part)
        nested = field.annotation if field is not None else None
        if not (isinstance(nested, type) and issubclass(nested, BaseModel)):
            return None, f"{owner.__name__}.{part} is not a section of settings (dotted keys walk into sections)"
        owner = nested
    field = owner.model_fields.get(leaf)
    if field is None:
        return None, f"not a field of {owner.__name__} (fields: {', '.join(sorted(owner.model_fields))})"
    return field, None


def apply_trial(base: Mapping[str, Any], trial: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The training-settings tree of one trial: ``base`` (a ``TrainSettings`` dump) with the trial's objective
    settings merged into ``objective_settings`` and its training keys set (dotted keys into sections)."""
    tree = copy.deepcopy(dict(base))
    tree["objective_settings"] = {**tree.get("objective_settings", {}), **trial.get("objective", {})}
    for dotted, value in trial.get("training", {}).items():
        *parents, leaf = dotted.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return tree
