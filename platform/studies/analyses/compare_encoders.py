"""Compare encoders under every choice of where the top principal component is fitted, on the same word vectors.

Rows: the training-free baselines (avg; WR and SIF with the component fitted per STS subset, per task and on a
corpus sample) and any trained models given with --model NAME=DIR (each view and the ensemble, same three fits), or
with NAME=DIR@VIEW+DIR@VIEW a view of each of two models as one ensemble (Table 6's f+g and ff+gg rows).
Columns: the tasks' headline numbers (STS: mean Pearson over subsets x100; classification: accuracy) and the mean of
STS12, STS13, STS14 and SICK-R (unsupervised), the multi-view paper's unsupervised summary on the tasks at hand.
A --model whose directory is not on this machine is named and skipped (a study spread over machines measures each
model where it is). Writes OUT.md and OUT.json. The component choice only changes the STS subsets' scores (other
tasks are one call each under 'subset' and 'task'), so supervised tasks run once per encoder for 'task' and
'corpus'.

    python -m skipview.platform.studies.analyses.compare_encoders --wordvecs data/gutenberg_novels/wordvecs \
        --pc-corpus data/gutenberg_novels/prepared --senteval-dir data/senteval/downstream --out reports/baselines
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from skipview.platform.evaluation.cli import build_encoder
from skipview.platform.evaluation.encoding import CombinedEncoder
from skipview.platform.evaluation.suite import run_tasks
from skipview.platform.studies.runner import available_tasks

UNSUP = ["sts12", "sts13", "sts14", "stsb_unsup", "sickr_unsup"]
SUMMARY = ["sts12", "sts13", "sts14", "sickr_unsup"]
HEADLINE = {"sickr": "pearson", "stsb": "pearson"}


def headline(metrics: dict[str, float], task: str) -> float | None:
    key = f"{task}.pearson.mean" if task in UNSUP else f"{task}.{HEADLINE.get(task, 'acc')}"
    return metrics.get(key)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wordvecs", type=Path, required=True)
    parser.add_argument("--pc-corpus", type=Path, required=True, help="prepared corpus for the 'corpus' fit")
    parser.add_argument("--senteval-dir", type=Path, required=True)
    parser.add_argument("--model", action="append", default=[],
                        help="NAME=DIR of a trained model (repeatable); NAME=DIR@f,g: these views of it, not --views; "
                             "NAME=DIR@VIEW+DIR@VIEW: one view of each of two models, ensembled as one encoder")
    parser.add_argument("--views", default="ensemble,f,g", help="views of each model to evaluate")
    parser.add_argument("--supervised", default="", help="comma-separated supervised tasks, e.g. sickr,stsb,mr,cr")
    parser.add_argument("--protocol", default="full")
    parser.add_argument("--baselines", default="avg,wr,sif", help="comma-separated; empty for none")
    parser.add_argument("--fits", default="subset,task,corpus", help="component fits to compare")
    parser.add_argument("--supervised-fits", default="task,corpus",
                        help="fits under which the supervised tasks also run (avg always runs them)")
    parser.add_argument("--out", type=Path, required=True, help="output path without extension")
    parser.add_argument("--resume", action="store_true",
                        help="keep the rows OUT.json already holds (same encoder, fit and protocol) instead of "
                             "evaluating them again, unless the model was saved after the row was measured: OUT is "
                             "rewritten after every row, so a stopped run continues")
    args = parser.parse_args(argv)

    # tasks without data in the SentEval folder are left out, as a study leaves them out (a malformed file is an error)
    unsupervised = available_tasks(tuple(UNSUP), str(args.senteval_dir))
    supervised = available_tasks(tuple(t for t in args.supervised.split(",") if t), str(args.senteval_dir))
    specs = []          # (row name, component fit, build kwargs)
    fits = args.fits.split(",")
    for baseline in filter(None, args.baselines.split(",")):
        specs += [(f"fastText {baseline}", fit, {"baseline": baseline})
                  for fit in (["none"] if baseline == "avg" else fits)]
    for item in args.model:
        name, _, directory = item.partition("=")
        if "+" in directory:        # Table 6's ensembles of two separately trained models (averaged / concatenated)
            parts = [part.partition("@") for part in directory.split("+")]
            if not all(view for _, _, view in parts):
                parser.error(f"--model {item}: each part of an ensemble names its view (DIR@VIEW+DIR@VIEW)")
            specs += [(f"{name} ensemble", fit, {"parts": [(Path(d), view) for d, _, view in parts]}) for fit in fits]
            continue
        directory, _, views = directory.partition("@")
        for view in (views or args.views).split(","):
            specs += [(f"{name} {view}", fit, {"model": Path(directory), "view": view}) for fit in fits]

    done = {}
    if args.resume and args.out.with_suffix(".json").exists():
        previous = json.loads(args.out.with_suffix(".json").read_text())
        if previous["protocol"] == args.protocol:
            done = {(row["encoder"], row["component_fit"]): row for row in previous["rows"]}
    rows = []
    # a row not reached yet stays in OUT.json while earlier ones are measured, so a stopped run loses no kept row
    unvisited = {(name, fit): done[name, fit] for name, fit, _ in specs if (name, fit) in done}
    for name, fit, kwargs in specs:
        kept = unvisited.pop((name, fit), None)
        if kept is not None and not _older_than_its_models(kept, kwargs):
            rows.append(kept)
            print(f"{name:28s} {fit:7s} summary {kept['summary']:.1f}  (kept from {args.out}.json)", flush=True)
            continue
        absent = [d for d in _model_dirs(kwargs) if not d.is_dir()]
        if absent:          # a study spread over machines: the model is measured where it is
            print(f"{name:28s} {fit:7s} not measured: {absent[0]} is not on this machine", flush=True)
            continue
        start = time.perf_counter()
        component_fit = None if fit == "none" else fit
        if "parts" in kwargs:
            encoder = CombinedEncoder([build_encoder(directory, None, args.wordvecs, args.pc_corpus,
                                                     component_fit=component_fit, view=view)
                                       for directory, view in kwargs["parts"]])
        else:
            encoder = build_encoder(kwargs.get("model"), kwargs.get("baseline"), args.wordvecs, args.pc_corpus,
                                    component_fit=component_fit, view=kwargs.get("view", "ensemble"))
        tasks = unsupervised + (supervised if fit == "none" or fit in args.supervised_fits.split(",") else [])
        metrics = run_tasks(encoder, tasks, args.senteval_dir, args.protocol)
        row = {"encoder": name, "component_fit": fit, "seconds": round(time.perf_counter() - start, 1),
               "measured_at": time.time(), "scores": {t: headline(metrics, t) for t in tasks},
               "metrics": metrics}
        row["summary"] = float(np.mean([row["scores"][t] for t in SUMMARY if t in unsupervised]))
        rows.append(row)
        print(f"{name:28s} {fit:7s} summary {row['summary']:.1f}  ({row['seconds']:.0f} s)", flush=True)
        write(args.out.with_suffix(".json"), json.dumps({"rows": rows + list(unvisited.values()),
                                                         "protocol": args.protocol,
                                                         "wordvecs": str(args.wordvecs)}, indent=1) + "\n")

    columns = unsupervised + supervised
    lines = ["| encoder | component fitted | mean STS12-14, SICK-R | " + " | ".join(columns) + " |",
             "|---|---|---|" + "---|" * len(columns)]
    for row in rows:
        cells = [f"{row['scores'][t]:.1f}" if row["scores"].get(t) is not None else "" for t in columns]
        lines.append(f"| {row['encoder']} | {row['component_fit']} | {row['summary']:.1f} | " + " | ".join(cells) + " |")
    write(args.out.with_suffix(".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))


def _model_dirs(build: dict) -> list[Path]:
    return [d for d, _ in build["parts"]] if "parts" in build else [build["model"]] if "model" in build else []


def _older_than_its_models(row: dict, build: dict) -> bool:
    """Whether a kept row measured an earlier model than the one now in its directory (the row's model was trained
    again since). Rows written before rows recorded ``measured_at`` are kept as they are."""
    saved = [f.stat().st_mtime for d in _model_dirs(build) if d.is_dir() for f in d.iterdir()]
    return row.get("measured_at") is not None and bool(saved) and row["measured_at"] < max(saved)


def write(path: Path, text: str) -> None:
    """Whole or not at all: a run stopped while writing leaves the previous file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_suffix(path.suffix + ".tmp")
    staging.write_text(text)
    staging.replace(path)


if __name__ == "__main__":
    main()
