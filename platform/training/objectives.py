"""From settings to the pieces a worker trains: the objective, its batches, and the inference-side encoder of its
current weights (post-processing fitted on training sentences).

Objectives are built by name through ``skipview.models.registry`` (disc, gen, skipthought). A ``module:factory``
name builds one from any importable factory with the registry's signature, so a research objective can be
trained without editing the registry.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from skipview.models.arrays import load_npy
from skipview.models.batching import iterate_batches, sample_sentence_ids
from skipview.models.corpus import PreparedCorpus
from skipview.models.encoder import SentenceEncoder
from skipview.models.objective import Objective
from skipview.models.registry import build_objective
from skipview.models.views import MODES, Mode
from skipview.models.vocab import Vocab
from skipview.platform.training.config import TrainSettings


def load_word_vectors(wordvecs: str | Path | None, vocab: Vocab) -> np.ndarray | None:
    """``vectors.npy`` of a wordvecs directory, memory-mapped read-only (the workers of a node share its pages) and
    checked to be aligned row by row with the corpus vocabulary."""
    if wordvecs is None:
        return None
    return aligned_word_vectors(wordvecs, vocab)


def aligned_word_vectors(wordvecs: str | Path, vocab: Vocab) -> np.ndarray:
    """The memory-mapped ``vectors.npy``, checked against ``vocab.tsv`` and the corpus vocabulary."""
    folder = Path(wordvecs)
    matrix_path, vocab_path = folder / "vectors.npy", folder / "vocab.tsv"
    for needed in (matrix_path, vocab_path):
        if not needed.is_file():
            raise FileNotFoundError(f"{needed}: missing (make word vectors with `skipview data wordvecs`)")
    vectors = load_npy(matrix_path, mmap="r", remake="`skipview data wordvecs`")
    differing_lines = _words_matching(vocab_path, vocab)
    if differing_lines is not None or vectors.shape[0] != len(vocab):
        theirs = len(vocab) if differing_lines is None else differing_lines
        raise ValueError(f"{folder}: word vectors ({vectors.shape[0]} rows, vocab.tsv of {theirs} words) are not "
                         f"aligned with the corpus vocabulary ({len(vocab)} words); rebuild them for this corpus")
    return vectors


def _words_matching(vocab_tsv: Path, vocab: Vocab) -> int | None:
    """None when ``vocab_tsv`` lists ``vocab``'s words in its order, else its number of lines. Streamed: a second
    vocabulary in memory would cost every worker ~180 bytes a word (180 MB at a million words)."""
    lines, matching, words = 0, True, vocab.words
    with open(vocab_tsv, encoding="utf-8") as f:
        for lines, line in enumerate(f, 1):
            matching = matching and lines <= len(words) and line.partition("\t")[0] == words[lines - 1]
    return None if matching and lines == len(words) else lines


def objective_factory(name: str) -> Callable[..., Objective]:
    if ":" in name:
        module, _, attribute = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as error:
            raise ValueError(f"objective {name!r}: cannot import {attribute} from {module} ({error})") from error
    return partial(build_objective, name)


@dataclass
class Built:
    objective: Objective
    corpus: PreparedCorpus
    settings: TrainSettings

    def batches(self, *, rank: int, world_size: int, epoch: int, start_batch: int):
        s = self.settings
        return iterate_batches(self.corpus, self.objective.example_kind, s.batch_size, max_len=s.max_len, rank=rank,
                               world_size=world_size, seed=s.seed, epoch=epoch, start_batch=start_batch)

    def finished_encoder(self, device: torch.device, modes: Sequence[Mode] = MODES) -> SentenceEncoder:
        """The inference-side encoder of the current weights on ``device``, with the post-processing of ``modes``
        fitted on training sentences."""
        s = self.settings
        encoder = self.objective.sentence_encoder(self.corpus.tokenizer, self.corpus.vocab).to(device)
        encoder.fit_postprocessing(sample_sentence_ids(self.corpus, s.postprocessing_sentences, seed=s.seed,
                                                       max_len=s.max_len), modes=modes)
        return encoder


def build(settings: TrainSettings) -> Built:
    corpus = PreparedCorpus(settings.corpus)
    vectors = load_word_vectors(settings.wordvecs, corpus.vocab)
    objective = objective_factory(settings.objective)(settings.objective_settings, vocab=corpus.vocab,
                                                      word_vectors=vectors)
    return Built(objective, corpus, settings)
