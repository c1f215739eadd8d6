"""A few optimiser steps of an objective on a prepared corpus, as the trainer takes them, without Ray: for tests
that need a trained model, not a training run."""

from __future__ import annotations

import torch

from skipview.models.batching import iterate_batches
from skipview.models.corpus import PreparedCorpus


def train_steps(objective, corpus: PreparedCorpus, steps: int, batch_size: int, lr: float, seed: int = 0):
    """The trainer contract (models/objective.py) on CPU: forward, backward, Adam step, after_optimizer_step."""
    torch.manual_seed(seed)
    optimiser = torch.optim.Adam([p for p in objective.parameters() if p.requires_grad], lr=lr)
    done, epoch = 0, 0
    while done < steps:
        for batch in iterate_batches(corpus, objective.example_kind, batch_size, seed=seed, epoch=epoch):
            output = objective(batch)
            optimiser.zero_grad()
            output.loss.backward()
            optimiser.step()
            objective.after_optimizer_step()
            done += 1
            if done == steps:
                return output
        epoch += 1
    return output
