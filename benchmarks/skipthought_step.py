"""Where a skip-thought CPU training step's time goes, and its FLOPs against the core's peak.

    OMP_NUM_THREADS=1 python benchmarks/skipthought_step.py --corpus data/gutenberg_novels/prepared \\
        --set reset_gate=fused --batch-size 128 --out step.json

The model is train_step.py's ``small`` skip-thought (h 256, 128-d embeddings, 5,000 words) on real batches of a
prepared corpus. Each part is timed alone, forward and backward, on the same batches (median over them): the
encoder, the two decoders' recurrences, the vocabulary projection with its cross-entropy (both decoders), and
Adam's update; then the whole step (forward, backward, Adam), whose remainder over the parts is the glue between
them (embedding lookups, packing, the autograd graph's own work). Every part's matrix-product FLOPs (forward and
backward, counted by ``torch.utils.flop_counter``) are set against the core's peak, measured as the best rate of a
large fp32 matrix product on one thread: what is left to gain in a part is its distance from that rate.
Writes one JSON document (also printed).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from emit import emit
from skipview.models import registry
from skipview.models.batching import iterate_batches
from skipview.models.corpus import PreparedCorpus
from skipview.platform.tracking.lineage import cpu
from skipview.platform.training.config import parse_overrides
from train_step import SIZES

PEAK_SIZE = 2048         # a square fp32 product this large runs at the core's best rate
WHOLE, SENTENCE_NLL = "whole step", "decoders + vocabulary (sentence_nll)"
VOCABULARY = "vocabulary projection + cross-entropy (sentence_nll less the recurrences)"


def _addmm_in_place(*args, **kwargs):
    """``addmm_``'s FLOPs, which ``FlopCounterMode`` does not count by itself (the chunked loss accumulates the
    weight's gradient with it): those of ``addmm``."""
    return flop_registry[torch.ops.aten.addmm](*args, **kwargs)


_addmm_in_place._get_raw = True      # takes the operator's own arguments, as the registry's entries do


def core_peak_gflops() -> float:
    a, b = torch.randn(PEAK_SIZE, PEAK_SIZE), torch.randn(PEAK_SIZE, PEAK_SIZE)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * PEAK_SIZE ** 3 / best / 1e9


def parts(objective, optimiser, batch):
    """The step's parts as callables, each running its forward and backward from detached inputs. The decoders'
    own inputs (the previous words, which teacher forcing builds) are caught by a hook during ``sentence_nll``; the
    vocabulary's part is ``sentence_nll`` less its decoder."""
    network = objective.network
    current = batch.sentences
    word_vectors = network.embedding.weight.detach().requires_grad_()
    ids = network.clip_ids(current.ids)
    context = network.encode(current.ids, current.lengths_cpu).detach().requires_grad_()
    targets = ((network.next_decoder, batch.next), (network.previous_decoder, batch.previous))
    caught = []
    hooks = [decoder.register_forward_hook(lambda module, args, out: caught.append((module, args)))
             for decoder, _ in targets]
    with torch.no_grad():
        for decoder, target in targets:
            network.sentence_nll(decoder, context, target.ids, target.lengths_cpu)
    for hook in hooks:
        hook.remove()
    decoder_inputs = [(decoder, (word_vectors, ids, context, steps)) for decoder, (_, ids, _, steps) in caught]

    def encoder():
        out = network.encoder(word_vectors, ids, current.lengths_cpu)
        out.backward(torch.ones_like(out))

    def recurrences():
        for decoder, args in decoder_inputs:
            out = decoder(*args).data
            out.backward(torch.ones_like(out))

    def decoders_with_vocabulary():
        for decoder, target in targets:
            network.sentence_nll(decoder, context, target.ids, target.lengths_cpu).backward()

    def adam():
        optimiser.step()

    def whole():
        loss = objective(batch).loss
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()

    return {"encoder": encoder, "decoders' recurrences": recurrences, SENTENCE_NLL: decoders_with_vocabulary,
            "Adam": adam, WHOLE: whole}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True, help="a prepared corpus")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--batches", type=int, default=8, help="timed batches (each part: the median over them)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    settings = {**SIZES["skipthought"]["small"][0], **dict(parse_overrides(args.set))}
    torch.manual_seed(0)
    corpus = PreparedCorpus(args.corpus)
    objective = registry.build_objective("skipthought", settings, vocab=corpus.vocab, word_vectors=None)
    optimiser = torch.optim.Adam(objective.parameters(), lr=5e-4)
    stream = iterate_batches(corpus, objective.example_kind, args.batch_size, max_len=30)
    batches = [next(stream) for _ in range(args.batches + 1)]
    objective(batches[0]).loss.backward()           # warm-up; also gives Adam its state
    optimiser.step()

    seconds: dict[str, list[float]] = {}
    flops: dict[str, list[int]] = {}
    for batch in batches[1:]:
        for name, run in parts(objective, optimiser, batch).items():
            with FlopCounterMode(display=False, custom_mapping={torch.ops.aten.addmm_: _addmm_in_place}) as counter:
                run()                               # also this part's warm-up on this batch
            flops.setdefault(name, []).append(counter.get_total_flops())
            start = time.perf_counter()
            run()
            seconds.setdefault(name, []).append(time.perf_counter() - start)

    peak = core_peak_gflops()
    whole = statistics.median(seconds[WHOLE]) * 1e3

    def row(ms: float, gflop: float | None = None) -> dict:
        figures = {"ms": round(ms, 1), "share_of_step": round(ms / whole, 3)}
        if gflop is not None:
            figures.update(gflop=round(gflop, 2), gflop_per_s=round(gflop / ms * 1e3, 1),
                           fraction_of_peak=round(gflop / ms * 1e3 / peak, 3))
        return figures

    measured = {name: (statistics.median(seconds[name]) * 1e3, statistics.median(flops[name]) / 1e9)
                for name in seconds}
    breakdown = {name: row(*measured[name]) for name in ("encoder", "decoders' recurrences")}
    breakdown[VOCABULARY] = row(*(a - b for a, b in zip(measured[SENTENCE_NLL], measured["decoders' recurrences"])))
    breakdown["Adam"] = row(*measured["Adam"])
    rest = whole - sum(part["ms"] for part in breakdown.values())
    breakdown["rest (embedding lookups, packing, the objective's glue)"] = row(rest)
    breakdown[WHOLE] = row(*measured[WHOLE])
    model, native_bf16 = cpu()
    step_gflop = breakdown[WHOLE]["gflop"]
    emit({
        "benchmark": "skipthought CPU step breakdown", "corpus": args.corpus, "settings": settings,
        "batch_size": args.batch_size, "batches": args.batches, "threads": torch.get_num_threads(),
        "cpu": model, "native_bf16": native_bf16, "torch": torch.__version__,
        "core_peak_fp32_gflop_per_s": round(peak, 1),
        "sentences_per_second": round(args.batch_size / whole * 1e3, 1),
        "step_at_peak_ms": round(step_gflop / peak * 1e3, 1),
        "parts": breakdown,
    }, args.out)


if __name__ == "__main__":
    main()
