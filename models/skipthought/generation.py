"""Writing text with a trained skip-thought model: decode the sentence after (or before) an encoded sentence,
greedily or by sampling, and chain that into a passage (encode what was written, write the next one).

Generation is stepwise by nature (each word is the next step's input), so this is the one place with a loop
over time steps; it runs under ``torch.no_grad`` and never touches training.
"""

from __future__ import annotations

from typing import Literal

import torch

from skipview.models.skipthought.network import SkipThoughtNetwork
from skipview.models.text import Tokenizer
from skipview.models.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab


@torch.no_grad()
def generate(network: SkipThoughtNetwork, context: torch.Tensor, *, max_length: int,
             direction: Literal["next", "previous"] = "next", greedy: bool = True, temperature: float = 1.0,
             generator: torch.Generator | None = None) -> list[list[int]]:
    """Word ids of one sentence per row of ``context`` [B, hidden] (sentence vectors), without ``<eos>``.

    Greedy decoding takes the most probable word at each step (deterministic); otherwise words are sampled
    from the softmax at ``temperature`` with ``generator`` (seed it for reproducible samples). ``<pad>`` and
    ``<bos>`` are never emitted, and ``<eos>`` not as the first word, so every sentence has at least one word
    and can be encoded in turn."""
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    decoder = network.next_decoder if direction == "next" else network.previous_decoder
    batch = context.shape[0]
    previous = torch.full((batch,), BOS_ID, dtype=torch.long, device=context.device)
    finished = torch.zeros(batch, dtype=torch.bool, device=context.device)
    state, words = None, []
    for step in range(max_length):
        logits, state = network.next_token_logits(decoder, context, previous, state)
        banned = [PAD_ID, BOS_ID] + ([EOS_ID] if step == 0 else [])
        logits[:, banned] = float("-inf")
        if greedy:
            previous = logits.argmax(dim=-1)
        else:
            probabilities = torch.softmax(logits / temperature, dim=-1)
            previous = torch.multinomial(probabilities, 1, generator=generator).squeeze(1)
        previous = previous.masked_fill(finished, EOS_ID)
        words.append(previous)
        finished |= previous == EOS_ID
        if bool(finished.all()):
            break
    sentences = []
    for row in torch.stack(words, dim=1).tolist():
        sentences.append(row[: row.index(EOS_ID)] if EOS_ID in row else row)
    return sentences


@torch.no_grad()
def write_passage(network: SkipThoughtNetwork, vocab: Vocab, tokenizer: Tokenizer, first_sentence: str,
                  num_sentences: int, *, greedy: bool = True, temperature: float = 1.0, seed: int | None = None,
                  max_length: int | None = None) -> list[str]:
    """Starting from ``first_sentence``, write ``num_sentences`` more, each the decoded next sentence of the
    previous one. Same ``seed`` (sampling) or greedy decoding -> same passage."""
    tokens = tokenizer(first_sentence)
    if not tokens:
        raise ValueError(f"the first sentence has no tokens: {first_sentence!r}")
    network.eval()
    device = network.embedding.weight.device
    generator = None if seed is None else torch.Generator(device=device).manual_seed(seed)
    ids = vocab.encode(tokens)
    passage = []
    for _ in range(num_sentences):
        context = network.encode(torch.tensor([ids], device=device), torch.tensor([len(ids)]))
        ids = generate(network, context, max_length=max_length or network.config.max_generation_length,
                       greedy=greedy, temperature=temperature, generator=generator)[0]
        passage.append(" ".join(vocab.decode(ids)))
    return passage
