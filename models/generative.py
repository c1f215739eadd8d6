"""Multi-view generative objective ("gen"), multi-view paper section 2.2.

f encodes s_i; a linear decoder U (word dim x 2h) maps it to x_i = U z_f(s_i); every word w of s_{i+1} is
predicted by negative sampling (eq. 1):

    log sigma(x_i . v_w) + sum_{k=1..K} log sigma(-x_i . v_{w_k}),   w_k ~ unigram^0.75,

with v the fixed word vectors. Loss: the negative, averaged over all target words of the batch. After every
optimiser step the invertibility update (eq. 2, Cisse et al. 2017) U <- (1 + beta) U - beta (U U^T) U pulls
U U^T towards I; after training g = U^T (a linear view with W = U^T). ``invertible: false`` is the Table 6
ablation (beta = 0; g is still U^T).
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from pydantic import Field

from skipview.models.batching import PairBatch, Sentences
from skipview.models.encoder import SentenceEncoder
from skipview.models.objective import ExampleKind, Objective, ObjectiveConfig, ObjectiveOutput
from skipview.models.views import BiGRUView, LinearView, frozen_word_vectors, he_normal_
from skipview.models.vocab import SPECIALS


class GenerativeConfig(ObjectiveConfig):
    hidden_size: int = Field(1024, gt=0, description="GRU hidden size per direction h; U is word dim x 2h")
    negatives: int = Field(5, gt=0, description="K negative samples per target word")
    noise_power: float = Field(0.75, description="negatives ~ unigram count ** noise_power")
    invertible: bool = Field(True, description="apply the invertibility update after every step (false: ablation)")
    beta: float = Field(0.01, gt=0, description="step size of the invertibility update")
    target_subsample: float = Field(0.0, ge=0, description=(
        "t of word2vec's frequent-word subsampling applied to the predicted words: each target word w weighted by "
        "min(1, sqrt(t / p(w))) (0: off, the paper's objective; word2vec uses 1e-5 to 1e-3)"))


def noise_distribution(counts: np.ndarray, has_vector: np.ndarray, power: float) -> torch.Tensor:
    """unigram ** power over the words that can be negatives (real words with a word vector), normalised (float64)."""
    weights = np.asarray(counts, dtype=np.float64) ** power * np.asarray(has_vector, dtype=bool)
    weights[: len(SPECIALS)] = 0.0
    if weights.sum() <= 0:
        raise ValueError("no word has both a positive count and a word vector: cannot draw negative samples")
    return torch.from_numpy(weights / weights.sum())


def target_weights(counts: np.ndarray, has_vector: np.ndarray, subsample: float) -> torch.Tensor:
    """How much each word counts as a word to predict: 0 without a word vector (log sigma(0) whatever x is), else 1,
    or with ``subsample`` = t > 0 min(1, sqrt(t / p(w))), word2vec's probability of keeping w (Mikolov et al. 2013,
    eq. 5) as an expected weight rather than a random draw. Not in the paper: an option to test whether the
    frequent words' share of the targets is what stops f learning (reports/table6_trained/)."""
    weights = np.asarray(has_vector, dtype=np.float64)
    if subsample > 0:
        counts = np.asarray(counts, dtype=np.float64) * weights
        p = counts / counts.sum()
        weights = weights * np.minimum(1.0, np.sqrt(subsample / np.maximum(p, 1e-300)))
    return torch.from_numpy(weights).float()


def invertibility_update(decoder: torch.Tensor, beta: float) -> None:
    """In place: U <- (1 + beta) U - beta (U U^T) U. (U U^T) U = U (U^T U), so the product is taken in whichever
    order is cheaper; the paper's footnote (U^T U - I when U is tall) is the same update."""
    rows, cols = decoder.shape
    product = (decoder @ decoder.T) @ decoder if rows <= cols else decoder @ (decoder.T @ decoder)
    decoder.mul_(1.0 + beta).sub_(beta * product)


class GenerativeObjective(Objective):
    config_class = GenerativeConfig
    example_kind = ExampleKind.PAIR

    def __init__(self, config: GenerativeConfig, *, vocab, word_vectors):
        super().__init__()
        self.config = config
        vectors = frozen_word_vectors(word_vectors, len(vocab))
        has_vector = vectors.abs().sum(dim=1) > 0
        # constant buffers (rebuilt from vocab + vectors.npy, so not in checkpoints)
        self.register_buffer("word_vectors", vectors, persistent=False)
        # each target word's weight in the loss (0 for words without a vector, see target_weights)
        self.register_buffer("target_weight", target_weights(vocab.counts, has_vector.numpy(), config.target_subsample),
                             persistent=False)
        # inverse-CDF sampling (searchsorted on uniform draws): unlike torch.multinomial it never validates its
        # input on the host, so drawing negatives cannot force a GPU sync; float64 keeps rare words' mass exact
        noise = noise_distribution(vocab.counts, has_vector.numpy(), config.noise_power)
        self.register_buffer("noise_cdf", torch.cumsum(noise.to(torch.float64), 0), persistent=False)
        dim = vectors.shape[1]
        self.f = BiGRUView(dim, config.hidden_size)
        self.decoder = torch.nn.Parameter(he_normal_(torch.empty(dim, 2 * config.hidden_size)))

    def forward(self, batch: PairBatch) -> ObjectiveOutput:
        sentences = batch.sentences
        z = self.f.represent_words(sentences, self.word_vectors)                      # (B, 2h)
        # the decoder and the scores run in float32 under autocast: U is the matrix the invertibility update keeps
        # near-orthonormal, and the (B x T x K) dot products are cheap
        with torch.autocast(z.device.type, enabled=False):
            loss = self.negative_sampling_loss(z.float() @ self.decoder.T, batch.next)
        return ObjectiveOutput(loss, {"loss": loss.detach(), "invertibility_error": self.invertibility_error()})

    def negative_sampling_loss(self, x: torch.Tensor, targets: Sentences) -> torch.Tensor:
        """-mean over target words w of [log sigma(x . v_w) + sum_k log sigma(-x . v_wk)]; x is (B, word dim).

        The batch's target words are taken flat, without padding: word j (row-major over the sentences) scores
        against its sentence's x and draws negatives j*K .. j*K+K-1 (``sample_negatives``). A padded layout would
        draw and score K negatives at every padded position only to weight them by 0: on the novels at N = 512 a target
        sentence has 17.7 real words of its batch's padded 30, so 41 % of that work would be padding. Sizes come from
        the host lengths: no host sync."""
        negatives = self.config.negatives
        words = targets.num_tokens
        device = targets.ids.device
        sentence = torch.repeat_interleave(torch.arange(len(targets.lengths), device=device), targets.lengths,
                                           output_size=words)                                   # (W,)
        first_word = torch.cumsum(targets.lengths, 0) - targets.lengths
        ids = targets.ids[sentence, torch.arange(words, device=device) - first_word[sentence]]  # (W,)
        weight = self.target_weight[ids].to(x.dtype)
        # each word's own id, then its K negatives: one gather of the vectors (index_select: the same gather as
        # advanced indexing, faster on CPU) and one batched product for all 1 + K dot products with its sentence's x
        scored = torch.cat([ids[:, None], self.sample_negatives(words * negatives).view(words, negatives)], dim=1)
        vectors = self.word_vectors.index_select(0, scored.view(-1)).view(words, negatives + 1, -1).to(x.dtype)
        # x on the left, (W, 1, dim) @ (W, dim, 1 + K): MKL runs these row-vector products (forward and backward)
        # 2.5x faster than the same dot products as (W, 1 + K, dim) @ (W, dim, 1)
        scores = torch.bmm(x.index_select(0, sentence)[:, None, :], vectors.transpose(1, 2)).view(words, -1)
        log_likelihood = (torch.nn.functional.logsigmoid(scores[:, 0])
                          + torch.nn.functional.logsigmoid(-scores[:, 1:]).sum(-1))
        return -(log_likelihood * weight).sum() / weight.sum().clamp_min(1)

    def sample_negatives(self, count: int) -> torch.Tensor:
        """``count`` word ids drawn independently from unigram ** noise_power (global torch RNG, on device)."""
        uniform = torch.rand(count, dtype=torch.float64, device=self.noise_cdf.device) * self.noise_cdf[-1]
        # right=True: a word with zero mass has the same cdf as its predecessor and can never be returned
        return torch.searchsorted(self.noise_cdf, uniform, right=True).clamp_max(len(self.noise_cdf) - 1)

    @torch.no_grad()
    def invertibility_error(self) -> torch.Tensor:
        """||U U^T - I||_F (or U^T U when U is tall): 0 when U is row- (column-) orthonormal."""
        u = self.decoder.float()
        gram = u @ u.T if u.shape[0] <= u.shape[1] else u.T @ u
        return torch.linalg.matrix_norm(gram - torch.eye(gram.shape[0], device=gram.device))

    @torch.no_grad()
    def after_optimizer_step(self) -> None:
        if self.config.invertible:
            invertibility_update(self.decoder.data, self.config.beta)

    def sentence_encoder(self, tokenizer, vocab) -> SentenceEncoder:
        g = LinearView(self.decoder.shape[0], self.decoder.shape[1])
        g.linear.weight.data.copy_(self.decoder.detach().T)                          # W = U^T
        views = {"f": copy.deepcopy(self.f).cpu().eval(), "g": g.cpu().eval()}
        return SentenceEncoder(views, vocab, tokenizer, self.word_vectors.cpu(),
                               metadata={"objective": "gen", "settings": self.config.model_dump()})
