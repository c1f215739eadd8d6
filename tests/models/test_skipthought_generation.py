"""Generation from the next-sentence decoder: greedy is deterministic and matches a brute-force argmax;
sampling is reproducible under a seed and follows the model's distribution."""

import torch

from skipview.models.skipthought.config import SkipThoughtConfig
from skipview.models.skipthought.generation import generate, write_passage
from skipview.models.skipthought.network import SkipThoughtNetwork
from skipview.models.text import Tokenizer
from skipview.models.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "."]


def _network(seed=0) -> SkipThoughtNetwork:
    torch.manual_seed(seed)
    config = SkipThoughtConfig(vocab_size=len(WORDS), embedding_dim=6, hidden_size=8, decoder_hidden_size=10,
                               max_generation_length=12)
    network = SkipThoughtNetwork(config, len(WORDS) + 4)
    with torch.no_grad():   # sharpen the output layer so greedy paths are not decided by rounding
        network.vocabulary_projection.weight.mul_(30)
    return network.eval()


def test_greedy_decoding_is_deterministic_and_is_the_stepwise_argmax():
    network = _network()
    context = torch.randn(3, 8, generator=torch.Generator().manual_seed(1))
    first = generate(network, context, max_length=12)
    assert first == generate(network, context, max_length=12)
    with torch.no_grad():
        for b, sentence in enumerate(first):
            assert 1 <= len(sentence) <= 12
            previous, state, expected = BOS_ID, None, []
            for step in range(12):
                logits, state = network.next_token_logits(network.next_decoder, context[b : b + 1],
                                                          torch.tensor([previous]), state)
                logits[0, [PAD_ID, BOS_ID] + ([EOS_ID] if step == 0 else [])] = float("-inf")
                previous = int(logits[0].argmax())
                if previous == EOS_ID:
                    break
                expected.append(previous)
            assert sentence == expected
    # the previous-sentence decoder has its own parameters, so it writes something else
    assert generate(network, context, max_length=12, direction="previous") != first


def test_seeded_sampling_is_reproducible_and_seeds_differ():
    network = _network()
    context = torch.randn(4, 8, generator=torch.Generator().manual_seed(2))

    def sample(seed):
        return generate(network, context, max_length=12, greedy=False,
                        generator=torch.Generator().manual_seed(seed))

    assert sample(7) == sample(7)
    assert sample(7) != sample(8)


def test_sampled_first_words_follow_the_model_distribution():
    """Frequencies of the first sampled word over 4,000 draws match the softmax (pad/bos/eos excluded)."""
    network = _network()
    context = torch.randn(1, 8, generator=torch.Generator().manual_seed(3)).expand(4000, -1)
    with torch.no_grad():
        network.vocabulary_projection.weight.div_(30)   # a flat-ish distribution: many words get mass
        logits, _ = network.next_token_logits(network.next_decoder, context[:1],
                                              torch.tensor([BOS_ID]), None)
        logits[0, [PAD_ID, BOS_ID, EOS_ID]] = float("-inf")
        expected = torch.softmax(logits[0], dim=-1)
    first_words = [s[0] for s in generate(network, context, max_length=1, greedy=False,
                                          generator=torch.Generator().manual_seed(4))]
    observed = torch.bincount(torch.tensor(first_words), minlength=expected.numel()).double() / 4000
    assert (observed - expected).abs().max() < 0.03   # ~4 standard errors at p = 0.5


def test_passage_chains_sentences_and_is_reproducible():
    network = _network()
    vocab = Vocab.from_counts({w: 100 - i for i, w in enumerate(WORDS)})
    tokenizer = Tokenizer()
    greedy = write_passage(network, vocab, tokenizer, "The cat sat on the mat.", 3)
    assert greedy == write_passage(network, vocab, tokenizer, "The cat sat on the mat.", 3)
    sampled = write_passage(network, vocab, tokenizer, "The cat sat.", 4, greedy=False, seed=11)
    assert sampled == write_passage(network, vocab, tokenizer, "The cat sat.", 4, greedy=False, seed=11)
    assert len(greedy) == 3 and len(sampled) == 4
    for sentence in greedy + sampled:
        assert sentence and all(word in vocab for word in sentence.split())
        assert "<pad>" not in sentence and "<bos>" not in sentence
