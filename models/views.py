"""Sentence views: the encoders a ``SentenceEncoder`` is made of.

A view turns padded token ids into one vector per sentence. The multi-view paper's two views work on fixed
word vectors shared by the whole model:

* ``BiGRUView`` (f): a bi-directional GRU. Training representation: the last hidden state of each direction,
  ``[h_fwd_last; h_bwd_last]``. Test pooling (paper Table 2): unsupervised ``mean_t(H)``, supervised
  ``[max_t(H); mean_t(H); min_t(H); h_last]`` where ``h_last`` is the training representation.
* ``LinearView`` (g): ``mean_t(W x_t)``; test pooling unsupervised the same, supervised
  ``[max_t(WX); mean_t(WX); min_t(WX)]``.

Other encoders (skip-thought's) subclass ``View`` and register themselves with ``register_view`` so that
``SentenceEncoder.load`` can rebuild them from ``config.json``.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import ClassVar, Literal

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from skipview.models.batching import Sentences
from skipview.models.unrolled_gru import bigru_last_states, bigru_last_states_of_words
from skipview.models.vocab import PAD_ID

Mode = Literal["unsupervised", "supervised"]
# how g weights each word before averaging: the paper's plain mean, uSIF's fixed weights, or those learned on
WordWeights = Literal["none", "usif", "usif_learned"]
MODES: tuple[Mode, ...] = ("unsupervised", "supervised")
_ROWS_PER_CHECK = 1 << 16

_VIEW_CLASSES: dict[str, type["View"]] = {}


class View(nn.Module, ABC):
    """One encoder of a sentence. ``kind`` names the class in saved models; ``config()`` rebuilds it."""

    kind: ClassVar[str]

    @abstractmethod
    def config(self) -> dict:
        """Constructor keyword arguments (JSON-serialisable)."""

    @abstractmethod
    def encode(self, sentences: Sentences, mode: Mode, word_vectors: torch.Tensor | None) -> torch.Tensor:
        """(B, D_mode) test-time representation. ``word_vectors`` is the model's fixed matrix (or None)."""

    @abstractmethod
    def output_dim(self, mode: Mode) -> int: ...

    def represent_words(self, sentences: Sentences, word_vectors: torch.Tensor) -> torch.Tensor:
        """The training representation ``represent(embed(sentences, word_vectors), sentences)`` from token ids, so a
        view may compute it without a (B, L, dim) tensor of every token's vector (``BiGRUView`` on a CPU)."""
        return self.represent(embed(sentences, word_vectors), sentences)


def register_view(cls: type[View]) -> type[View]:
    if cls.kind in _VIEW_CLASSES and _VIEW_CLASSES[cls.kind] is not cls:
        raise ValueError(f"view kind {cls.kind!r} is registered twice")
    _VIEW_CLASSES[cls.kind] = cls
    return cls


def build_view(kind: str, config: dict) -> View:
    if kind not in _VIEW_CLASSES:
        raise KeyError(f"unknown view kind {kind!r}; known: {sorted(_VIEW_CLASSES)} "
                       "(is the module that defines it imported?)")
    return _VIEW_CLASSES[kind](**config)


# ------------------------------------------------------------------------------------------------ pooling


def masked_mean(values: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Mean over time of (B, L, D) values where mask (B, L) is True."""
    return (values * mask[..., None]).sum(1) / lengths[:, None].to(values.dtype)


def masked_max(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return values.masked_fill(~mask[..., None], float("-inf")).amax(1)


def masked_min(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return values.masked_fill(~mask[..., None], float("inf")).amin(1)


def he_normal_(weight: torch.Tensor) -> torch.Tensor:
    """He et al. (2015) initialisation, fan-in mode (paper appendix 3)."""
    return nn.init.kaiming_normal_(weight, mode="fan_in", nonlinearity="relu")


def embed(sentences: Sentences, word_vectors: torch.Tensor) -> torch.Tensor:
    return nn.functional.embedding(sentences.ids, word_vectors)


def pack_by_length(x: torch.Tensor, lengths_cpu: torch.Tensor) -> PackedSequence:
    """``pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)`` without its host-device sync.

    That function sorts the host lengths and copies the permutation to the device from pageable memory, a copy
    that waits for all the device's queued work, once per forward. Here the permutation goes from page-locked
    memory, asynchronously. The PackedSequence remembers it, so the GRU's outputs come back in row order."""
    lengths, order = lengths_cpu.sort(descending=True)
    if x.is_cuda:
        order = order.pin_memory()
    order = order.to(x.device, non_blocking=True)
    packed = pack_padded_sequence(x.index_select(0, order), lengths, batch_first=True)
    return PackedSequence(packed.data, packed.batch_sizes, order)


# -------------------------------------------------------------------------------------------------- views


@register_view
class BiGRUView(View):
    """f: bi-GRU over fixed word vectors, hidden size h per direction (output 2h)."""

    kind = "bigru"

    def __init__(self, input_dim: int, hidden_size: int):
        super().__init__()
        self.input_dim, self.hidden_size = input_dim, hidden_size
        # On a GPU nn.GRU over a PackedSequence is one cuDNN call; CPU training unrolls it (``represent``).
        self.gru = nn.GRU(input_dim, hidden_size, batch_first=True, bidirectional=True)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """He init for weights; the reset and update gate biases 1, the candidate biases 0 (paper appendix 3).
        PyTorch's GRU has two bias vectors per gate (input and hidden side); the gate value 1 goes on the
        input-side bias only, so each gate's total bias is 1."""
        h = self.hidden_size
        for name, param in self.gru.named_parameters():
            if name.startswith("weight"):
                he_normal_(param.data)
            else:
                param.data.zero_()
                if name.startswith("bias_ih"):
                    param.data[: 2 * h] = 1.0      # rows [r; z; n]: reset and update gates

    def config(self) -> dict:
        return {"input_dim": self.input_dim, "hidden_size": self.hidden_size}

    def output_dim(self, mode: Mode) -> int:
        return 2 * self.hidden_size * (4 if mode == "supervised" else 1)

    def states_and_last(self, x: torch.Tensor, sentences: Sentences, need_states: bool):
        """Every word's state H_t (B, L, 2h), or None unless ``need_states``, and the last states (B, 2h): what
        ``pool`` reads, public for poolings of one's own (e.g. states weighted per word)."""
        outputs, last = self.gru(pack_by_length(x, sentences.lengths_cpu))
        # last: (2, B, h) in the caller's row order (PackedSequence remembers the unsorting permutation)
        last = torch.cat([last[0], last[1]], dim=-1)
        if not need_states:
            return None, last
        states, _ = pad_packed_sequence(outputs, batch_first=True, total_length=x.shape[1])
        return states, last

    def represent(self, x: torch.Tensor, sentences: Sentences) -> torch.Tensor:
        """Training representation [h_fwd_last; h_bwd_last], (B, 2h). On a CPU the GRU is unrolled step by step
        (``unrolled_gru``: ATen's packed CPU GRU spends a third of a training step zero-filling in its backward);
        on a GPU the packed cuDNN kernel is one call."""
        if x.device.type == "cpu":
            return bigru_last_states(self.gru, x, sentences.lengths_cpu)
        return self.states_and_last(x, sentences, need_states=False)[1]

    def represent_words(self, sentences: Sentences, word_vectors: torch.Tensor) -> torch.Tensor:
        """``represent(embed(sentences, word_vectors), sentences)``, the same values and gradients; on a CPU each
        distinct word of the batch goes through the input projection once (``bigru_last_states_of_words``)."""
        if sentences.ids.device.type == "cpu":
            return bigru_last_states_of_words(self.gru, word_vectors, sentences.ids, sentences.lengths_cpu)
        return super().represent_words(sentences, word_vectors)

    def pool(self, x: torch.Tensor, sentences: Sentences, mode: Mode) -> torch.Tensor:
        states, last = self.states_and_last(x, sentences, need_states=True)
        mask = sentences.mask()
        mean = masked_mean(states, mask, sentences.lengths)
        if mode == "unsupervised":
            return mean
        return torch.cat([masked_max(states, mask), mean, masked_min(states, mask), last], dim=-1)

    def encode(self, sentences, mode, word_vectors):
        return self.pool(embed(sentences, word_vectors), sentences, mode)


@register_view
class LinearView(View):
    """g: mean over time of W x_t, W of shape (output_dim, input_dim) (paper: 2h x word dim), no bias.

    ``word_weights="usif"`` (not the paper's g; issue 38): g averages each word's unit-length vector times its uSIF
    weight, ``mean_t(W a(w_t) x_t / |x_t|)``, as uSIF (Ethayarajh 2018) averages its words, so the weighting is part
    of the model that is trained and saved. The per-word factor ``a(w) / |x_w|`` is a fixed buffer, set once from
    the corpus counts (``set_word_scale``) and saved with the weights. ``word_weights="usif_learned"`` also learns
    each word's weight: the factor times ``exp(gain_w)``, one trainable log-gain per word starting at 0, so training
    starts from uSIF's weights and the objective moves them (a word absent from a batch gets no gradient)."""

    kind = "linear"

    def __init__(self, input_dim: int, output_dim: int, word_weights: WordWeights = "none", vocab_size: int = 0):
        super().__init__()
        self.input_dim, self.out_dim, self.word_weights = input_dim, output_dim, word_weights
        self.linear = nn.Linear(input_dim, output_dim, bias=False)
        he_normal_(self.linear.weight.data)
        if word_weights != "none":
            if vocab_size <= 0:
                raise ValueError(f"a g with word_weights={word_weights!r} needs the vocabulary size")
            self.register_buffer("word_scale", torch.zeros(vocab_size))
        if word_weights == "usif_learned":
            self.word_log_gain = nn.Parameter(torch.zeros(vocab_size))

    def config(self) -> dict:
        config = {"input_dim": self.input_dim, "output_dim": self.out_dim}
        if self.word_weights != "none":
            config.update(word_weights=self.word_weights, vocab_size=len(self.word_scale))
        return config

    def set_word_scale(self, weights: torch.Tensor, word_vectors: torch.Tensor) -> None:
        """Each word's factor: its weight over its vector's length (0 for a word without a vector)."""
        norms = word_vectors.norm(dim=1)
        self.word_scale.copy_(torch.where(norms > 0, weights / norms.clamp_min(1e-12), torch.zeros_like(norms)))

    def output_dim(self, mode: Mode) -> int:
        return self.out_dim * (3 if mode == "supervised" else 1)

    def weighted(self, x: torch.Tensor, sentences: Sentences) -> torch.Tensor:
        if self.word_weights == "none":
            return x
        scale = self.word_scale[sentences.ids]
        if self.word_weights == "usif_learned":
            scale = scale * self.word_log_gain[sentences.ids].exp()
        return x * scale[..., None].to(x.dtype)

    def represent(self, x: torch.Tensor, sentences: Sentences) -> torch.Tensor:
        # W is linear, so mean_t(W x_t) = W mean_t(x_t): one (B, dim) x (dim, 2h) product instead of B*L of them
        return self.linear(masked_mean(self.weighted(x, sentences), sentences.mask(), sentences.lengths))

    def pool(self, x: torch.Tensor, sentences: Sentences, mode: Mode) -> torch.Tensor:
        if mode == "unsupervised":
            return self.represent(x, sentences)
        projected = self.linear(self.weighted(x, sentences))
        mask = sentences.mask()
        return torch.cat([masked_max(projected, mask), masked_mean(projected, mask, sentences.lengths),
                          masked_min(projected, mask)], dim=-1)

    def encode(self, sentences, mode, word_vectors):
        return self.pool(embed(sentences, word_vectors), sentences, mode)


def build_multiview_encoder(kind: Literal["f", "g"], word_dim: int, hidden_size: int,
                            g_word_weights: WordWeights = "none", vocab_size: int = 0) -> BiGRUView | LinearView:
    """The paper's f or g for word vectors of ``word_dim`` and a GRU of ``hidden_size`` per direction; g weighted
    per word when ``g_word_weights`` says so (``LinearView``)."""
    if kind == "f":
        return BiGRUView(word_dim, hidden_size)
    return LinearView(word_dim, 2 * hidden_size, g_word_weights, vocab_size)


def frozen_word_vectors(word_vectors, vocab_size: int) -> torch.Tensor:
    """Fixed word-vector matrix as a float32 tensor, row <pad> zero so padding contributes nothing.

    A read-only float32 array whose <pad> row is already zero (the memory-mapped ``vectors.npy``, whose specials are
    zero rows by contract) is used in place: the training workers of a node then share the page cache's one copy of
    a table that grows with the vocabulary (1.2 GB at a million words) instead of each holding a private one. The
    table is never written (it takes no gradient and DDP leaves buffers alone, ``platform/training/loop.py``).
    Anything else is copied."""
    if word_vectors is None:
        raise ValueError("the multi-view objectives need a fixed word-vector matrix (vectors.npy), got None")
    shared = (isinstance(word_vectors, np.ndarray) and not word_vectors.flags.writeable and word_vectors.ndim == 2
              and word_vectors.dtype == np.float32 and len(word_vectors) > PAD_ID and not word_vectors[PAD_ID].any())
    if shared:
        with warnings.catch_warnings():     # torch warns that writing a read-only array is undefined: never done here
            warnings.simplefilter("ignore", UserWarning)
            matrix = torch.from_numpy(word_vectors)
    else:
        matrix = torch.as_tensor(word_vectors, dtype=torch.float32).clone()
    if matrix.ndim != 2 or matrix.shape[0] != vocab_size:
        raise ValueError(f"word-vector matrix has shape {tuple(matrix.shape)}, expected ({vocab_size}, dim) "
                         "to match the vocabulary")
    # in row blocks: a whole-table check would allocate a mask as large as the table's rows. NumPy's isfinite, not
    # torch's: 0.06 against 0.63 CPU s for the 1.2 GB table of a million words (one thread, this machine), paid by
    # every training worker at start-up
    for start in range(0, vocab_size, _ROWS_PER_CHECK):
        if not np.isfinite(matrix[start: start + _ROWS_PER_CHECK].numpy()).all():
            raise ValueError("word-vector matrix contains NaN or infinite values")
    if not shared:
        matrix[PAD_ID] = 0.0
    return matrix

