"""The contract between an objective (what is learned) and the trainer that drives it (how it is run).

A trainer knows nothing about any particular objective. It

1. builds one by name: ``registry.build_objective(name, config, vocab=..., word_vectors=...)``, starting from
   the objective's own ``training_defaults`` (``registry.training_defaults(name)``);
2. asks it which examples it needs (``example_kind``) and draws length-bucketed batches of that kind from the
   memory-mapped corpus with ``skipview.models.batching.iterate_batches``;
3. per step: ``out = objective(batch)``; ``out.loss.backward()``; optimiser step;
   ``objective.after_optimizer_step()`` (e.g. the invertibility update of U);
4. at the end: ``objective.sentence_encoder(tokenizer, vocab)`` gives the inference-side ``SentenceEncoder``.

Everything an objective logs goes in ``ObjectiveOutput.metrics`` as 0-d tensors (no ``.item()`` inside the
step: that would force a host-device sync on GPU).

Buffers of an objective (the fixed word vectors, the negative-sampling distribution) are constants that every
rank builds identically and that are not saved in checkpoints (``persistent=False``; they are rebuilt from the
vocabulary and ``vectors.npy``). Wrap with ``DistributedDataParallel(..., broadcast_buffers=False)``: the
default would re-broadcast the word-vector matrix (100+ MB) before every forward.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator
from torch import nn

if TYPE_CHECKING:
    from skipview.models.encoder import SentenceEncoder
    from skipview.models.text import Tokenizer
    from skipview.models.vocab import Vocab


class ExampleKind(str, Enum):
    WINDOW = "window"    # N consecutive sentences of the stream with their document ids (discriminative)
    PAIR = "pair"        # (sentence, next sentence) in the same document (generative)
    TRIPLE = "triple"    # (previous, sentence, next) in the same document (skip-thought)


@dataclass
class ObjectiveOutput:
    loss: torch.Tensor                                   # scalar, averaged per example
    metrics: dict[str, torch.Tensor] = field(default_factory=dict)


class ObjectiveConfig(BaseModel):
    """Base of every objective's settings: unknown keys are errors, values are validated and immutable.

    It remembers the keys it was given, in their order (``given``): a run records its settings as they were written,
    so its recorded parameters and saved settings do not change when a default or a new setting is added here."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    _given_order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_the_order(cls, data: Any, handler) -> "ObjectiveConfig":
        config = handler(data)
        if isinstance(data, Mapping):
            config._given_order = tuple(data)
        return config

    def given(self) -> dict[str, Any]:
        """The settings that were set (no defaults), as JSON values, in the order they were given."""
        values = self.model_dump(mode="json", exclude_unset=True)
        ordered = {key: values[key] for key in self._given_order if key in values}
        ordered.update(values)
        return ordered


class Objective(nn.Module, ABC):
    example_kind: ClassVar[ExampleKind]
    config_class: ClassVar[type[ObjectiveConfig]]       # its settings; constructed as cls(config, vocab=..., ...)
    # the paper's training settings in the trainer's keys (TrainSettings: batch_size, optimizer.lr, ...); the
    # trainer layers a run's configuration on top of them
    training_defaults: ClassVar[dict] = {}

    @abstractmethod
    def forward(self, batch) -> ObjectiveOutput: ...

    def after_optimizer_step(self) -> None:
        """Called on the unwrapped module after every optimiser step; no-op unless the objective constrains
        its parameters (the generative objective's invertibility update)."""

    @abstractmethod
    def sentence_encoder(self, tokenizer: "Tokenizer", vocab: "Vocab") -> "SentenceEncoder": ...
