"""The ablation report: from the study's MLflow runs to ``ablation.md`` (the table), ``ablation.png`` (a chart)
and ``ablation_summary.json`` (the same numbers for ``dvc metrics``).

Runs are found by experiment and tags (``skipview.study=ablation``, ``cell``, ``seed``; see ``matrix``) in the
tracking store, and in the study's committed run records (``<report dir>/runs/<cell>-seed<k>.json``: metrics,
params and training curves of one finished run, written as soon as it is evaluated). MLflow's store and the
trained models are local to a machine; the records are committed, so a study spread over sessions on different
machines keeps every finished seed and its report is rebuilt from either source. Per run, a column is the mean of
the column's metrics that the run has (evaluation data without MPQA simply leaves MPQA out, and the report lists
what was used); per cell and view, mean +- sample std over seeds.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skipview.platform.tracking.lineage import HARDWARE_TAG, portable_path
from skipview.platform.files import write_aside, write_text_aside
from skipview.platform.studies.curves import build_curves, curve_keys
from skipview.platform.studies.matrix import (CELL_TAG, ENSEMBLE, EVALUATED_TAG, HOURS, SEED_TAG, SENTENCES_SEEN, STUDY, STUDY_TAG,
                                             TRAIN_PARAMS, Cell, Matrix)


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    cell: str
    seed: int
    start_time: int
    metrics: Mapping[str, float]
    params: Mapping[str, str]
    curves: Mapping[str, list[tuple[int, float]]] = field(default_factory=dict)   # key -> [(step, value)]
    lineage: Mapping[str, str] = field(default_factory=dict)      # the code and data versions (LINEAGE tags)

    @property
    def file_name(self) -> str:
        return f"{self.cell}-seed{self.seed}.json"

    def as_json(self) -> dict[str, Any]:
        """The committed record: absolute paths (a run's corpus, vectors, SentEval folder) relative to their
        repository, so it does not carry the layout of the machine that trained the run."""
        return {"run_id": self.run_id, "cell": self.cell, "seed": self.seed, "start_time": self.start_time,
                "metrics": dict(sorted(self.metrics.items())), "params": _portable(self.params),
                "curves": {k: [list(p) for p in v] for k, v in sorted(self.curves.items())},
                "lineage": _portable(self.lineage)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RunRecord":
        return cls(data["run_id"], data["cell"], int(data["seed"]), int(data["start_time"]), data["metrics"],
                   data["params"], {k: [(int(s), float(v)) for s, v in points] for k, points in data["curves"].items()},
                   data.get("lineage", {}))


def _portable(values: Mapping[str, str]) -> dict[str, str]:
    return {k: portable_path(v) if Path(v).is_absolute() else v for k, v in sorted(values.items())}


RECORDS = "runs"        # the report directory's folder of committed run records
# the tags that say which code and data a run used and what it computed on (tracking.lineage)
LINEAGE = ("git_commit", "corpus.hash", "wordvecs.hash", HARDWARE_TAG)
BORROWED_FROM = "borrowed_from"       # the lineage key of a record another study ran (``Study.borrowed_records``)
BORROWED_METRICS = "borrowed_metrics"   # and of the file its numbers were read from, where not its own record


def write_records(runs: Iterable[RunRecord], out_dir: Path) -> None:
    """One JSON file per run under ``out_dir/runs``; a newer run of the same (cell, seed) replaces the older."""
    folder = out_dir / RECORDS
    folder.mkdir(parents=True, exist_ok=True)
    for run in runs:
        write_text_aside(folder / run.file_name, json.dumps(run.as_json(), indent=1) + "\n")


def read_records(out_dir: Path) -> list[RunRecord]:
    folder = out_dir / RECORDS
    records = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            records.append(RunRecord.from_json(json.loads(path.read_text())))
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}: not a run record ({error})") from None
    return records


def latest(runs: Iterable[RunRecord]) -> list[RunRecord]:
    """One run per (cell, seed): the latest started."""
    found: dict[tuple[str, int], RunRecord] = {}
    for record in runs:
        key = (record.cell, record.seed)
        if key not in found or found[key].start_time < record.start_time:
            found[key] = record
    return sorted(found.values(), key=lambda r: (r.cell, r.seed))


@dataclass
class Stat:
    values: list[float] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values) if self.values else None

    @property
    def std(self) -> float | None:
        return statistics.stdev(self.values) if self.n > 1 else None

    def as_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "std": self.std, "n": self.n}

    def spread(self) -> str:
        """``mean ± std``, or the mean alone for one seed (the caller states n)."""
        return f"{self.mean:.1f}" if self.std is None else f"{self.mean:.1f} ± {self.std:.1f}"

    def text(self, digits: int = 1, seeds: int | None = None) -> str:
        """``mean ± std``; ``(n=K)`` where fewer runs than the row's ``seeds`` have the column (one seed, or a
        column an analysis measured on some seeds only)."""
        if not self.values:
            return "–"
        if self.std is None:
            return f"{self.mean:.{digits}f} (n=1)"
        fewer = f" (n={self.n})" if seeds is not None and self.n < seeds else ""
        return f"{self.mean:.{digits}f} ± {self.std:.{digits}f}{fewer}"


@dataclass
class Summary:
    """Everything the report shows, computed once and rendered three ways."""

    experiment: str
    rows: list[tuple[Cell, str]]                                  # (cell, view) in matrix order
    stats: dict[tuple[str, str], dict[str, Stat]]                  # (cell, view) -> column -> Stat
    cost: dict[str, dict[str, Stat]]                               # cell -> hours / sentences_seen -> Stat
    seeds: dict[str, list[int]]                                    # cell -> seeds found
    metrics_used: dict[str, list[str]]                             # column -> metric keys found in some run
    common_params: dict[str, str]                                  # params identical in every trained run
    claims: list[dict[str, Any]]
    missing: list[str]                                             # cells with no finished run
    sources: dict[str, str] = field(default_factory=dict)          # cell -> where its numbers come from
    vectors: dict[str, list[str]] = field(default_factory=dict)    # word-vector hash -> the runs that read them
    paper: dict[tuple[str, str], float] = field(default_factory=dict)  # (cell/view, column) -> the paper's number


@dataclass
class Measured:
    """Metrics of a (cell, seed) that an analysis measured of its model (the supervised tasks), and when (seconds
    since the epoch; None for rows written before analyses recorded it). A run started after that measured an
    older model of the same (cell, seed), retrained since: its numbers are not the new run's."""
    metrics: dict[str, float]
    measured_at: float | None = None

    def describes(self, run: RunRecord) -> bool:
        return self.measured_at is None or self.measured_at * 1000 >= run.start_time


def find_runs(client, experiment: str) -> list[RunRecord]:
    """The finished, evaluated runs of the study in ``experiment``, with their training curves; a (cell, seed)
    recorded twice keeps its latest run."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise LookupError(f"no MLflow experiment named {experiment!r} in {client.tracking_uri}")
    found: list[RunRecord] = []
    token = None
    while True:
        page = client.search_runs(
            [exp.experiment_id],
            filter_string=(f"tags.`{STUDY_TAG}` = '{STUDY}' and tags.`{EVALUATED_TAG}` = 'true' "
                           "and attributes.status = 'FINISHED'"),
            max_results=1000, page_token=token)
        for run in page:
            tags = run.data.tags
            if CELL_TAG not in tags or SEED_TAG not in tags:
                continue
            curves = {key: [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]
                      for key in curve_keys(run.data.metrics)}
            found.append(RunRecord(run.info.run_id, tags[CELL_TAG], int(tags[SEED_TAG]), run.info.start_time,
                                   dict(run.data.metrics), dict(run.data.params), curves,
                                   {key: tags[key] for key in LINEAGE if key in tags}))
        token = page.token
        if not token:
            break
    return latest(found)


def summarise(matrix: Matrix, runs: Iterable[RunRecord], experiment: str, references: bool = True) -> Summary:
    by_cell: dict[str, list[RunRecord]] = defaultdict(list)
    for run in runs:
        by_cell[run.cell].append(run)
    cells = [c for c in matrix.reported(references) if c.baseline is None or c.name in by_cell]
    rows = [(cell, view) for cell in cells for view in cell.views]
    stats: dict[tuple[str, str], dict[str, Stat]] = {}
    used: dict[str, set[str]] = defaultdict(set)
    for cell, view in rows:
        stats[cell.name, view] = {}
        for column in matrix.columns:
            stat = Stat()
            for run in by_cell[cell.name]:
                value, present = column.value(view, run.metrics)
                if value is not None:
                    stat.values.append(value)
                    used[column.name].update(present)
            stats[cell.name, view][column.name] = stat
    cost = {cell.name: {name: Stat([r.metrics[key] for r in by_cell[cell.name] if key in r.metrics])
                        for name, key in (("hours", HOURS), ("sentences_seen", SENTENCES_SEEN))} for cell in cells}
    trained = [r for c in cells if c.baseline is None for r in by_cell[c.name]]
    common = _common_params(trained)
    return Summary(
        experiment=experiment, rows=rows, stats=stats, cost=cost,
        seeds={c.name: [r.seed for r in by_cell[c.name]] for c in cells},
        metrics_used={c.name: [m for m in c.metrics if m in used[c.name]] for c in matrix.columns},
        common_params=common,
        claims=[_check(claim, stats) for claim in matrix.claims],
        missing=[c.name for c in cells if not by_cell[c.name]],
        sources={c.name: _source(c, by_cell[c.name]) for c in cells if by_cell[c.name]},
        vectors=_vectors([r for c in cells for r in by_cell[c.name]]),
        paper=paper_values(matrix.claims),
    )


def _source(cell: Cell, runs: list[RunRecord]) -> str:
    """Where a row's numbers come from, in a line of the report."""
    lineage, params = runs[0].lineage, runs[0].params
    if BORROWED_FROM in lineage:
        study = lineage[BORROWED_FROM]
        numbers = lineage.get(BORROWED_METRICS, f"reports/{study}/runs/")
        return (f"borrowed from the study {study}, never run here: numbers from `{numbers}`, hours and sentences "
                f"from `reports/{study}/runs/`")
    if cell.run:
        return (f"trained outside the study (`skipview train`): run `{cell.run}`, model `{cell.model}`, evaluated "
                "here; hours and sentences from the run's MLflow record")
    if cell.combine:
        how = ("concatenated" if cell.ensemble == "concatenation"
               else "averaged (unsupervised tasks) and concatenated (supervised)")
        return f"{' and '.join(f'`{part}`' for part in cell.combine)} of the same seed, {how}; cost the sum of theirs"
    if cell.baseline:
        vectors = params.get("reference.wordvecs", "")
        return f"computed here from the word vectors `{portable_path(vectors) if vectors else 'not recorded'}`"
    return "trained and evaluated by this study"


def _vectors(runs: list[RunRecord]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for run in runs:
        found[run.lineage.get("wordvecs.hash", "not recorded")].append(f"{run.cell}-seed{run.seed}")
    return dict(found)


def _common_params(runs: list[RunRecord]) -> dict[str, str]:
    """The training settings (``train.*`` params) every trained run shares; absolute paths relative to their
    repository (``portable_path``), so a committed report does not carry the machine's layout."""
    if not runs:
        return {}
    first, prefix = runs[0].params, f"{TRAIN_PARAMS}."
    shared = {k[len(prefix):]: v for k, v in first.items()
              if k.startswith(prefix) and all(r.params.get(k) == v for r in runs[1:])}
    return _portable(shared)


def _side(stats, side: str, column: str) -> Stat:
    """The measured Stat of one side (``cell/view``) of a claim; empty when the study has no such run."""
    cell, view = side.split("/")
    return stats.get((cell, view), {}).get(column, Stat())


def _check(claim, stats) -> dict[str, Any]:
    better, worse = _side(stats, claim.better, claim.column), _side(stats, claim.worse, claim.column)
    result: dict[str, Any] = {"better": claim.better, "worse": claim.worse, "column": claim.column,
                              "paper": claim.paper, "measured_better": better.mean, "measured_worse": worse.mean}
    if better.mean is None or worse.mean is None:
        result.update(verdict="not measured", difference=None)
        return result
    difference = better.mean - worse.mean
    # One rule for every direction: it holds ("reproduced") when the gap exceeds the larger seed std of the two
    # sides, is reversed when it is below minus that spread, and is a tie inside it. With one seed a side has no
    # noise estimate, and the verdict says so.
    noise = max((s.std for s in (better, worse) if s.std is not None), default=None)
    if noise is None:
        verdict = ("reproduced" if difference > 0 else "reversed") + " (one seed: no noise estimate)"
    elif difference > noise:
        verdict = "reproduced"
    elif difference < -noise:
        verdict = "reversed"
    else:
        verdict = TIE
    result.update(verdict=verdict, difference=difference, noise=noise, seeds=[better.n, worse.n])
    return result


TIE = "tie (within seed noise)"


def paper_values(claims) -> dict[tuple[str, str], float]:
    """``(cell/view, column) -> the paper's number``, read from the claims' ``paper: "A vs B"`` (a claim citing
    prose, not two numbers, gives none). Two claims quoting one cell differently are a catalogue error."""
    found: dict[tuple[str, str], float] = {}
    for claim in claims:
        numbers = re.fullmatch(r"\s*(-?[\d.]+)\s+vs\s+(-?[\d.]+)\s*", claim.paper or "")
        if numbers is None:
            continue
        for side, number in ((claim.better, numbers[1]), (claim.worse, numbers[2])):
            key, paper = (side, claim.column), float(number)
            if found.setdefault(key, paper) != paper:
                raise ValueError(f"claims quote {side} ({claim.column}) as both {found[key]} and {paper}")
    return found


def render_markdown(summary: Summary, matrix: Matrix, chart_name: str | None, curves_chart: Path | None = None
                    ) -> str:
    # a column no run has data for (supervised tasks a study did not evaluate) and a cell with no finished run yet
    # (named below the table) would only be rows and columns of dashes
    columns = [c for c in matrix.columns
               if any(summary.stats[cell.name, view][c.name].n for cell, view in summary.rows)] or matrix.columns
    lines = [f"# Ablation (MLflow experiment `{summary.experiment}`)", "",
             "Each number: mean ± sample std over a row's seeds (its *Seeds*; one seed has no std and says n=1); per "
             "run, a column is the mean of the metrics listed under *Metrics used* that the run has (×100).", ""]
    header = ["Model", "View", "Seeds", "Train hours", "Sentences seen"] + [c.title for c in columns]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for cell, view in summary.rows:
        if cell.name in summary.missing:
            continue
        first = view == next(iter(cell.views))
        cost = summary.cost[cell.name]
        row = [cell.name if first else "", cell.views[view],
               str(len(summary.seeds[cell.name])) if first else "",
               cost["hours"].text(3) if first else "",
               _count(cost["sentences_seen"]) if first else ""]
        row += [summary.stats[cell.name, view][c.name].text(seeds=len(summary.seeds[cell.name])) for c in columns]
        lines.append("| " + " | ".join(row) + " |")
    if summary.missing:
        lines += ["", f"No finished run for: {', '.join(summary.missing)}."]
    if len(summary.vectors) == 1 and "not recorded" not in summary.vectors:
        lines += ["", f"Every row read the same word vectors (`{next(iter(summary.vectors))}`)."]
    elif len(summary.vectors) > 1:
        lines += ["", "**The rows read different word vectors**, so differences between them include the vectors':"]
        lines += [f"- `{vectors}`: {', '.join(runs)}" for vectors, runs in summary.vectors.items()]
    if chart_name:
        lines += ["", f"![ablation chart]({chart_name})"]
    if curves_chart is not None:
        lines += ["", "Training curves, mean over each cell's seeds (`ablation_curves.json` has the numbers):", "",
                  f"![training curves]({curves_chart.name})"]
    lines += ["", "## Where each row comes from", ""]
    lines += [f"- `{name}`: {source}" for name, source in summary.sources.items()]
    lines += _beside_the_paper(summary, matrix)
    lines += ["", "## The paper's directions", "",
              "A direction is *reproduced* when the measured gap exceeds the larger seed std of its two sides, "
              "*reversed* when it is below minus that spread, and a *tie* inside it.", "",
              "| Better | Worse | Column | Paper | Measured (seeds) | Difference | Verdict |",
              "|---|---|---|---|---|---|---|"]
    for c in summary.claims:
        better, worse = _side(summary.stats, c["better"], c["column"]), _side(summary.stats, c["worse"], c["column"])
        measured = ("–" if c["difference"] is None
                    else f"{better.spread()} vs {worse.spread()} (n={better.n} vs {worse.n})")
        difference = "–" if c["difference"] is None else f"{c['difference']:+.1f}"
        lines.append(f"| {c['better']} | {c['worse']} | {c['column']} | {c['paper']} | {measured} | {difference} "
                     f"| {c['verdict']} |")
    lines += ["", "## Metrics used", ""]
    for c in matrix.columns:
        found = summary.metrics_used[c.name]
        absent = [m for m in c.metrics if m not in found]
        lines.append(f"- {c.title}: {', '.join(found) or 'none found'}"
                     + (f" (not in any run: {', '.join(absent)})" if absent else ""))
    if summary.common_params:
        lines += ["", "## Settings shared by every trained run", "", "| Param | Value |", "|---|---|"]
        lines += [f"| `{k}` | `{v}` |" for k, v in summary.common_params.items()]
    return "\n".join(lines) + "\n"


def _beside_the_paper(summary: Summary, matrix: Matrix) -> list[str]:
    """The paper's table beside this study's: every (cell, view) a claim quotes a number for, in matrix order,
    with the paper's number and the measured mean ± std (n) per column."""
    columns = [c for c in matrix.columns if any(key[1] == c.name for key in summary.paper)]
    quoted = [(cell, view) for cell, view in summary.rows
              if any((f"{cell.name}/{view}", c.name) in summary.paper for c in columns)]
    if not quoted:
        return []
    header = ["Model", "View"] + [f"{c.name} ({who})" for c in columns for who in ("paper", "here")]
    lines = ["", "## Beside the paper", "", "The paper's number for every model and view a direction below quotes, "
             "beside this study's mean ± std over seeds (n: how many seeds measured the column).", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for cell, view in quoted:
        row = [cell.name, cell.views[view]]
        for c in columns:
            paper = summary.paper.get((f"{cell.name}/{view}", c.name))
            stat = summary.stats[cell.name, view][c.name]
            row += ["" if paper is None else f"{paper:.1f}",
                    "not measured" if not stat.n else f"{stat.spread()} (n={stat.n})"]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def _count(stat: Stat) -> str:
    return "–" if stat.mean is None else f"{stat.mean:,.0f}"


def summary_json(summary: Summary) -> dict[str, Any]:
    """Nested ``cell -> view -> column -> {mean, std, n}`` plus cost and the claims; ``dvc metrics show`` reads it."""
    cells: dict[str, Any] = {}
    for cell, view in summary.rows:
        entry = cells.setdefault(cell.name, {"seeds": len(summary.seeds[cell.name]),
                                             **{k: s.as_dict() for k, s in summary.cost[cell.name].items()}})
        entry[view] = {column: stat.as_dict() for column, stat in summary.stats[cell.name, view].items()}
    verdicts = [c["verdict"] for c in summary.claims]
    return {"experiment": summary.experiment, "cells": cells,
            "claims_measured": sum(v != "not measured" for v in verdicts),
            "claims_reproduced": sum(v.startswith("reproduced") for v in verdicts),
            "claims_tied": verdicts.count(TIE), "claims_reversed": sum(v.startswith("reversed") for v in verdicts),
            "claims": summary.claims, "word_vectors": summary.vectors}


def render_chart(summary: Summary, matrix: Matrix, path: Path) -> None:
    """Grouped bars: one panel per column that has data, one group per cell, one bar per view (seed std as error
    bar). Each panel's axis starts a little below its lowest bar, not at 0: the differences a study is about are a
    point or two on scores of 50-70, invisible on a 0-70 axis."""
    import matplotlib

    matplotlib.use("Agg")                      # no display on servers and CI
    import matplotlib.pyplot as plt

    columns = [c for c in matrix.columns if any(summary.stats[r.name, v][c.name].n for r, v in summary.rows)]
    if not columns:
        raise ValueError("no run has any report metric: nothing to chart")
    cells = list({cell.name: cell for cell, _ in summary.rows if summary.seeds[cell.name]}.values())
    # Bars by slot: a cell's first view, its second view, then the ensemble (f/g, f1/f2, g1/g2 line up).
    slots = ("view 1", "view 2", "ensemble")
    fig, axes = plt.subplots(len(columns), 1, figsize=(max(6.0, 1.3 * len(cells)), 2.8 * len(columns)),
                             squeeze=False)
    width = 0.8 / len(slots)
    for ax, column in zip(axes[:, 0], columns):
        shown: list[float] = []
        for i, slot in enumerate(slots):
            xs, means, errors = [], [], []
            for x, cell in enumerate(cells):
                views = [v for v in cell.views if v != ENSEMBLE]
                view = ENSEMBLE if slot == ENSEMBLE else (views[i] if i < len(views) else None)
                stat = summary.stats[cell.name, view][column.name] if view in cell.views else None
                if stat is not None and stat.n:
                    xs.append(x + (i - 1) * width)
                    means.append(stat.mean)
                    errors.append(stat.std or 0.0)
            ax.bar(xs, means, width, yerr=errors, capsize=2, label=slot)
            shown += means
        low, high = min(shown), max(shown)
        ax.set_ylim(max(0.0, low - 0.1 * (high - low) - 1), high + 0.1 * (high - low) + 1)
        ax.set_title(column.title, fontsize=9)
        ax.set_xticks(range(len(cells)), [c.name for c in cells], rotation=20, ha="right", rotation_mode="anchor",
                      fontsize=8)
        ax.set_xlim(-0.6, len(cells) - 0.4)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8, ncols=3)
    fig.tight_layout()
    write_aside(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)


def _with_measured(run: RunRecord, measured: Measured | None) -> RunRecord:
    if measured is None or not measured.describes(run):
        return run
    return replace(run, metrics={**measured.metrics, **run.metrics})


def build_report(client, experiment: str, matrix: Matrix, out_dir: str | Path, references: bool = True,
                 records: bool = False, measured_elsewhere: Mapping[tuple[str, int], Measured] = {},
                 borrowed: Iterable[RunRecord] = ()) -> dict[str, Path]:
    """Write ``ablation.md``, ``ablation.png`` and ``ablation_summary.json`` under ``out_dir``, and the training
    curves (``ablation_curves.png`` / ``.json``) when the runs logged any; return the paths. ``records``: also
    read the run records committed under ``out_dir/runs`` and write one for every run MLflow has (a study's
    report; without, the report reads MLflow alone). ``measured_elsewhere``: metrics of a (cell, seed) that a
    study's analysis measured of the same model (its supervised tasks), added to the run's own, which win; left out
    where the run is newer than the measurement (the (cell, seed) was trained again since). ``borrowed``: records
    other studies ran for this one (``Study.borrowed_records``), read beside the committed ones, never written."""
    out_dir = Path(out_dir)
    try:
        tracked = find_runs(client, experiment)
    except LookupError:
        if not records:
            raise
        tracked = []
    if records:                 # the committed records then hold every run, in one (portable) form
        write_records(tracked, out_dir)
    runs = latest([*read_records(out_dir), *borrowed]) if records else tracked
    runs = [_with_measured(run, measured_elsewhere.get((run.cell, run.seed))) for run in runs]
    if not runs:
        raise LookupError(f"experiment {experiment!r} has no finished run tagged {STUDY_TAG}={STUDY}")
    summary = summarise(matrix, runs, experiment, references)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out_dir / "ablation.md", "chart": out_dir / "ablation.png",
             "summary": out_dir / "ablation_summary.json"}
    render_chart(summary, matrix, paths["chart"])
    paths.update(build_curves(runs, out_dir) or {})
    text = render_markdown(summary, matrix, paths["chart"].name, paths.get("curves_chart"))
    write_text_aside(paths["markdown"], text)
    write_text_aside(paths["summary"], json.dumps(summary_json(summary), indent=2, sort_keys=True) + "\n")
    return paths
