"""Training batches drawn from the memory-mapped prepared corpus.

Each objective names the examples it needs (``Objective.example_kind``):

* ``WINDOW``  N consecutive sentences of the stream with their document ids (discriminative objective: every
  sentence is both an anchor and a candidate; positives are decided inside the objective from the ids, so a
  window may straddle a document boundary without creating false positives).
* ``PAIR``    (sentence, next sentence) inside one document (generative objective).
* ``TRIPLE``  (previous, sentence, next) inside one document (skip-thought).

Sharding and determinism. Everything is a pure function of (corpus, kind, batch size, max_len, seed, epoch,
world size), so every rank computes the same plan without talking to the others and reads only its own share
of tokens. A restarted run passes ``start_batch`` and continues from the same data position.

* WINDOW: the stream is cut into windows of N sentences at an epoch-dependent offset (so the cut points move
  between epochs); the windows are permuted and dealt to ranks round-robin.
* PAIR / TRIPLE: the sentence index space is cut into blocks of up to 64 batches' worth of sentences; blocks are
  permuted and dealt to ranks; inside a block the valid examples are shuffled, cut to a whole number of batches,
  sorted by sentence length (length bucketing: a batch holds sentences of near-equal length, so padding is
  small) and the resulting batches are shuffled. Memory is O(block), never O(corpus). A full permutation of
  the corpus would need 8 bytes per sentence per rank (600 MB for BookCorpus); blocks trade a little mixing
  (a batch comes from one region of the corpus) for constant memory.

Every rank yields the same number of batches (the minimum over ranks), which DDP needs to avoid a hang.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from skipview.models.corpus import PreparedCorpus
from skipview.models.objective import ExampleKind
from skipview.models.vocab import PAD_ID

BATCHES_PER_BLOCK = 64      # length-bucketing pool: sorting 64 batches' worth of examples wastes <~5% padding
MIN_BLOCKS_PER_RANK = 4     # tiny corpora: shrink blocks so every rank still gets several of them


@dataclass
class Sentences:
    """A padded batch of token-id sequences.

    ``lengths`` lives with ``ids`` (on the accelerator, for masks); ``lengths_cpu`` stays on the host because
    ``pack_padded_sequence`` needs host lengths, and copying them back from the GPU would force a sync.
    An empty sentence is given length 1 (a single ``<pad>``, whose word vector is zero) so packing never sees 0.
    """

    ids: torch.Tensor          # (B, L) int64, PAD_ID after each sentence's end
    lengths: torch.Tensor      # (B,) int64, same device as ids
    lengths_cpu: torch.Tensor  # (B,) int64, host
    indices: np.ndarray | None = None   # corpus sentence numbers, when read from a corpus

    @classmethod
    def from_arrays(cls, sequences: list[np.ndarray] | list[list[int]]) -> "Sentences":
        lengths = np.array([max(len(s), 1) for s in sequences], dtype=np.int64)
        ids = np.full((len(sequences), int(lengths.max(initial=1))), PAD_ID, dtype=np.int64)
        for row, seq in enumerate(sequences):
            ids[row, : len(seq)] = seq
        lengths_t = torch.from_numpy(lengths)
        return cls(torch.from_numpy(ids), lengths_t, lengths_t)

    def to(self, device, non_blocking: bool = False) -> "Sentences":
        return Sentences(self.ids.to(device, non_blocking=non_blocking),
                         self.lengths.to(device, non_blocking=non_blocking), self.lengths_cpu, self.indices)

    def mask(self) -> torch.Tensor:
        """(B, L) bool, True on real tokens."""
        positions = torch.arange(self.ids.shape[1], device=self.ids.device)
        return positions[None, :] < self.lengths[:, None]

    @property
    def num_sentences(self) -> int:
        return self.ids.shape[0]

    @property
    def num_tokens(self) -> int:
        return int(self.lengths_cpu.sum())


@dataclass
class WindowBatch:
    sentences: Sentences
    doc_ids: torch.Tensor      # (N,) int64 document number of each sentence

    def to(self, device, non_blocking: bool = False) -> "WindowBatch":
        return WindowBatch(self.sentences.to(device, non_blocking), self.doc_ids.to(device, non_blocking=non_blocking))

    @property
    def num_sentences(self) -> int:
        return self.sentences.num_sentences

    @property
    def num_tokens(self) -> int:
        return self.sentences.num_tokens


@dataclass
class PairBatch:
    sentences: Sentences       # the encoded sentences s_i
    next: Sentences            # s_{i+1}, row for row

    def to(self, device, non_blocking: bool = False) -> "PairBatch":
        return PairBatch(self.sentences.to(device, non_blocking), self.next.to(device, non_blocking))

    @property
    def num_sentences(self) -> int:
        return self.sentences.num_sentences

    @property
    def num_tokens(self) -> int:
        return self.sentences.num_tokens + self.next.num_tokens


@dataclass
class TripleBatch:
    previous: Sentences        # s_{i-1}
    sentences: Sentences       # s_i (encoded)
    next: Sentences            # s_{i+1}

    def to(self, device, non_blocking: bool = False) -> "TripleBatch":
        return TripleBatch(self.previous.to(device, non_blocking), self.sentences.to(device, non_blocking),
                           self.next.to(device, non_blocking))

    @property
    def num_sentences(self) -> int:
        return self.sentences.num_sentences

    @property
    def num_tokens(self) -> int:
        return self.previous.num_tokens + self.sentences.num_tokens + self.next.num_tokens


# --------------------------------------------------------------------------------------------------- reading


def read_sentences(corpus: PreparedCorpus, indices: np.ndarray, max_len: int) -> Sentences:
    """Gather sentences ``indices`` (truncated to their first ``max_len`` tokens) with one vectorised memmap read."""
    indices = np.asarray(indices, dtype=np.int64)
    starts = np.asarray(corpus.offsets[indices], dtype=np.int64)
    true_lengths = np.minimum(np.asarray(corpus.offsets[indices + 1], dtype=np.int64) - starts, max_len)
    width = int(true_lengths.max(initial=0))
    width = max(width, 1)
    positions = starts[:, None] + np.arange(width, dtype=np.int64)[None, :]
    inside = np.arange(width)[None, :] < true_lengths[:, None]
    # positions beyond a sentence's end are clipped into range and then overwritten with PAD
    positions = np.minimum(positions, max(len(corpus.tokens) - 1, 0))
    ids = np.where(inside, np.asarray(corpus.tokens[positions.ravel()]).reshape(positions.shape), PAD_ID)
    lengths = torch.from_numpy(np.maximum(true_lengths, 1))
    return Sentences(torch.from_numpy(ids.astype(np.int64)), lengths, lengths, indices)


def sample_sentence_ids(corpus: PreparedCorpus, num_sentences: int, *, seed: int = 0,
                        max_len: int | None = None) -> list[np.ndarray]:
    """A uniform random sample of corpus sentences as token-id arrays (for fitting post-processing)."""
    rng = np.random.default_rng(seed)
    count = min(num_sentences, corpus.num_sentences)
    chosen = np.sort(rng.choice(corpus.num_sentences, size=count, replace=False))
    return corpus.read_sentences(chosen, max_len)


def _is_doc_start(corpus: PreparedCorpus, begin: int, end: int) -> np.ndarray:
    """Bool array over sentences [begin, end): True where a document starts (reads only that part of doc_index)."""
    doc_index = corpus.doc_index
    lo, hi = np.searchsorted(doc_index, [begin, end])
    starts = np.zeros(end - begin, dtype=bool)
    starts[np.asarray(doc_index[lo:hi], dtype=np.int64) - begin] = True
    return starts


def _document_ids(corpus: PreparedCorpus, indices: np.ndarray) -> np.ndarray:
    """Document number of each sentence index (binary search in doc_index; reads O(log D) pages each)."""
    return np.searchsorted(corpus.doc_index, indices, side="right").astype(np.int64) - 1


def _valid_centres(corpus: PreparedCorpus, kind: ExampleKind, begin: int, end: int) -> np.ndarray:
    """Sentence indices in [begin, end) that have the neighbours ``kind`` needs inside their own document."""
    total = corpus.num_sentences
    starts = _is_doc_start(corpus, begin, min(end + 1, total))
    if end + 1 > total:                       # the corpus end closes the last document
        starts = np.append(starts, True)
    if begin == 0:                            # the corpus start opens one, whatever doc_index says
        starts[0] = True
    has_next = ~starts[1:]
    valid = has_next if kind is ExampleKind.PAIR else has_next & ~starts[:-1]
    return begin + np.flatnonzero(valid)


# -------------------------------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class _Plan:
    kind: ExampleKind
    units: list[np.ndarray]      # per rank: window starts (WINDOW) or block numbers (PAIR/TRIPLE), in order
    batches_per_unit: list[np.ndarray]
    block_size: int
    steps: int                   # batches every rank yields


def _block_size(num_sentences: int, batch_size: int, world_size: int) -> int:
    return int(np.clip(num_sentences // (MIN_BLOCKS_PER_RANK * world_size), batch_size, batch_size * BATCHES_PER_BLOCK))


def _plan(corpus: PreparedCorpus, kind: ExampleKind, batch_size: int, world_size: int, seed: int,
          epoch: int) -> _Plan:
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    rng = np.random.default_rng([seed, epoch])
    total = corpus.num_sentences
    if kind is ExampleKind.WINDOW:
        offset = int(rng.integers(batch_size)) if total >= 2 * batch_size else 0
        starts = np.arange(offset, total - batch_size + 1, batch_size, dtype=np.int64)
        starts = starts[rng.permutation(len(starts))]
        units = [starts[r::world_size] for r in range(world_size)]
        per_unit = [np.ones(len(u), dtype=np.int64) for u in units]
        block = batch_size
    else:
        block = _block_size(total, batch_size, world_size)
        num_blocks = -(-total // block)
        blocks = rng.permutation(num_blocks)
        units = [blocks[r::world_size] for r in range(world_size)]
        per_unit = [np.array([len(_valid_centres(corpus, kind, int(b) * block, min((int(b) + 1) * block, total)))
                              // batch_size for b in u], dtype=np.int64) for u in units]
    steps = min(int(p.sum()) for p in per_unit)
    return _Plan(kind, units, per_unit, block, steps)


def num_batches(corpus: PreparedCorpus, kind: ExampleKind | str, batch_size: int, *, world_size: int = 1,
                seed: int = 0, epoch: int = 0) -> int:
    """How many batches ``iterate_batches`` yields on every rank for this epoch."""
    return _plan(corpus, ExampleKind(kind), batch_size, world_size, seed, epoch).steps


def iterate_batches(corpus: PreparedCorpus, kind: ExampleKind | str, batch_size: int, *, max_len: int = 30,
                    rank: int = 0, world_size: int = 1, seed: int = 0, epoch: int = 0,
                    start_batch: int = 0) -> Iterator[WindowBatch | PairBatch | TripleBatch]:
    """This rank's batches for one epoch, from batch ``start_batch`` on (see the module docstring)."""
    kind = ExampleKind(kind)
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is outside world_size {world_size}")
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    plan = _plan(corpus, kind, batch_size, world_size, seed, epoch)
    produced = 0
    for unit, count in zip(plan.units[rank], plan.batches_per_unit[rank]):
        if produced >= plan.steps:
            return
        if produced + count <= start_batch:       # skip whole units without reading them
            produced += int(count)
            continue
        for batch in _unit_batches(corpus, plan, int(unit), batch_size, max_len, seed, epoch):
            if produced >= plan.steps:
                return
            if produced >= start_batch:
                yield batch
            produced += 1


def _unit_batches(corpus, plan: _Plan, unit: int, batch_size: int, max_len: int, seed: int, epoch: int):
    if plan.kind is ExampleKind.WINDOW:
        indices = np.arange(unit, unit + batch_size, dtype=np.int64)
        doc_ids = torch.from_numpy(_document_ids(corpus, indices))
        yield WindowBatch(read_sentences(corpus, indices, max_len), doc_ids)
        return
    rng = np.random.default_rng([seed, epoch, unit])
    begin = unit * plan.block_size
    centres = _valid_centres(corpus, plan.kind, begin, min(begin + plan.block_size, corpus.num_sentences))
    centres = rng.permutation(centres)[: len(centres) // batch_size * batch_size]
    lengths = np.minimum(np.diff(np.asarray(corpus.offsets[begin: begin + plan.block_size + 1]))[centres - begin],
                         max_len)
    centres = centres[np.argsort(lengths, kind="stable")]
    for b in rng.permutation(len(centres) // batch_size):
        yield _examples(corpus, plan.kind, centres[b * batch_size: (b + 1) * batch_size], max_len)


def _examples(corpus: PreparedCorpus, kind: ExampleKind, centres: np.ndarray, max_len: int) -> PairBatch | TripleBatch:
    """The PAIR or TRIPLE examples around the sentences ``centres``."""
    if kind is ExampleKind.PAIR:
        return PairBatch(read_sentences(corpus, centres, max_len), read_sentences(corpus, centres + 1, max_len))
    return TripleBatch(read_sentences(corpus, centres - 1, max_len), read_sentences(corpus, centres, max_len),
                       read_sentences(corpus, centres + 1, max_len))


def every_example(corpus: PreparedCorpus, kind: ExampleKind | str, batch_size: int, *,
                  max_len: int = 30) -> Iterator[PairBatch | TripleBatch]:
    """Every PAIR or TRIPLE example of the corpus once, in corpus order, in batches of ``batch_size`` (the last one
    smaller), each sentence cut at ``max_len`` as in training: a held-out corpus evaluated whole, in an order that
    depends on nothing but the corpus."""
    kind = ExampleKind(kind)
    if kind is ExampleKind.WINDOW:
        raise ValueError("every_example reads PAIR or TRIPLE examples; a WINDOW batch is the stream itself")
    centres = _valid_centres(corpus, kind, 0, corpus.num_sentences)
    for start in range(0, len(centres), batch_size):
        yield _examples(corpus, kind, centres[start: start + batch_size], max_len)
