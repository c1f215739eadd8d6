"""Typed settings of a training run: what to train (``TrainSettings``, reproducible science) and where to run
it (``RunSettings``, infrastructure). Errors name the offending key (pydantic), and ``--set a.b=1`` overrides
work on the nested dict before validation.

The objective's settings are typed too: parsed once, when a ``TrainSettings`` is made (``load_settings`` from the
command line or a study, a tune trial), into the objective's own config class, and passed on typed. They dump as
they were given (``ObjectiveConfig.given``), so a run's recorded params and saved settings stay those it was
started with.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (BaseModel, ConfigDict, Discriminator, Field, PositiveFloat, Tag, ValidationInfo,
                      field_serializer, field_validator, model_validator)

from skipview.models.objective import ObjectiveConfig
from skipview.models.registry import config_class, parse_config, registered_objective, training_defaults


class Strict(BaseModel):
    # no setting is meaningful at infinity or NaN (optimizer.lr=.inf would otherwise pass gt=0)
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class OptimizerSettings(Strict):
    lr: float = Field(1e-3, gt=0)
    lr_by_module: dict[str, PositiveFloat] = Field(
        default_factory=dict, description="a learning rate of their own for the parameters under a module of the "
        "objective, by its dotted name (disc: encoders.f, encoders.g; gen: f); every other parameter uses lr. The "
        "schedule scales them all alike")
    grad_clip: float | None = Field(10.0, gt=0, description="max global gradient norm; None disables clipping")
    schedule: Literal["constant", "linear", "cosine"] = "constant"
    warmup_steps: int = Field(0, ge=0)
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = Field(0.0, ge=0)


# the settings a continued run may extend (a longer run of the same model); every other setting must match
BUDGET_KEYS = ("epochs", "max_steps")


def is_factory(objective: str) -> bool:
    """A ``module:factory`` objective: built by a factory of one's own, not through the registry."""
    return ":" in objective


# The objective's settings: its config class for a registered objective; a ``module:factory`` objective brings its
# own settings, which its factory checks, so they stay a dict. Which one it is follows from ``objective``: the
# validator below parses a registered objective's settings into its class before the union sees them.
ObjectiveSettings = Annotated[
    Annotated[ObjectiveConfig, Tag("registered")] | Annotated[dict[str, Any], Tag("module:factory")],
    Discriminator(lambda value: "registered" if isinstance(value, ObjectiveConfig) else "module:factory")]


class TrainSettings(Strict):
    objective: str = Field(description="registered objective (disc, gen, skipthought) or 'module:factory'")
    objective_settings: ObjectiveSettings = Field(default_factory=dict, validate_default=True)
    corpus: str
    wordvecs: str | None = None
    batch_size: int = Field(64, ge=2)
    max_len: int = Field(30, ge=1)
    max_steps: int | None = Field(500, ge=1)
    epochs: int | None = Field(None, ge=1)
    optimizer: OptimizerSettings = Field(default_factory=OptimizerSettings)
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    seed: int = 0
    log_every: int = Field(10, ge=1, description="steps between reads of the step values from the device (one "
                           "all-reduce and host sync: the divergence check, throughput, the objective's metrics); "
                           "every step's loss and gradient norm are recorded")
    checkpoint_every: int = Field(100, ge=1, description="steps between checkpoints (and STS14 evaluations)")
    senteval_dir: str | None = Field(None, description="SentEval data/downstream; enables periodic STS14")
    postprocessing_sentences: int = Field(20000, ge=10, description="training sentences to fit the top PCs on")
    final_eval_tasks: list[str] = Field(default_factory=list, description="evaluation suite run at the end")
    ddp_find_unused_parameters: bool = False

    @field_validator("objective")
    @classmethod
    def _known_objective(cls, objective: str) -> str:
        return objective if is_factory(objective) else registered_objective(objective)

    @field_validator("objective_settings", mode="before")
    @classmethod
    def _typed_for_the_objective(cls, value: Any, info: ValidationInfo) -> Any:
        """A registered objective's settings parsed by its config class (an unknown or bad key is an error located
        at ``objective_settings.<key>``); left as they are when the objective is a factory's or itself invalid."""
        objective = info.data.get("objective")
        if objective is None or is_factory(objective):
            return value
        if isinstance(value, config_class(objective)):
            return value
        # a dict, or another objective's settings: checked key by key as they were given
        return parse_config(objective, value.given() if isinstance(value, ObjectiveConfig) else value)

    @field_serializer("objective_settings")
    def _as_given(self, value: ObjectiveConfig | dict[str, Any]) -> dict[str, Any]:
        # only the keys that were set: run keys, MLflow params, saved settings and run records read this dump
        return value.given() if isinstance(value, ObjectiveConfig) else value

    @model_validator(mode="after")
    def _has_an_end(self) -> "TrainSettings":
        if self.max_steps is None and self.epochs is None:
            raise ValueError("set max_steps or epochs: the run needs an end")
        if self.optimizer.schedule != "constant" and self.max_steps is None:
            raise ValueError(f"optimizer.schedule={self.optimizer.schedule} decays to max_steps: set max_steps")
        return self


class RunSettings(Strict):
    name: str
    storage: str = Field(description="local path or URI (s3://, gs://, NFS) every worker can write")
    workers: int = Field(1, ge=1)
    cpus_per_worker: float = Field(1, gt=0)
    gpus_per_worker: float = Field(0, ge=0)
    max_failures: int = Field(2, ge=-1)
    # Ray Train waits 60 s for a worker group's resources and retries without end, the right thing for a Tune trial
    # (other trials hold the CPUs for a while) and an autoscaling cluster; `skipview train` bounds it (cli.py)
    worker_wait_s: float | None = Field(None, gt=0, description="how long the worker group waits for the "
                                                                "cluster's resources; None: without bound")
    # Two by default: when the latest checkpoint turns out corrupt, the run falls back to the one before it.
    keep_checkpoints: int = Field(2, ge=1, description="checkpoints kept: the most recent ones, or with STS14 the "
                                                       "best by STS14 besides the latest")
    experiment: str = "skipview"
    tracking_uri: str | None = None
    output: str | None = Field(None, description="where the driver writes the final model directory")


def check_precision(precision: str, on_gpu: bool) -> None:
    """fp16 needs CUDA: its grad scaler is CUDA's (checked on the driver before any worker starts, and by each
    worker's ``loop.autocast_dtype``)."""
    if precision == "fp16" and not on_gpu:
        raise ValueError("precision=fp16 needs GPUs (--gpus-per-worker): its loss scaling is CUDA's; on CPU use "
                         "bf16 or fp32")


def set_dotted(tree: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = tree
    for key in parents:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ValueError(f"--set {dotted}: {key} is not a section")
    node[leaf] = value


def recorded_settings(params: Mapping[str, str]) -> TrainSettings:
    """The settings a run recorded as its MLflow params (``driver.run_params``, flattened to dotted keys and strings;
    a study's runs record them under ``train.``, its ``TRAIN_PARAMS``): each value read back as the Python literal
    ``str`` wrote (``None``, a number, a list), else kept as the string it is (a path, a name)."""
    prefix = "train." if any(key.startswith("train.") for key in params) else ""
    tree: dict[str, Any] = {}
    for key, text in params.items():
        if key.startswith(prefix):
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = text
            set_dotted(tree, key.removeprefix(prefix), value)
    return TrainSettings.model_validate(tree)


def parse_overrides(pairs: list[str]) -> list[tuple[str, Any]]:
    """``key=value`` with YAML values (``lr=1e-3`` is a float, ``views=[f,g]`` a list)."""
    parsed = []
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--set {pair!r}: expected key=value")
        parsed.append((key.strip(), yaml.safe_load(raw)))
    return parsed


def read_config(reference: str | Path) -> dict[str, Any]:
    """``FILE`` or ``FILE:dotted.section`` (e.g. ``params.yaml:train.settings``, so DVC's params.yaml is the one
    source of truth without a copy of its settings)."""
    path, _, section = str(reference).partition(":")
    if not Path(path).is_file():
        raise ValueError(f"--config {reference}: no file {path}")
    node: Any = yaml.safe_load(Path(path).read_text()) or {}
    for key in section.split(".") if section else []:
        if not isinstance(node, dict) or key not in node:
            raise ValueError(f"--config {reference}: {path} has no section {section!r} (missing {key!r})")
        node = node[key]
    if not isinstance(node, dict):
        raise ValueError(f"--config {reference}: expected a mapping of settings")
    return dict(node)


def merge(tree: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``update`` on top of ``tree``, section by section (a config's ``optimizer.lr`` keeps the default clip)."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(tree.get(key), dict):
            merge(tree[key], value)
        else:
            tree[key] = value
    return tree


def objective_defaults(objective: str | None) -> dict[str, Any]:
    if not objective or is_factory(objective):        # a ``module:factory`` objective brings no paper defaults
        return {}
    return training_defaults(objective)


def settings_tree(config_file: str | Path | None, base: dict[str, Any], overrides: list[str],
                  typed: dict[str, Any] | None = None) -> dict[str, Any]:
    """Layers, last wins: the objective's paper defaults, the config file, the command's options, ``typed`` (dotted
    keys with values already typed, as a study file gives them), ``--set`` (``key=value`` strings)."""
    tree = objective_defaults(base.get("objective"))
    merge(tree, read_config(config_file) if config_file is not None else {})
    tree.update({k: v for k, v in base.items() if v is not None})
    for key, value in [*(typed or {}).items(), *parse_overrides(overrides)]:
        set_dotted(tree, key, value)
    return tree


def load_settings(config_file: str | Path | None, base: dict[str, Any], overrides: list[str],
                  typed: dict[str, Any] | None = None) -> TrainSettings:
    """The settings of ``settings_tree``'s layers, typed (the objective's settings by its config class)."""
    return absolute_paths(TrainSettings.model_validate(settings_tree(config_file, base, overrides, typed)))


def absolute_paths(settings: TrainSettings) -> TrainSettings:
    """Tune trials and Train workers run in their own working directories: relative data paths (from the command
    line or from a config file) are resolved on the driver first."""
    update = {key: str(Path(value).resolve()) for key in ("corpus", "wordvecs", "senteval_dir")
              if (value := getattr(settings, key)) and "://" not in value}
    return settings.model_copy(update=update)
