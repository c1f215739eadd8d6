"""Quality against training hours along runs trained outside a study (issue 57): at each half-epoch checkpoint of
each run, its held-out next-sentence perplexity and a few tasks of the checkpoint exported as a model, against the
hours the run had trained when it wrote the checkpoint.

What it reads is committed JSON, a folder per run (``<folder>/<run>/``): ``heldout.json``, the run's kept checkpoints
as ``skipview heldout --out`` writes them (step, half epochs, sentences, hours trained, perplexities), and
``step-<N>.json``, ``skipview evaluate --out`` of the checkpoint at step N exported by ``skipview export checkpoint
--step N``. Every evaluation must share one protocol and component fit, or the curve would mix them. It writes, from
those alone, ``OUT.png`` (a panel per measure, a line per run), ``OUT.json`` (the points) and ``OUT.md`` (the table);
a DVC stage redraws them (reports/dvc.yaml):

    python -m skipview.platform.studies.quality_hours reports/skipthought/checkpoints reports/skipthought/quality_hours
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from skipview.platform.files import write_aside, write_text_aside
from skipview.platform.studies.analyses.compare_encoders import headline

HELDOUT = "heldout.json"
PERPLEXITY = "perplexity_next"
COMMAND = "python -m skipview.platform.studies.quality_hours"


def points(folder: Path) -> tuple[dict[str, list[dict[str, Any]]], list[str], dict[str, Any]]:
    """Run -> its half-epoch checkpoints' points (step, epochs, hours, sentences, perplexity, each task measured of
    it), the tasks, and the one protocol and component fit of every evaluation. A ValueError names a file that
    does not fit."""
    runs, tasks, evaluated = {}, [], {}
    for heldout in sorted(folder.glob(f"*/{HELDOUT}")):
        found = []
        for record in json.loads(heldout.read_text())["records"]:
            if record["half_epochs"] is None:               # a stop signal's checkpoint, between half epochs
                continue
            point = {"step": record["step"], "epochs": record["half_epochs"] / 2, "hours": record.get("train_hours"),
                     "sentences": record["sentences"], PERPLEXITY: record[PERPLEXITY]}
            evaluation = heldout.parent / f"step-{record['step']}.json"
            if evaluation.is_file():
                result = json.loads(evaluation.read_text())
                how = {"protocol": result["protocol"]["name"], "component_fit": result["component_fit"]}
                if evaluated.setdefault("how", how) != how:
                    raise ValueError(f"{evaluation}: protocol {how['protocol']}, component fit "
                                     f"{how['component_fit']}; the evaluations before it: {evaluated['how']}")
                for task in result["tasks"]:
                    point[task] = headline(result["metrics"], task)
                    tasks += [task] if task not in tasks else []
            found.append(point)
        runs[heldout.parent.name] = found
    if not runs:
        raise ValueError(f"{folder}: no <run>/{HELDOUT} (`skipview heldout RUN_FOLDER --corpus ... --out "
                         f"{folder}/<run>/{HELDOUT}`)")
    return runs, tasks, evaluated.get("how", {})


def render(runs: dict[str, list[dict[str, Any]]], tasks: list[str], path: Path) -> None:
    """One panel per measure against the hours trained, one line per run; a checkpoint whose hours are unknown (it
    ends no logged throughput window) is left out of the lines."""
    import matplotlib

    matplotlib.use("Agg")                      # no display on servers and CI
    import matplotlib.pyplot as plt

    measures = [PERPLEXITY, *tasks]
    titles = {PERPLEXITY: "held-out next-sentence perplexity (lower is better)"}
    fig, axes = plt.subplots(len(measures), 1, figsize=(7, 2.8 * len(measures)), squeeze=False, sharex=True)
    for ax, measure in zip(axes[:, 0], measures):
        for run, found in runs.items():
            drawn = [p for p in found if p["hours"] is not None and p.get(measure) is not None]
            ax.plot([p["hours"] for p in drawn], [p[measure] for p in drawn], "o-", label=run, markersize=3)
        ax.set_title(titles.get(measure, f"{measure} (x100)"), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[-1, 0].set_xlabel("hours trained (one thread)", fontsize=8)
    fig.tight_layout()
    write_aside(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)


def markdown(runs: dict[str, list[dict[str, Any]]], tasks: list[str], how: dict[str, Any], folder: Path,
             out: Path) -> str:
    lines = ["# Quality against training hours", "",
             f"Made by `{COMMAND} {folder.as_posix()} {out.as_posix()}` from the JSON in `{folder.as_posix()}/` "
             "(the commands that measured them: README.md beside this page). At each half-epoch checkpoint: the "
             "held-out next-sentence perplexity (`skipview heldout`) and the tasks of the checkpoint exported as a "
             "model (`skipview export checkpoint --step`), evaluated with "
             + (f"protocol {how['protocol']}, component fit {how['component_fit']}." if how else "no task yet."),
             "", f"![quality against hours]({out.name}.png)", ""]
    header = ["run", "epochs", "step", "hours", "sentences", "perplexity", *tasks]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for run, found in runs.items():
        for p in found:
            cells = [run, f"{p['epochs']:g}", str(p["step"]), "–" if p["hours"] is None else f"{p['hours']:.2f}",
                     f"{p['sentences']:,}", f"{p[PERPLEXITY]:.2f}",
                     *("–" if p.get(task) is None else f"{p[task]:.1f}" for task in tasks)]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="a folder per run: heldout.json and step-<N>.json")
    parser.add_argument("out", type=Path, help="output path without extension (.png, .json, .md)")
    args = parser.parse_args(argv)
    runs, tasks, how = points(args.folder)
    render(runs, tasks, args.out.with_suffix(".png"))
    write_text_aside(args.out.with_suffix(".json"),
                     json.dumps({"runs": runs, "tasks": tasks, **how}, indent=1) + "\n")
    write_text_aside(args.out.with_suffix(".md"), markdown(runs, tasks, how, args.folder, args.out))
    print(f"wrote {args.out}.png, .json, .md")


if __name__ == "__main__":
    main()
