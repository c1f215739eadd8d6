"""Skip-thought training-step throughput (forward + backward + Adam step) on synthetic TRIPLE batches.

    PYTHONPATH=.dev python benchmarks/skipthought_step.py --size paper --encoder uni --steps 5
    PYTHONPATH=.dev python benchmarks/skipthought_step.py --size small --steps 50 --out benchmarks/results/x.json

``--size paper`` is the paper's model (620-d embeddings, 2400-d sentence vector, 20,000 words, batch 128);
``small`` a model a laptop trains in minutes. On CUDA the timed steps run under
``torch.cuda.set_sync_debug_mode("error")``, so a host-device sync inside the step fails the benchmark.
Writes one JSON record (also printed).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from skipview.models.batching import Sentences, TripleBatch
from skipview.models.registry import build_objective
from skipview.models.vocab import SPECIALS, Vocab

SIZES = {
    "paper": {"vocab_size": 20_000, "embedding_dim": 620, "hidden_size": 2400, "batch_size": 128},
    "small": {"vocab_size": 5_000, "embedding_dim": 128, "hidden_size": 256, "batch_size": 64},
}


def synthetic_batch(batch_size: int, num_words: int, generator: torch.Generator, mean_length: int) -> TripleBatch:
    """Length-bucketed like the real batcher: lengths within +-2 of the bucket's, ids uniform over the vocabulary."""
    def sentences():
        lengths = (mean_length + torch.randint(-2, 3, (batch_size,), generator=generator)).clamp(min=1)
        ids = torch.randint(len(SPECIALS), num_words, (batch_size, int(lengths.max())), generator=generator)
        ids[torch.arange(ids.shape[1])[None, :] >= lengths[:, None]] = 0
        return Sentences(ids, lengths, lengths)
    return TripleBatch(sentences(), sentences(), sentences())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=SIZES, default="small")
    parser.add_argument("--encoder", choices=["uni", "bi"], default="uni")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--mean-length", type=int, default=13, help="BookCorpus mean sentence length (paper table 1)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/skipthought_step.json"))
    args = parser.parse_args()

    size = SIZES[args.size]
    words = [f"w{i}" for i in range(size["vocab_size"])]
    vocab = Vocab(list(SPECIALS) + words, [0] * len(SPECIALS) + [1] * len(words))
    settings = {k: v for k, v in size.items() if k != "batch_size"} | {"encoder": args.encoder}
    objective = build_objective("skipthought", settings, vocab=vocab, word_vectors=None).to(args.device)
    optimiser = torch.optim.Adam(objective.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    batches = [synthetic_batch(size["batch_size"], len(vocab), generator, args.mean_length).to(args.device)
               for _ in range(min(args.steps, 8))]

    def step(batch):
        out = objective(batch)
        optimiser.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(objective.parameters(), 10.0, foreach=True)
        optimiser.step()
        return out

    for i in range(args.warmup):
        step(batches[i % len(batches)])
    cuda = args.device.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
    start = time.perf_counter()
    for i in range(args.steps):
        out = step(batches[i % len(batches)])
    if cuda:
        torch.cuda.set_sync_debug_mode("default")
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / args.steps
    record = {
        "benchmark": "skipthought_step", "size": args.size, "encoder": args.encoder, "device": args.device,
        "device_name": torch.cuda.get_device_name() if cuda else platform.processor() or platform.machine(),
        "torch_threads": torch.get_num_threads(), "batch_size": size["batch_size"], "mean_length": args.mean_length,
        "parameters": sum(p.numel() for p in objective.parameters()),
        "seconds_per_step": seconds, "examples_per_second": size["batch_size"] / seconds,
        "final_loss": float(out.loss.detach()), "steps": args.steps,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2))
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
