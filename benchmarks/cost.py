"""What the papers' training runs would cost on GPUs: hours and GPU-hours on 1, 8 and 64 GPUs, from measured figures.

    python benchmarks/cost.py                                  # the committed measurements; prints the JSON
    python benchmarks/cost.py --out reports/benchmarks/cost.json --markdown reports/benchmarks/cost.md

Nothing measured is typed in here: every rate is read from the files named below when the script runs, so a new
GPU measurement (`reports/benchmarks/gpu_*.json`, the rows `gpu.md` tabulates), a new DDP measurement or a new data
path curve (`scale.json`) changes the table on the next run. What is typed in is what the papers state (corpus
sizes, batch sizes, their reported hours; `PAPERS`) and the assumptions, each a named option written beside the
number it moves in both outputs.

- Step rate per GPU: every `skipview` training-step row of `--gpu-glob` at the paper's size and batch, without host
  syncs (the current code; the plain-PyTorch yardstick and the skip-thought rows before its sync fix are left out),
  the slowest of each precision's measurements, and the faster precision of the two.
- Sentence length: the step's cost is taken as proportional to tokens (a corpus of longer sentences trains fewer
  sentences a second); the synthetic benchmark corpus's mean length is read from the same rows.
- DDP: the only measured figures are CPU ones (`--ddp-cpu`); for 8 and 64 GPUs the gradient all-reduce is modelled
  from the measured parameter count and assumed bus bandwidths, without overlap with the backward pass.
- Data path: `--scale` (the BookCorpus-scale curve) when it exists, otherwise the committed prepare and fastText
  timings; start-up, checkpoints and evaluation from the end-to-end profile (`--profile`), CPU figures standing in.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import platform
import shlex
import statistics
import sys
from pathlib import Path

import yaml
from emit import emit

REPORTS = Path(__file__).resolve().parent.parent / "reports"

# What the papers state (shared/papers/*.txt). Hours are on one GPU: a GTX 1080Ti for the multi-view models
# (appendix 3: "up to 8GB on a GTX 1080Ti"), unnamed for skip-thought.
PAPERS = {
    "corpora": {   # multi-view Table 1 (BookCorpus also skip-thought Table 1: 74,004,228 sentences, 984,846,357 words)
        "bookcorpus": {"sentences": 74_004_228, "mean_words": 13},
        "umbc_news": {"sentences": 134_500_000, "mean_words": 25},
    },
    "max_len": 30,       # skipview caps training sentences at 30 tokens (ARCHITECTURE.md section 3)
    "models": {
        # multi-view appendix 3: N = 512, d = 1024; Table 5 "Hrs": G1 3.5, G2 9, D1 3, D2 8.5 (1 BookCorpus, 2 UMBC)
        "disc": {"objective": "disc", "batch": 512, "settings": {"hidden_size": 1024},
                 "paper_hours": {"bookcorpus": 3.0, "umbc_news": 8.5},
                 "paper_gpu": "GTX 1080Ti", "source": "multi-view Table 5, appendix 3"},
        "gen": {"objective": "gen", "batch": 512, "settings": {"hidden_size": 1024},
                "paper_hours": {"bookcorpus": 3.5, "umbc_news": 9.0},
                 "paper_gpu": "GTX 1080Ti", "source": "multi-view Table 5, appendix 3"},
        # skip-thought section 3.1: batch 128, 2400-d, 620-d embeddings, 20k words, "roughly two weeks" each
        # (336 h in multi-view Table 5); trained on BookCorpus only
        "uni-skip": {"objective": "skipthought", "batch": 128,
                     "settings": {"vocab_size": 20_000, "embedding_dim": 620, "hidden_size": 2400},
                     "paper_hours": {"bookcorpus": 336.0},
                 "paper_gpu": "not named", "source": "skip-thought section 3.1"},
        "bi-skip": {"objective": "skipthought", "batch": 128, "measured_as": "uni-skip",
                    "settings": {"vocab_size": 20_000, "embedding_dim": 620, "hidden_size": 2400, "encoder": "bi"},
                    "paper_hours": {"bookcorpus": 336.0},
                 "paper_gpu": "not named", "source": "skip-thought section 3.1"},
    },
}
SENTENCES_PER_EXAMPLE = {"window": 1, "pair": 2, "triple": 3}   # how train_step counts an example's tokens
PRECISION = {"none": "fp32", "bf16": "bf16 autocast", "fp16": "fp16 autocast"}
GPU_LAYOUTS = {1: "one GPU", 8: "one node of 8 GPUs (NVLink)", 64: "8 nodes of 8 GPUs"}


def load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise SystemExit(f"error: {path}: {error}")


def step_rates(pattern: str) -> list[dict]:
    """Every skipview training-step row of the GPU measurements, each with the file it came from."""
    rows = []
    for name in sorted(glob.glob(pattern)):
        document = load(Path(name))
        if document.get("benchmark") == "plain_step":
            continue                                    # the plain-PyTorch yardstick, not skipview's step
        for row in document.get("results", []):
            if row.get("device") == "cuda" and not row.get("label", "skipview").startswith("plain"):
                rows.append({**row, "file": Path(name).name, "gpu": document.get("gpu")})
    return rows


def paper_rate(rows: list[dict], model: dict) -> dict:
    """The rate one GPU trains the paper's model at: the slowest measurement of each precision, the faster
    precision. Rows with host syncs inside the step measured code that has since been made sync-free."""
    wanted = model["settings"]
    matching = [r for r in rows if r["objective"] == model["objective"] and r["batch_size"] == model["batch"]
                and r["settings"] == wanted and r.get("host_syncs_in_timed_steps", 0) == 0]
    if not matching:
        raise SystemExit(f"error: no GPU step measurement of {model['objective']} at {wanted}, batch "
                         f"{model['batch']}, without host syncs")
    by_amp: dict[str, list[dict]] = {}
    for row in matching:
        by_amp.setdefault(row["amp"], []).append(row)
    slowest = {amp: min(group, key=lambda r: r["sentences_per_second"]) for amp, group in by_amp.items()}
    amp, row = max(slowest.items(), key=lambda item: item[1]["sentences_per_second"])
    kind = SENTENCES_PER_EXAMPLE[row["example_kind"]]
    return {"sentences_per_s": row["sentences_per_second"], "precision": amp, "gpu": row["gpu"],
            "step_s": row["step_seconds_median"], "parameters": row["parameters"],
            "synthetic_mean_tokens": row["tokens_per_second"] / row["sentences_per_second"] / kind,
            "measurements": sorted(f"{PRECISION[r['amp']]} {r['sentences_per_second']:,.0f} ({r['file']})"
                                   for r in matching)}


def ddp_cpu(path: Path) -> dict:
    """Two DDP workers of one thread against one worker of one thread (the same per-worker batch): the only DDP
    efficiency measured here, on CPUs."""
    document = load(path)
    rate = {(r["workers"], r.get("threads_per_worker", 1), r.get("nodes", 1)): r["median_sentences_per_s"]
            for r in document["results"]}
    one, two = rate.get((1, 1, 1)), rate.get((2, 1, 1))
    if not one or not two:
        raise SystemExit(f"error: {path}: needs a 1x1 and a 2x1 layout for the DDP efficiency")
    return {"file": path.name, "efficiency_2_workers": two / (2 * one), "one_worker": one, "two_workers": two,
            "cpu_count": document.get("cpu_count")}


def allreduce_efficiency(gpus: int, parameters: int, step_s: float, intra_gbs: float, inter_gbs: float,
                         per_node: int = 8) -> float:
    """step / (step + ring all-reduce of the fp32 gradients), the all-reduce not overlapped with the backward pass
    (DDP overlaps it, so this errs long). A ring moves 2 (n-1)/n of the bytes through its slowest link."""
    if gpus == 1:
        return 1.0
    bandwidth = intra_gbs if gpus <= per_node else inter_gbs
    seconds = 2 * (gpus - 1) / gpus * parameters * 4 / (bandwidth * 1e9)
    return step_s / (step_s + seconds)


def data_path(args) -> dict:
    """Seconds per corpus token of prepare and of fastText's training, and where they came from."""
    scale_path = Path(args.scale)
    if scale_path.exists():
        return scale_rates(load(scale_path), scale_path)
    prepare = load(Path(args.prepare))
    prepare_wall = statistics.median(run["wall_s"] for run in prepare["runs"])
    study = load(Path(args.wordvecs))
    row = next((r for r in study["rows"] if r["setting"] == args.wordvecs_setting), None)
    if row is None:
        raise SystemExit(f"error: {args.wordvecs}: no row {args.wordvecs_setting!r}")
    return {"source": f"{Path(args.prepare).name} (prepare) and {Path(args.wordvecs).name} {args.wordvecs_setting} "
                      f"(fastText), both on the novels ({prepare['tokens']:,} tokens)",
            "cores_measured": prepare["machine"]["cpus"],
            "prepare_s_per_token": prepare_wall / prepare["tokens"],
            "fasttext_s_per_token": row["wall_s"] / prepare["tokens"], "startup_s_per_sentence": None}


def scale_rates(document: dict, path: Path) -> dict:
    """The BookCorpus-scale curve (benchmarks/scale.py's schema): prepare's and fastText's seconds per token at its
    largest point of the current code (label "after"), and how training's start-up grows with the corpus.

    The curve was measured on a machine loaded by other work, so the seconds are its CPU seconds spread over its
    cores (what the same work takes on those cores idle), not its wall time: prepare's ``cpu_s``, fastText's CPU
    seconds extrapolated from its sample. Points that hold no corpus of their own (a rerun of one stage) are skipped."""
    try:
        cores = document["machine"]["cpus"]
        points = sorted((p for p in document["points"].values()
                         if p.get("label", "after") == "after" and "sentences" in p), key=lambda p: p["sentences"])
        largest = points[-1]
        fasttext = largest["stages"]["wordvecs"]["fasttext_train_s"]
        rates = {"source": f"{path.name}, its point of {largest['sentences']:,} sentences (CPU seconds over "
                           f"{cores} cores)",
                 "cores_measured": cores,
                 "prepare_s_per_token": largest["stages"]["prepare"]["cpu_s"] / cores / largest["tokens"],
                 "fasttext_s_per_token": fasttext["extrapolated_cpu_s"] / cores / largest["tokens"],
                 "startup_s_per_sentence": None}
        started = [p for p in points if "train" in p["stages"]]
        if len(started) >= 2 and started[-1]["sentences"] > started[0]["sentences"]:
            def startup(point: dict) -> float:
                return max(rank["startup_s"] for rank in point["stages"]["train"]["phases"]["per_rank"].values())
            rates["startup_s_per_sentence"] = ((startup(started[-1]) - startup(started[0]))
                                               / (started[-1]["sentences"] - started[0]["sentences"]))
            rates["startup_from_sentences"] = started[0]["sentences"]
        return rates
    except (AttributeError, KeyError, IndexError, TypeError, ValueError) as error:
        raise SystemExit(f"error: {path}: {type(error).__name__} {error} where cost.py reads the largest point's "
                         "sentences, tokens, stages.prepare.cpu_s and stages.wordvecs.fasttext_train_s.extrapolated_cpu_s")


def command_setting(cluster_file: Path, key: str) -> int:
    """A `--set KEY=VALUE` of the training command the cluster file ships (metadata.skipview.train)."""
    words = shlex.split(yaml.safe_load(cluster_file.read_text())["metadata"]["skipview"]["train"])
    values = [word.split("=", 1)[1] for word in words if word.startswith(f"{key}=")]
    if not values:
        raise SystemExit(f"error: {cluster_file}: its training command sets no {key}")
    return int(values[-1])


def overheads(path: Path, run: str) -> dict:
    """Start-up, one checkpoint, one in-training STS14, the final model and the evaluation after it, in seconds."""
    document = load(path)
    record = document["runs"][run]
    phases = record["phases_s"]
    return {"file": path.name, "run": run, "start_up_s": phases["start_up"],
            "checkpoint_s": phases["checkpoints"] / record["checkpoints"],
            "sts14_s": phases["in_training_evaluations"] / record["checkpoints"],
            "final_s": phases["final_model"] + phases["after_training"], "machine": document.get("machine")}


def start_up(profile: dict, data: dict, sentences: int) -> float:
    """The profile's start-up, plus what the scale curve says a larger corpus adds to it (linear in sentences)."""
    if data["startup_s_per_sentence"] is None:
        return profile["start_up_s"]
    growth = data["startup_s_per_sentence"] * (sentences - data["startup_from_sentences"])
    return profile["start_up_s"] + max(0.0, growth)


def cost_rows(args, rates: dict, data: dict, profile: dict) -> list[dict]:
    rows = []
    for name, model in PAPERS["models"].items():
        rate = rates[model.get("measured_as", name)]
        for corpus, hours_paper in model["paper_hours"].items():
            facts = PAPERS["corpora"][corpus]
            tokens_per_sentence = min(facts["mean_words"], PAPERS["max_len"])
            per_gpu = rate["sentences_per_s"] * rate["synthetic_mean_tokens"] / tokens_per_sentence
            sentences = facts["sentences"] * args.epochs
            for gpus in args.gpus:
                efficiency = allreduce_efficiency(gpus, rate["parameters"], rate["step_s"], args.intra_node_gbs,
                                                  args.inter_node_gbs)
                train_h = sentences / (per_gpu * gpus * efficiency) / 3600
                steps = math.ceil(sentences / (model["batch"] * gpus))
                checkpoints = math.ceil(steps / args.checkpoint_every)
                overhead_h = (start_up(profile, data, facts["sentences"]) + profile["final_s"]
                              + checkpoints * (profile["checkpoint_s"] + profile["sts14_s"])) / 3600
                hours = train_h + overhead_h
                rows.append({
                    "model": name, "corpus": corpus, "gpus": gpus, "layout": GPU_LAYOUTS.get(gpus, f"{gpus} GPUs"),
                    "epochs": args.epochs, "precision": rate["precision"],
                    "sentences_per_s_per_gpu": round(per_gpu), "ddp_efficiency": round(efficiency, 3),
                    "steps": steps, "checkpoints": checkpoints, "train_hours": round(train_h, 3),
                    "overhead_hours": round(overhead_h, 3), "hours": round(hours, 3),
                    "gpu_hours": round(hours * gpus, 3),
                    "hours_at_cpu_ddp_efficiency": round(
                        (train_h * efficiency / (1.0 if gpus == 1 else args.cpu_efficiency)) + overhead_h, 3),
                    "paper_hours_one_gpu": hours_paper, "paper_gpu": model["paper_gpu"],
                })
    return rows


def data_rows(args, data: dict) -> list[dict]:
    """Preparing each corpus and training its word vectors on one CPU node of --prep-cores cores."""
    rows = []
    speedup = args.prep_cores / data["cores_measured"]
    for corpus, facts in PAPERS["corpora"].items():
        tokens = facts["sentences"] * facts["mean_words"]
        prepare_h = tokens * data["prepare_s_per_token"] / 3600
        fasttext_h = tokens * data["fasttext_s_per_token"] / 3600
        rows.append({"corpus": corpus, "tokens": tokens,
                     "prepare_hours_measured_cores": round(prepare_h, 2),
                     "wordvecs_hours_measured_cores": round(fasttext_h, 2),
                     "prepare_hours": round(prepare_h / speedup, 3), "wordvecs_hours": round(fasttext_h / speedup, 3),
                     "cores": args.prep_cores})
    return rows


def assumptions(args, rates: dict, ddp: dict, data: dict, profile: dict) -> list[str]:
    bookcorpus = PAPERS["corpora"]["bookcorpus"]
    implied = ", ".join(f"{name} on {corpus} {hours:g} h "
                        f"({PAPERS['corpora'][corpus]['sentences'] / (hours * 3600):,.0f} sentences/s)"
                        for name, model in PAPERS["models"].items() if name != "bi-skip"
                        for corpus, hours in model["paper_hours"].items())
    return [
        f"Epochs: {args.epochs:g} (--epochs; costs scale with it). Neither paper states its epoch count; the "
        "multi-view paper says its models train 'within a few hours'. The papers' hours on one GPU, if each was one "
        f"pass: {implied}.",
        "Step rate per GPU: skipview's measured step on one " + rates["disc"]["gpu"] + " at the paper's size and "
        "batch (the slowest run of each precision, the faster precision): " + "; ".join(
            f"{name} {PRECISION[rate['precision']]} {rate['sentences_per_s']:,.0f} sentences/s (all: "
            f"{', '.join(rate['measurements'])})" for name, rate in rates.items()) + ".",
        f"Sentence length: the step's cost is proportional to tokens; the benchmark's synthetic corpus has "
        f"{rates['disc']['synthetic_mean_tokens']:.1f} tokens a sentence, BookCorpus {bookcorpus['mean_words']}, "
        f"UMBC News {PAPERS['corpora']['umbc_news']['mean_words']} (cap {PAPERS['max_len']}). At N 512 the step "
        "is host-bound (gpu.md), so UMBC's longer sentences may cost less than this.",
        "bi-skip: not measured; taken at uni-skip's step. Its two 1200-d encoder GRUs have half the recurrent "
        "weights of uni-skip's one 2400-d GRU and the decoders and 20k-word softmax are the same, so this is an "
        "upper bound.",
        f"DDP, measured: only on CPUs: two workers of one thread run at {ddp['efficiency_2_workers']:.2f} of twice "
        f"one worker ({ddp['file']}: {ddp['two_workers']:,.0f} against {ddp['one_worker']:,.0f} sentences/s, the "
        f"two workers sharing {ddp['cpu_count']} cores, with whatever else loaded the machine: a CPU figure, not "
        f"an interconnect's). The column 'hours at the CPU-measured DDP efficiency' is a second estimate: "
        f"{args.cpu_efficiency:.2f} (--cpu-efficiency) in place of the modelled efficiency on 8 and 64 GPUs.",
        f"DDP, modelled for GPUs: efficiency = step / (step + ring all-reduce of the fp32 gradients, not overlapped "
        f"with the backward pass), the parameter count measured with the step; bus bandwidth {args.intra_node_gbs:g} "
        f"GB/s inside a node of 8 (NVLink; --intra-node-gbs) and {args.inter_node_gbs:g} GB/s a GPU between nodes "
        f"(e.g. 3,200 Gb/s EFA per 8-GPU node; --inter-node-gbs). Each GPU trains the paper's batch (N per rank: "
        "disc's window stays the paper's 512; profile_e2e.md: two ranks of 512 kept the scores), the same learning "
        "rate and epochs at every GPU count: that fewer, larger optimiser steps reach the same model is assumed, "
        "measured only at two ranks.",
        f"Start-up, checkpoints, evaluation: {profile['file']} run {profile['run']} (CPU, h 256, local Ray; "
        f"standing in for a GPU cluster's): start-up {profile['start_up_s']:.0f} s, {profile['checkpoint_s']:.1f} s a "
        f"checkpoint and {profile['sts14_s']:.1f} s an STS14 evaluation every {args.checkpoint_every} steps "
        f"(--checkpoint-every; the setting of {args.cluster_file.name}'s command), final model and evaluation "
        f"{profile['final_s']:.0f} s. " + (
            "Start-up does not grow with the corpus here: no scale curve with training at two sizes."
            if data["startup_s_per_sentence"] is None else
            f"Start-up grows by {data['startup_s_per_sentence'] * 1e6:.2f} s per million sentences beyond "
            f"{data['startup_from_sentences']:,} (the scale curve's training start-up, linear between its smallest "
            "and largest points)."),
        f"Data path ({data['source']}): measured on {data['cores_measured']} cores, scaled linearly to "
        f"--prep-cores {args.prep_cores} (prepare's worker pool and fastText's threads; not measured beyond "
        f"{data['cores_measured']} cores). It runs once per corpus on a CPU node before the GPUs start, and is not in "
        "the GPU-hours. fastText trained on the corpus is skipview's default (time per token flat in the corpus "
        "size); the multi-view paper imported "
        "pretrained fastText vectors (`skipview data wordvecs --pretrained`), whose import is not timed here. "
        "Skip-thought needs no word vectors to train.",
        "Hours are wall time of one run from the start of `skipview train` to its final model; GPU-hours = hours x "
        "GPUs (the whole group is held for the whole run). Not included: launching the GPU nodes and their setup "
        "commands (billed, not measured here), and restarts after failures.",
    ]


def markdown(document: dict) -> str:
    lines = [
        "# What the papers' training runs would cost on GPUs",
        "",
        f"Generated by `{document['command']}` from the measurements it names; every assumption below moves the "
        "numbers it is written beside. Rerun it after a new GPU, DDP or data path measurement.",
        "",
        f"In short ({document['epochs']:g} epoch each; hours, then GPU-hours, on "
        f"{' / '.join(map(str, document['gpus']))} GPUs):",
        "",
    ] + [f"- {line}" for line in summary(document["training"])] + [
        "",
        f"The cluster that runs it: [`{document['cluster_file']}`](../../{document['cluster_file']}) (`ray up`) and "
        "[`cluster/bookcorpus-rayjob.yaml`](../../cluster/bookcorpus-rayjob.yaml) (KubeRay).",
        "",
        "| model | corpus | GPUs | precision | sentences/s a GPU | DDP efficiency (modelled) | steps | training h | "
        "start-up, checkpoints, evaluation h | **hours** | **GPU-hours** | hours at the CPU-measured DDP efficiency | "
        "paper: hours on one GPU |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in document["training"]:
        lines.append(
            f"| {row['model']} | {row['corpus']} | {row['gpus']} | {PRECISION[row['precision']]} | "
            f"{row['sentences_per_s_per_gpu']:,} | {row['ddp_efficiency']:.3f} | {row['steps']:,} | "
            f"{row['train_hours']:.3g} | {row['overhead_hours']:.3g} | **{row['hours']:.3g}** | "
            f"**{row['gpu_hours']:.3g}** | {row['hours_at_cpu_ddp_efficiency']:.3g} | "
            f"{row['paper_hours_one_gpu']:g} ({row['paper_gpu']}) |")
    lines += ["", "Data path, once per corpus, on a CPU node before the GPUs start:", "",
              "| corpus | tokens | prepare h | fastText word vectors h | cores | the same on the measured cores: "
              "prepare / word vectors h |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for row in document["data_path"]:
        lines.append(f"| {row['corpus']} | {row['tokens']:,} | {row['prepare_hours']:.2f} | "
                     f"{row['wordvecs_hours']:.2f} | {row['cores']} | {row['prepare_hours_measured_cores']:.2f} / "
                     f"{row['wordvecs_hours_measured_cores']:.2f} |")
    lines += ["", "## Assumptions", ""] + [f"- {text}" for text in document["assumptions"]]
    lines += ["", "## Sanity check against the papers", "",
              "If each paper's run was one epoch, each ratio below is how much faster one H100 runs skipview's step "
              "than the paper's GPU ran the paper's.", ""] + [f"- {text}" for text in document["sanity"]]
    lines += ["", f"Inputs: {', '.join(document['inputs'])}. Machine that ran this script (it measures nothing): "
              f"{document['machine']}.", ""]
    return "\n".join(lines)


def summary(rows: list[dict]) -> list[str]:
    """One line per model and corpus: its hours and GPU-hours at every GPU count."""
    runs: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        runs.setdefault((row["model"], row["corpus"]), []).append(row)
    def joined(group: list[dict], key: str) -> str:
        return " / ".join(f"{row[key]:.3g}" for row in group)
    return [f"{model} on {corpus}: {joined(group, 'hours')} h; {joined(group, 'gpu_hours')} GPU-h"
            for (model, corpus), group in runs.items()]


def sanity(rows: list[dict]) -> list[str]:
    """One GPU of ours against the paper's one GPU, for every model and corpus."""
    lines = []
    for row in rows:
        if row["gpus"] == 1:
            lines.append(f"{row['model']} on {row['corpus']}: {row['hours']:.3g} h for {row['epochs']:g} epoch(s) on "
                         f"one H100; the paper's {row['paper_hours_one_gpu']:g} h on one GPU ({row['paper_gpu']}) "
                         f"would run {row['paper_hours_one_gpu'] / row['hours'] * row['epochs']:.1f} epochs here")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu-glob", default=str(REPORTS / "benchmarks" / "gpu_*.json"))
    parser.add_argument("--ddp-cpu", default=str(REPORTS / "benchmarks" / "train_scaling_unrolled_gru.json"))
    parser.add_argument("--scale", default=str(REPORTS / "benchmarks" / "scale.json"),
                        help="the BookCorpus-scale curve; when absent, --prepare and --wordvecs")
    parser.add_argument("--prepare", default=str(REPORTS / "benchmarks" / "prepare-gutenberg.json"))
    parser.add_argument("--wordvecs", default=str(REPORTS / "wordvecs_study.json"))
    parser.add_argument("--wordvecs-setting", default="skipgram-d300-e2-mc1", help="the row of --wordvecs: "
                        "skipview's default fastText settings (params.yaml)")
    parser.add_argument("--profile", default=str(REPORTS / "benchmarks" / "profile_e2e.json"))
    parser.add_argument("--profile-run", default="after_2x1_n512")
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--checkpoint-every", type=int, default=None,
                        help="steps between checkpoints (default: the setting of --cluster-file's command)")
    parser.add_argument("--cluster-file", type=Path, default=REPORTS.parent / "cluster" / "bookcorpus-aws.yaml")
    parser.add_argument("--intra-node-gbs", type=float, default=300.0)
    parser.add_argument("--inter-node-gbs", type=float, default=40.0)
    parser.add_argument("--cpu-efficiency", type=float, default=None,
                        help="the DDP efficiency of the second estimate's column (default: the CPU-measured one)")
    parser.add_argument("--prep-cores", type=int, default=32)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "cost.json")
    parser.add_argument("--markdown", type=Path, default=None)
    args = parser.parse_args()

    rows = step_rates(args.gpu_glob)
    rates = {name: paper_rate(rows, model) for name, model in PAPERS["models"].items() if "measured_as" not in model}
    ddp = ddp_cpu(Path(args.ddp_cpu))
    if args.checkpoint_every is None:
        args.checkpoint_every = command_setting(args.cluster_file, "checkpoint_every")
    if args.cpu_efficiency is None:
        args.cpu_efficiency = ddp["efficiency_2_workers"]
    data = data_path(args)
    profile = overheads(Path(args.profile), args.profile_run)
    training = cost_rows(args, rates, data, profile)
    repo = REPORTS.parent
    read = glob.glob(args.gpu_glob) + [args.ddp_cpu, args.profile] + (
        [args.scale] if Path(args.scale).exists() else [args.prepare, args.wordvecs])
    inputs = sorted({os.path.relpath(Path(p).resolve(), repo) for p in read})
    document = {
        "benchmark": "cost",
        "command": " ".join(["python", os.path.relpath(Path(sys.argv[0]).resolve(), repo)] + [
            os.path.relpath(Path(word).resolve(), repo) if word.startswith((".", "/")) or "/" in word else word
            for word in sys.argv[1:]]),
        "inputs": inputs, "epochs": args.epochs, "gpus": args.gpus,
        "cluster_file": os.path.relpath(args.cluster_file.resolve(), repo), "papers": PAPERS, "step_rates": rates,
        "ddp_cpu": ddp, "data_rates": data,
        "overheads": profile, "training": training, "data_path": data_rows(args, data),
        "assumptions": assumptions(args, rates, ddp, data, profile), "sanity": sanity(training),
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
    }
    emit(document, args.out)
    if args.markdown:
        args.markdown.write_text(markdown(document))


if __name__ == "__main__":
    main()
