"""Settings of the skip-thought model (Kiros et al. 2015); defaults are the paper's.

The paper's training settings (Adam, mini-batches of 128, gradient norm clipped at 10) belong to the trainer's
settings; ``TRAINING_DEFAULTS`` states them in the trainer's keys so it can use them as this objective's
defaults. The paper gives no learning rate: Adam's own default.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from skipview.models.objective import ObjectiveConfig

# in the trainer's keys (TrainSettings); its optimiser is Adam
TRAINING_DEFAULTS = {"batch_size": 128, "optimizer": {"lr": 1e-3, "grad_clip": 10.0}}


class SkipThoughtConfig(ObjectiveConfig):
    encoder: Literal["uni", "bi"] = Field(
        "uni", description="uni-skip: one GRU of hidden_size; bi-skip: a forward and a backward GRU of "
                           "hidden_size/2 each, final states concatenated")
    vocab_size: int = Field(20_000, gt=0, description="training vocabulary: the vocab_size most frequent words "
                                                      "plus the specials; rarer words are <unk> in training")
    embedding_dim: int = Field(620, gt=0)
    hidden_size: int = Field(2400, gt=0, description="size of the sentence vector (both encoder kinds)")
    decoder_hidden_size: int | None = Field(
        None, gt=0, description="hidden size of each decoder GRU; default: hidden_size")
    reset_gate: Literal["paper", "fused"] = Field(
        "paper", description="paper: eqs. 3 and 7 as printed, U (r * h), a loop over time steps; fused: "
                             "r * (U h), the authors' code and cuDNN's form, 1.5x the printed form's CPU step "
                             "(reports/benchmarks/skipthought_reset_gate.json); what training at scale uses")
    max_generation_length: int = Field(30, gt=0, description="longest sentence the generator writes (words)")

    @model_validator(mode="after")
    def _bi_splits_evenly(self) -> "SkipThoughtConfig":
        if self.encoder == "bi" and self.hidden_size % 2:
            raise ValueError(f"hidden_size must be even for the bi-skip encoder (two halves), got {self.hidden_size}")
        return self

    @property
    def decoder_size(self) -> int:
        return self.decoder_hidden_size or self.hidden_size
