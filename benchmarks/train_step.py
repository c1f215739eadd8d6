"""Training-step throughput of every registered objective: forward + backward + Adam step + after_optimizer_step.

    python benchmarks/train_step.py                                      # every objective, small size, CPU
    python benchmarks/train_step.py --sizes small paper --steps 3 --out results.json
    python benchmarks/train_step.py --objectives disc --sizes paper --device cuda --amp bf16
    python benchmarks/train_step.py --objectives disc --in-ray-train     # the same step where `skipview train` runs it

Sizes: ``paper`` is each paper's model (multi-view: h = 1024 per direction, N = 512, 300-d word vectors;
skip-thought: 2400-d sentence vector, 620-d embeddings, 20k words, batch 128); ``small`` a configuration this
2-core machine trains (multi-view: h = 256, N = 128; skip-thought: 256 / 128 / 5k words, batch 64). Objectives
come from the registry, so a newly registered objective is measured with its config defaults (the paper's) at
batch 128 until it is given sizes here.

Batches come from the real batcher over a synthetic prepared corpus written to a temporary directory (Zipf word
frequencies, BookCorpus-like sentence lengths: mean ~13 tokens, cap 30), so padding and bucketing are realistic.
Each (objective, size) runs in a fresh subprocess so its peak memory is its own: CPU peak resident set size, GPU
peak allocated memory. On CUDA the timed steps run with ``torch.cuda.set_sync_debug_mode("warn")`` and the
number of host-device synchronisations inside the step is reported (the hot path should have none).
Writes one JSON document (also printed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from emit import emit
from skipview.models import registry
from skipview.models.batching import iterate_batches
from skipview.models.corpus import PreparedCorpus
from skipview.models.text import Tokenizer
from skipview.models.vocab import SPECIALS
from skipview.platform.training.config import parse_overrides
from skipview.platform.training.objectives import load_word_vectors

WORD_DIM = 300
CORPUS_WORDS = 50_000
DEFAULT_BATCH = 128
SIZES: dict[str, dict[str, tuple[dict, int]]] = {            # objective -> size -> (settings, batch size)
    "disc": {"paper": ({"hidden_size": 1024}, 512), "small": ({"hidden_size": 256}, 128)},
    "gen": {"paper": ({"hidden_size": 1024}, 512), "small": ({"hidden_size": 256}, 128)},
    "skipthought": {"paper": ({"vocab_size": 20_000, "embedding_dim": 620, "hidden_size": 2400}, 128),
                    "small": ({"vocab_size": 5_000, "embedding_dim": 128, "hidden_size": 256}, 64)},
}


def write_synthetic_corpus(path: Path, num_sentences: int, seed: int = 0) -> PreparedCorpus:
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, CORPUS_WORDS + 1)
    probabilities = (1.0 / ranks) / (1.0 / ranks).sum()                                  # Zipf
    lengths = np.clip(np.round(rng.lognormal(mean=2.45, sigma=0.55, size=num_sentences)), 1, 60).astype(np.int64)
    tokens = (len(SPECIALS) + rng.choice(CORPUS_WORDS, size=int(lengths.sum()), p=probabilities)).astype(np.uint32)
    tokens.tofile(path / "tokens.bin")
    np.save(path / "offsets.npy", np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
    doc_starts = np.concatenate([[0], np.cumsum(rng.integers(20, 200, size=num_sentences // 20 + 1))])
    np.save(path / "doc_index.npy", doc_starts[doc_starts < num_sentences].astype(np.int64))
    counts = np.bincount(tokens, minlength=len(SPECIALS) + CORPUS_WORDS)
    with open(path / "vocab.tsv", "w") as f:
        for i, word in enumerate(list(SPECIALS) + [f"w{k}" for k in range(CORPUS_WORDS)]):
            f.write(f"{word}\t{int(counts[i]) if i >= len(SPECIALS) else 0}\n")
    (path / "meta.json").write_text(json.dumps({"tokenizer": Tokenizer().to_dict(), "synthetic": True}))
    return PreparedCorpus(path)


def measure(objective_name: str, size: str, steps: int, warmup: int, device: str, amp: str,
            overrides: dict | None = None, build=registry.build_objective, corpus_dir: str | None = None,
            wordvecs: str | None = None, batch_size: int | None = None, profile: str | None = None) -> dict:
    """Time ``steps`` training steps of ``build(objective_name, settings, vocab=, word_vectors=)``: a module
    with ``example_kind``, ``forward(batch) -> .loss`` and ``after_optimizer_step()`` (an ``Objective``).
    ``corpus_dir``: a prepared corpus instead of the synthetic one (its sentence lengths, so the figure can be
    set beside ``skipview train`` on that corpus); ``wordvecs``: its word vectors, else random ones; ``profile``: a
    file for the torch profiler's operator table of five more steps, taken after the timed ones (the profiler
    slows what it watches, so it never runs during them)."""
    settings, size_batch = SIZES.get(objective_name, {}).get(size, ({}, DEFAULT_BATCH))
    batch_size = batch_size or size_batch
    settings = {**settings, **(overrides or {})}
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = (PreparedCorpus(corpus_dir) if corpus_dir else
                  write_synthetic_corpus(Path(tmp), num_sentences=max(20_000, 3 * batch_size * (steps + warmup))))
        word_vectors = (load_word_vectors(wordvecs, corpus.vocab) if wordvecs else
                        np.random.default_rng(1).standard_normal((len(corpus.vocab), WORD_DIM)).astype(np.float32))
        objective = build(objective_name, settings, vocab=corpus.vocab, word_vectors=word_vectors).to(device)
        del word_vectors
        optimiser = torch.optim.Adam([p for p in objective.parameters() if p.requires_grad], lr=5e-4)
        batches = iterate_batches(corpus, objective.example_kind, batch_size, max_len=30)
        batches = [next(batches).to(device) for _ in range(steps + warmup)]
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(amp)
    scaler = torch.amp.GradScaler(device, enabled=amp == "fp16")
    cuda = device.startswith("cuda")

    def step(batch) -> None:
        with torch.autocast(device_type=torch.device(device).type, dtype=dtype, enabled=dtype is not None):
            output = objective(batch)
        optimiser.zero_grad(set_to_none=True)
        scaler.scale(output.loss).backward()
        scaler.step(optimiser)
        scaler.update()
        objective.after_optimizer_step()

    for batch in batches[:warmup]:
        step(batch)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.set_sync_debug_mode("warn")
    timings = []
    # the process's CPU seconds over the timed steps beside their wall seconds: on a shared machine the wall figure
    # of one process moves with the other processes' load (3x between runs under two trainings), its CPU far less
    cpu_start = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for batch in batches[warmup:]:
            start = time.perf_counter()
            step(batch)
            if cuda:
                torch.cuda.set_sync_debug_mode("default")
                torch.cuda.synchronize()
                torch.cuda.set_sync_debug_mode("warn")
            timings.append(time.perf_counter() - start)
    cpu_seconds = time.process_time() - cpu_start
    if cuda:
        torch.cuda.set_sync_debug_mode("default")
    if profile:
        write_profile(step, batches[warmup:warmup + 5], device, profile)
    timed = batches[warmup:]
    sentences = sum(b.num_sentences for b in timed)
    tokens = sum(b.num_tokens for b in timed)
    record = {
        "objective": objective_name, "size": size, "settings": settings, "batch_size": batch_size,
        "example_kind": objective.example_kind.value, "device": device, "amp": amp, "steps": steps,
        "parameters": sum(p.numel() for p in objective.parameters() if p.requires_grad),
        "step_seconds_median": float(np.median(timings)),
        "sentences_per_second": sentences / sum(timings), "tokens_per_second": tokens / sum(timings),
        "sentences_per_cpu_second": sentences / cpu_seconds,
    }
    if cuda:
        record["peak_gpu_memory_gib"] = torch.cuda.max_memory_allocated() / 2 ** 30
        record["host_syncs_in_timed_steps"] = sum("synchroniz" in str(w.message) for w in caught)
    record["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    # on a shared machine the figures move with the load: keep it beside them
    record["load_average_after"] = os.getloadavg()
    return record


def write_profile(step, batches: list, device: str, path: str) -> None:
    """The operator tables (self time, most first; device and host) of ``step`` over ``batches``: where the
    step's time goes."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profiler:
        for batch in batches:
            step(batch)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    table = profiler.key_averages().table
    sections = [f"host time, most first\n{table(sort_by='self_cpu_time_total', row_limit=30)}"]
    if device.startswith("cuda"):     # a step the host cannot feed leaves the device idle: both sides are needed
        sections.insert(0, f"device time, most first\n{table(sort_by='self_cuda_time_total', row_limit=30)}")
    Path(path).write_text("\n\n".join(sections))


def other_processes_cpu_seconds() -> float:
    """User + system CPU seconds so far of every process on the machine but this one (a process that ends between
    two reads takes its seconds with it: read over a window in which Ray's processes live throughout)."""
    import psutil

    total = 0.0
    for process in psutil.process_iter():
        if process.pid == os.getpid():
            continue
        try:
            times = process.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        total += times.user + times.system
    return total


def measure_in_ray_train(threads: int, **kwargs) -> dict:
    """``measure`` run as the training function of a one-worker Ray Train job on a local Ray, the worker holding
    ``threads`` CPUs and torch threads as ``skipview train`` sets them: the same step, with the processes and the
    worker niceness (``RAY_worker_niceness``, 15 by default) of the environment the training loop runs in. Beside
    plain ``measure``, it tells what Ray's presence costs a step apart from what the loop's own work costs."""
    import ray
    import ray.train
    from ray.train.torch import TorchTrainer

    from skipview.platform.training import driver

    driver.connect("local", log_to_driver=False)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "record.json"

        def run(config: dict) -> None:
            torch.set_num_threads(threads)
            others, start = other_processes_cpu_seconds(), time.perf_counter()
            record = measure(**config)
            # what the rest of the machine (Ray's own processes, on an otherwise idle one) used meanwhile, in cores
            others_cores = (other_processes_cpu_seconds() - others) / (time.perf_counter() - start)
            out.write_text(json.dumps({**record, "in_ray_train": True, "worker_niceness": os.nice(0),
                                       "other_processes_cores": others_cores}))

        TorchTrainer(run, train_loop_config=kwargs,
                     scaling_config=ray.train.ScalingConfig(num_workers=1, resources_per_worker={"CPU": threads}),
                     run_config=ray.train.RunConfig(name="step-in-ray-train", storage_path=tmp)).fit()
        ray.shutdown()
        return json.loads(out.read_text())


def main(benchmark: str = "train_step", build=registry.build_objective, objectives: list[str] | None = None,
         description: str = __doc__, script: str = __file__) -> None:
    """The command line of this benchmark and of ``plain_step.py`` (which passes its own ``build``, objectives,
    docstring and script: each configuration runs ``script --single ...`` in a fresh subprocess)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objectives", nargs="+", default=None,
                        help=f"default: {' '.join(objectives) if objectives else 'every registered objective'}")
    parser.add_argument("--sizes", nargs="+", choices=["small", "paper"], default=["small"])
    parser.add_argument("--steps", type=int, default=10, help="timed steps per configuration")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--amp", choices=["none", "bf16", "fp16"], default=None,
                        help="autocast dtype (default: bf16 on CUDA, none on CPU)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="objective settings on top of the size's, e.g. reset_gate=fused (skipthought)")
    parser.add_argument("--batch-size", type=int, default=None, help="instead of the size's batch size")
    parser.add_argument("--corpus", default=None, help="a prepared corpus instead of the synthetic one")
    parser.add_argument("--wordvecs", default=None, help="with --corpus: its word vectors (default: random)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    parser.add_argument("--in-ray-train", action="store_true",
                        help="time the step inside a one-worker Ray Train job (local Ray) holding this process's "
                             "torch threads as CPUs, as `skipview train` runs it")
    parser.add_argument("--profile", default=None, metavar="FILE",
                        help="write the torch profiler's operator table of five steps after the timed ones here "
                             "(one objective and size)")
    parser.add_argument("--single", nargs=2, metavar=("OBJECTIVE", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    amp = args.amp or ("bf16" if args.device.startswith("cuda") else "none")
    overrides = dict(parse_overrides(args.set))
    if args.single:
        name, size = args.single
        # absolute paths: a Ray worker runs in a directory of its own
        kwargs = dict(objective_name=name, size=size, steps=args.steps, warmup=args.warmup, device=args.device, amp=amp,
                      overrides=overrides, build=build, corpus_dir=args.corpus and os.path.abspath(args.corpus),
                      wordvecs=args.wordvecs and os.path.abspath(args.wordvecs), batch_size=args.batch_size,
                      profile=args.profile and os.path.abspath(args.profile))
        record = (measure_in_ray_train(torch.get_num_threads(), **kwargs) if args.in_ray_train else measure(**kwargs))
        print(json.dumps(record))
        return

    objectives = args.objectives or objectives or registry.objective_names()
    results = []
    for name in objectives:
        for size in args.sizes:
            command = [sys.executable, script, "--single", name, size, "--steps", str(args.steps),
                       "--warmup", str(args.warmup), "--device", args.device, "--amp", amp, "--set", *args.set,
                       *(["--batch-size", str(args.batch_size)] if args.batch_size else []),
                       *(["--profile", args.profile] if args.profile else []),
                       *(["--in-ray-train"] if args.in_ray_train else []),
                       *(["--corpus", args.corpus] if args.corpus else []),
                       *(["--wordvecs", args.wordvecs] if args.wordvecs else [])]
            done = subprocess.run(command, capture_output=True, text=True, env=os.environ)
            if done.returncode != 0:
                results.append({"objective": name, "size": size, "error": done.stderr.strip()[-2000:]})
            else:
                results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps(results[-1]), file=sys.stderr)
    document = {
        "benchmark": benchmark, "corpus": args.corpus or "synthetic", "machine": platform.platform(), "processor": platform.processor(),
        "cpu_threads": torch.get_num_threads(), "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name() if args.device.startswith("cuda") else None,
        "results": results,
    }
    emit(document, args.out)


if __name__ == "__main__":
    main()
