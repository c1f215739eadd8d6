"""A learning curve's report (a study with ``sizes``; issue 48), generated from what has landed: the study's
committed run records and its cuts' statistics (``metrics/<corpus>/<size>/cut.json``, reports/dvc.yaml's curve_cut).

``python -m skipview.platform.studies.learning_curve STUDY`` writes into ``reports/<study>/``:

* ``curve.md``: per size, every row's STS mean (the study's first column: STS12-14 and SICK-R) and STS-B, mean ± std
  over seeds; each trained row's margin over uSIF on the same cut's vectors, and whether it is above uSIF beyond its
  seed spread (the rule of the study reports' claims: the margin against the row's std over seeds); the fitted trend
  of each row's margin in log(sentences), extrapolated to the paper's corpora and labelled a prediction beside the
  paper's own margins, with the assumptions that move it; each row's CPU hours and sentences/s; and what is not
  measured yet. A trend is fitted only to 3 sizes or more.
* ``curve.json``: the same numbers; ``curve.csv`` (one line per row, size and seed) and ``margin.csv`` (trained rows)
  for ``dvc plots`` (reports/dvc.yaml's curve_report stage, template .dvc/plots/learning_curve.json: log x, mean
  and std); ``curve.png`` and ``margin.png``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from skipview.platform.files import write_aside, write_json_aside, write_text_aside
from skipview.platform.studies.matrix import ENSEMBLE, HOURS, SENTENCES_SEEN, Column
from skipview.platform.studies.report import BORROWED_FROM, RunRecord, Stat, latest, read_records
from skipview.platform.tracking.lineage import HARDWARE_TAG, hardware

USIF = "fasttext-usif"
# a run's settings that name its data: they differ between sizes by design
SIZE_PARAMS = {"matrix.cell", "train.corpus", "train.wordvecs", "reference.wordvecs"}
STSB = "stsb_unsup"
METRICS = Path("metrics")
# The paper's corpora (multi-view paper, Table 1) and its margins there (Table 3: STS12-16 and SICK-R, Pearson x100),
# over fastText + WR on the pretrained Common Crawl vectors, its strongest training-free row
PAPER_CORPORA = {"BookCorpus": 74e6, "UMBC News": 134.5e6}
PAPER_MARGINS = {("discriminative", "BookCorpus"): ("D1", 69.9, 67.8),
                 ("discriminative", "UMBC News"): ("D2", 71.4, 67.8),
                 ("generative", "BookCorpus"): ("G1", 69.4, 67.8),
                 ("generative", "UMBC News"): ("G2", 70.3, 67.8)}
MIN_SIZES_FOR_TREND = 3
CONFIDENCE = 0.95


def text(stat: Stat, seeds: int, digits: int = 2) -> str:
    """``mean ± std``, ``(n=K)`` where fewer than the study's seeds have landed, or "not measured"."""
    return stat.text(digits, seeds) if stat.values else "not measured"


def as_json(stat: Stat) -> dict[str, Any]:
    return {**stat.as_dict(), "values": stat.values}


def verdict(margin: Stat) -> str:
    """Above or below uSIF beyond the seed spread (the margin against the row's std over seeds), or a tie."""
    if not margin.values:
        return "not measured"
    if margin.std is None:
        return ("above" if margin.mean > 0 else "below") + " (one seed: no spread yet)"
    if margin.mean > margin.std:
        return "above beyond its seed spread"
    if margin.mean < -margin.std:
        return "below beyond its seed spread"
    return "tie (within its seed spread)"


def fit_trend(points: list[tuple[float, float]], at: dict[str, float]) -> dict[str, Any]:
    """Least squares of margin = a + b ln(sentences) over every seed's margin at every size, and the fitted mean at
    each of ``at`` with its ``CONFIDENCE`` interval (Student's t, n - 2 degrees of freedom). The interval is the fit's
    own uncertainty: it holds only if the margin keeps growing linearly in log(sentences) beyond the sizes measured."""
    from scipy import stats

    xs, ys = [math.log(x) for x, _ in points], [y for _, y in points]
    n, mean_x, mean_y = len(xs), statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sxx
    intercept = mean_y - slope * mean_x
    residual = math.sqrt(sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys)) / (n - 2))
    t = stats.t.ppf(0.5 + CONFIDENCE / 2, n - 2)
    predictions = {}
    for name, sentences in at.items():
        x = math.log(sentences)
        half = t * residual * math.sqrt(1 / n + (x - mean_x) ** 2 / sxx)
        value = intercept + slope * x
        predictions[name] = {"sentences": sentences, "margin": value, "low": value - half, "high": value + half}
    return {"points": n, "slope_per_e": slope, "slope_per_decade": slope * math.log(10), "intercept": intercept,
            "residual_std": residual, "slope_std": residual / math.sqrt(sxx), "predictions": predictions}


class Curve:
    """The study's rows at each size, read from its run records."""

    def __init__(self, study, records: list[RunRecord], sentences: dict[str, int | None]):
        self.study, self.sentences = study, sentences
        self.sizes = list(study.spec.sizes)
        self.rows = list(study.spec.cells)
        self.trained = [c.name.rsplit(".", 1)[0] for c in study.parts[0].matrix.cells]
        self.columns: dict[str, Column] = {c.name: c for c in study.matrix.columns}
        self.main = study.matrix.columns[0].name
        self.every = records              # two borrowed studies may each hold a uSIF of the same size and seed
        self.records = {(r.cell, r.seed): r for r in latest(records)}

    def values(self, row: str, size: str, column: str) -> dict[int, float]:
        """Seed -> the row's ensemble in ``column`` at ``size``."""
        found = {}
        for (cell, seed), record in self.records.items():
            if cell == f"{row}.{size}":
                value, _ = self.columns[column].value(ENSEMBLE, record.metrics)
                if value is not None:
                    found[seed] = value
        return dict(sorted(found.items()))

    def spread(self, row: str, size: str, column: str) -> Stat:
        return Stat(list(self.values(row, size, column).values()))

    def usifs(self, size: str, column: str) -> dict[str, float]:
        """uSIF at ``size`` on each set of word vectors it was computed on (their hash, from the record's lineage):
        one, unless the size was continued on a machine that trained its fastText vectors anew, or borrowed from
        studies that each trained their own."""
        found = {}
        for record in self.every:
            if record.cell == f"{USIF}.{size}":
                value, _ = self.columns[column].value(ENSEMBLE, record.metrics)
                if value is not None:
                    found[vectors(record)] = value
        return found

    def usif(self, size: str, column: str) -> str | None:
        """uSIF at ``size`` as the tables show it: its value, or each vectors' value where there are several."""
        found = self.usifs(size, column)
        return " / ".join(f"{value:.2f}" for value in found.values()) if found else None

    def margins(self, row: str, size: str, column: str) -> dict[int, float | None]:
        """Seed -> the row's value minus uSIF on the same word vectors (None: no uSIF on its vectors)."""
        usifs = self.usifs(size, column)
        values = self.values(row, size, column)
        own = {seed: usifs.get(vectors(self.records[(f"{row}.{size}", seed)])) for seed in values}
        return {seed: None if own[seed] is None else value - own[seed] for seed, value in values.items()}

    def margin(self, row: str, size: str, column: str) -> Stat:
        return Stat([m for m in self.margins(row, size, column).values() if m is not None])

    def unpaired(self, size: str) -> list[str]:
        """The trained runs of ``size`` whose word vectors have no uSIF (left out of the margins)."""
        return [f"`{row}` seed {seed}" for row in self.trained
                for seed, m in self.margins(row, size, self.main).items() if m is None]

    def borrowed(self, size: str) -> dict[str, list[str]]:
        """Study -> the training settings its borrowed records of ``size`` differ in from this study's own records
        of the same rows at other sizes (the data a size reads aside): what a reader must know to mix them."""
        found: dict[str, set[str]] = {}
        for (cell, seed), record in self.records.items():
            row, at = cell.rsplit(".", 1)
            source = record.lineage.get(BORROWED_FROM)
            if at != size or source is None:
                continue
            own = next((r for (c, s), r in self.records.items() if c.rsplit(".", 1)[0] == row and s == seed
                        and BORROWED_FROM not in r.lineage), None)
            differ = found.setdefault(source, set())
            if own is not None:
                differ |= {f"{key} ({record.params.get(key)} there, {own.params.get(key)} here)"
                           for key in set(record.params) | set(own.params)
                           if key not in SIZE_PARAMS and record.params.get(key) != own.params.get(key)}
        return {source: sorted(differ) for source, differ in sorted(found.items())}

    def cost(self, row: str, size: str) -> dict[str, Stat]:
        """CPU hours (train/hours x the cores each run held) and sentences/s of training, per seed."""
        cores = self.study.spec.cpus_per_worker * self.study.spec.workers
        hours, rates = [], []
        for (cell, _), record in sorted(self.records.items()):
            if cell == f"{row}.{size}" and record.metrics.get(HOURS):
                hours.append(record.metrics[HOURS] * cores)
                rates.append(record.metrics[SENTENCES_SEEN] / (record.metrics[HOURS] * 3600))
        return {"cpu_hours": Stat(list(hours)), "sentences_per_s": Stat(list(rates))}

    def hardware(self, size: str) -> dict[str, int]:
        """What the trained runs of ``size`` computed on (their records' ``hardware``) -> how many runs."""
        cells = {f"{row}.{size}" for row in self.trained}
        return dict(Counter(record.lineage.get(HARDWARE_TAG, "not recorded")
                            for (cell, _), record in sorted(self.records.items()) if cell in cells))

    def trend(self, row: str) -> dict[str, Any] | None:
        """The margin's trend in log(sentences), where 3 sizes or more are measured (None below)."""
        points = [(self.sentences[size], m) for size in self.sizes if self.sentences.get(size)
                  for m in self.margin(row, size, self.main).values]
        if len({x for x, _ in points}) < MIN_SIZES_FOR_TREND:
            return None
        return {**fit_trend(points, PAPER_CORPORA), "falls": self.falls(row)}

    def falls(self, row: str) -> list[dict[str, Any]]:
        """Where the row's margin falls from one measured size to the next larger beyond both seed spreads (the
        larger size's mean + std below the smaller's mean - std): there a straight line in log(sentences) does
        not describe the row, whatever its fit's interval says."""
        margins = [(size, self.margin(row, size, self.main)) for size in self.sizes if self.sentences.get(size)]
        measured = [(size, margin) for size, margin in margins if margin.values]
        return [{"from": a, "to": b, "from_margin": m.as_dict(), "to_margin": n.as_dict()}
                for (a, m), (b, n) in zip(measured, measured[1:])
                if n.mean + (n.std or 0.0) < m.mean - (m.std or 0.0)]


def vectors(record: RunRecord) -> str:
    return record.lineage.get("wordvecs.hash", "unknown")


def cut_sentences(corpus: str, sizes: list[str], borrowed: Iterable[str] = ()) -> dict[str, int | None]:
    """Each cut's sentences from its statistics (reports/dvc.yaml's curve_cut writes them); None before it is cut. A
    borrowed size is the whole corpus the cuts come from (the borrowed studies trained on it): every cut's
    statistics count its sentences (``source_sentences``)."""
    found, source = {}, None
    for size in sizes:
        path = METRICS / corpus / size / "cut.json"
        stats = json.loads(path.read_text()) if path.is_file() else {}
        found[size], source = stats.get("sentences"), stats.get("source_sentences", source)
    return {size: source if size in borrowed else n for size, n in found.items()}


def objective_of_cell(study, row: str) -> str:
    cell = next(c for c in study.parts[0].matrix.cells if c.name.rsplit(".", 1)[0] == row)
    return "generative" if cell.objective == "gen" else "discriminative"


def render(curve: Curve) -> tuple[str, dict[str, Any]]:
    study, main, seeds = curve.study, curve.main, curve.study.spec.seeds
    main_title, stsb_title = curve.columns[main].title, curve.columns[STSB].title
    sizes_label = {s: (f"{curve.sentences[s]:,} sentences" if curve.sentences.get(s) else "not cut yet")
                   for s in curve.sizes}
    lines = [f"# {study.name}: the learning curve", "",
             f"Generated by `python -m skipview.platform.studies.learning_curve {study.name}` from the run records "
             f"in `reports/{study.name}/runs/` and the cuts' statistics: do not edit. Question: {study.spec.question}",
             "", f"Rows as in `studies/{study.name}.yaml`; the same settings at every size (three epochs of that cut); "
             "uSIF, SIF and the average on each cut's own fastText vectors. Pearson ×100, ensemble view, mean ± std "
             "over seeds (n = seeds measured).", ""]
    missing = [f"`{row}` at {size}" for size in curve.sizes for row in curve.rows
               if not curve.values(row, size, main)]
    if missing:
        lines += [f"**Not measured yet** ({len(missing)} of {len(curve.sizes) * len(curve.rows)} row-size pairs; "
                  f"a trained row counts as measured from its first seed): " + ", ".join(missing) + ".", ""]
    borrowed = {size: found for size in curve.sizes if (found := curve.borrowed(size))}
    for size, sources in borrowed.items():
        for source, differ in sources.items():
            lines += [f"**{size} is borrowed** from `{source}` (`borrow` in the study file): its records of these "
                      "rows, trained on the whole corpus and its own fastText vectors, never trained here. Their "
                      "settings differ from this study's own runs of the same rows and seeds in: "
                      + ("; ".join(differ) or "nothing but the data") + ".", ""]
    unpaired = {size: runs for size in curve.sizes if (runs := curve.unpaired(size))}
    for size, runs in unpaired.items():
        lines += [f"**No uSIF on the same vectors** at {size}: {', '.join(runs)} (a machine that trained the cut's "
                  "fastText vectors anew): left out of the margins until uSIF is computed on those vectors.", ""]
    several = [size for size in curve.sizes if len(curve.usifs(size, main)) > 1]
    if several:
        lines += [f"**Several word vectors** at {', '.join(several)}: uSIF is shown on each; every run's margin is "
                  "over uSIF on its own vectors.", ""]
    data: dict[str, Any] = {"sizes": {}, "trends": {}, "machine": hardware(), "unpaired": unpaired,
                            "borrowed": borrowed}
    for title, column in ((main_title, main), (stsb_title, STSB)):
        lines += [f"## {title}", "", "| row | " + " | ".join(f"{s} ({sizes_label[s]})" for s in curve.sizes)
                  + " |", "|---" * (len(curve.sizes) + 1) + "|"]
        for row in curve.rows:
            lines.append(f"| {row} | " + " | ".join(text(curve.spread(row, s, column), seeds) for s in curve.sizes)
                         + " |")
        lines.append("")
    lines += ["## Margin over uSIF on the same vectors", "",
              f"Each seed's {main_title} minus uSIF's on the same word vectors. *Above beyond its seed spread*: the "
              "mean margin exceeds the row's std over seeds (the rule the study reports judge claims by); *tie*: inside it.", "",
              "| size | cut | uSIF | " + " | ".join(curve.trained) + " |",
              "|---" * (len(curve.trained) + 3) + "|"]
    for size in curve.sizes:
        usif = curve.usif(size, main)
        cells = []
        for row in curve.trained:
            margin = curve.margin(row, size, main)
            cells.append("not measured" if not margin.values else f"{text(margin, seeds)}: {verdict(margin)}")
            data["sizes"].setdefault(size, {"sentences": curve.sentences.get(size), "rows": {}})["rows"][row] = {
                "margin": as_json(margin), "verdict": verdict(margin)}
        data["sizes"].setdefault(size, {"sentences": curve.sentences.get(size), "rows": {}})["usif"] = \
            curve.usifs(size, main)
        lines.append(f"| {size} | {sizes_label[size]} | {usif or 'not measured'} | "
                     + " | ".join(cells) + " |")
    lines.append("")
    for size in curve.sizes:
        above = [row for row in curve.trained if verdict(curve.margin(row, size, main)).startswith("above beyond")]
        measured = [row for row in curve.trained if curve.margin(row, size, main).values]
        lines.append(f"- {size}: " + ("no trained row measured yet" if not measured else
                                      (", ".join(f"`{r}`" for r in above) or "none") + " above uSIF beyond its "
                                      f"seed spread (of {', '.join(f'`{r}`' for r in measured)} measured)"))
    lines += ["", "## Trend of the margin and what it predicts at the paper's corpus sizes", "",
              f"Least squares of every seed's margin against ln(sentences), per trained row, fitted only where "
              f"{MIN_SIZES_FOR_TREND} sizes or more are measured; the {CONFIDENCE:.0%} interval is the fit's own "
              "(Student's t). **A prediction, not a measurement.** Beside it, the paper's margins (Table 3, "
              "average of STS12-16 and SICK-R): its models over fastText + WR.", ""]
    fitted = False
    for row in curve.trained:
        trend = curve.trend(row)
        data["trends"][row] = trend
        if trend is None:
            lines.append(f"- `{row}`: no trend: fewer than {MIN_SIZES_FOR_TREND} sizes measured "
                         f"({sum(bool(curve.margin(row, s, main).values) for s in curve.sizes)} so far).")
            continue
        fitted = True
        kind = objective_of_cell(curve.study, row)
        parts = []
        for corpus, p in trend["predictions"].items():
            name, model, baseline = PAPER_MARGINS[(kind, corpus)]
            parts.append(f"{corpus} ({p['sentences'] / 1e6:.1f}M): predicted {p['margin']:+.2f} "
                         f"[{p['low']:+.2f}, {p['high']:+.2f}]; paper {name} {model} vs fastText+WR {baseline}: "
                         f"{model - baseline:+.1f}")
        lines.append(f"- `{row}`: margin = {trend['intercept']:.2f} + {trend['slope_per_e']:.3f} ln(sentences), "
                     f"{trend['slope_per_decade']:+.2f} ± {trend['slope_std'] * math.log(10):.2f} per tenfold data "
                     f"({trend['points']} seed-size points, residual std {trend['residual_std']:.2f}). "
                     + "; ".join(parts) + ".")
        for fall in trend["falls"]:
            before, after = (curve.margin(row, fall[end], main) for end in ("from", "to"))
            lines.append(f"  **Not monotone**: its margin falls from {before.text(2)} at {fall['from']} to "
                         f"{after.text(2)} at {fall['to']}, beyond both seed spreads: a straight line in "
                         "log(sentences) misdescribes this row, so its prediction is the least to be trusted.")
    if fitted:
        lines += ["", "Assumptions that move the prediction: the margin stays linear in log(sentences) from ~1M to "
                  "134M (two more decades than measured; the interval does not cover a bend); the profile stays "
                  "this one (h 256, three epochs of each corpus, this search's settings), where the paper trains "
                  "d 1024 on BookCorpus or UMBC News; uSIF here is on vectors trained on the same cut, the paper's "
                  "fastText + WR on pretrained Common Crawl vectors (a baseline that does not move with the data); "
                  "STS15-16 are not in the data here, so the average is STS12-14 and SICK-R, the paper's STS12-16 "
                  "and SICK-R; and the seeds' spread is the only noise counted."]
    lines += ["", "## Time beside quality", "",
              "Training time only, per seed, mean ± std: the wall time of the training loop's throughput windows "
              "(its steps and checkpoints, every attempt of a run stopped and resumed, not the pause between them; "
              "not the start-up, the final save or the evaluation); CPU hours = those hours × the cores each run "
              f"held ({study.spec.cpus_per_worker:g} thread per model). Sentences/s: the sentences each step encoded "
              "(three epochs of the cut) over the training time. Both from wall time: on a machine shared with other "
              "work they bound the CPU time from above and the speed from below.", "",
              "| row | " + " | ".join(f"{s}: CPU hours" for s in curve.sizes) + " | "
              + " | ".join(f"{s}: sentences/s" for s in curve.sizes) + " |",
              "|---" * (2 * len(curve.sizes) + 1) + "|"]
    for row in curve.trained:
        costs = [curve.cost(row, s) for s in curve.sizes]
        lines.append(f"| {row} | " + " | ".join(text(c["cpu_hours"], seeds, 3) for c in costs) + " | "
                     + " | ".join(text(c["sentences_per_s"], seeds, 0) for c in costs) + " |")
        for size, cost in zip(curve.sizes, costs):
            data["sizes"][size]["rows"][row].update({key: as_json(value) for key, value in cost.items()})
    if data["borrowed"]:
        lines += ["", f"The costs at {', '.join(data['borrowed'])} are the borrowed studies' own: their precision and "
                  "machine (above), not this study's."]
    data["hardware"] = {size: curve.hardware(size) for size in curve.sizes}
    lines += ["", "What the trained runs computed on, per size (each record's `lineage.hardware`; runs before it was "
              "recorded say *not recorded*): " + "; ".join(
                  f"{size}: " + ", ".join(f"{kind} ({runs} run{'s' * (runs > 1)})" for kind, runs in kinds.items())
                  for size, kinds in data["hardware"].items() if kinds) + ".",
              "", f"This report was generated on: {data['machine']}. The run records' `lineage.git_commit` names the "
              "code of each run.", "",
              "![the curve](curve.png)", "", "![the margin](margin.png)", ""]
    return "\n".join(lines), data


def readme_table(study) -> str | None:
    """The README's lines for a learning curve, from its committed ``curve.json`` (None before it has one): each
    trained row's margin over uSIF at each size and the trend's prediction at BookCorpus size beside the paper's."""
    path = study.report_dir / "curve.json"
    if not path.is_file():
        return None
    data, report = json.loads(path.read_text()), (study.report_dir / "curve.md").as_posix()
    sizes = [size for size in study.spec.sizes if data["sizes"].get(size, {}).get("sentences")]
    corpus = "BookCorpus"
    lines = ["| trained row: margin over uSIF, ×100 | " + " | ".join(
                 f"{data['sizes'][size]['sentences'] / 1e6:.2f}M sentences" for size in sizes)
             + f" | predicted at {corpus} size ({PAPER_CORPORA[corpus] / 1e6:.0f}M), 95% | paper at {corpus} |",
             "|---" * (len(sizes) + 3) + "|"]
    for row, trend in data["trends"].items():
        margins = [Stat(data["sizes"][size]["rows"][row]["margin"]["values"]) for size in sizes]
        kind = objective_of_cell(study, row)
        name, model, baseline = PAPER_MARGINS[(kind, corpus)]
        prediction = "no trend yet (fewer than 3 sizes)" if trend is None else \
            "{margin:+.1f} [{low:+.1f}, {high:+.1f}]".format(**trend["predictions"][corpus]) \
            + ("; the margin is not monotone in size" if trend["falls"] else "")
        lines.append(f"| `{row}` | " + " | ".join(f"{m.mean:+.2f}" + (f" ± {m.std:.2f}" if m.std is not None else "")
                                                  + (f" (n={m.n})" if m.n < study.spec.seeds else "")
                                                  if m.values else "not yet" for m in margins)
                     + f" | {prediction} | {name}: {model - baseline:+.1f} over fastText + WR |")
    return (f"How the trained models' lead over uSIF on the same vectors grows with data ([{study.name}]({report}), "
            "the same settings at every size, mean ± std over seeds). The prediction is a log-linear fit "
            "extrapolated two decades past the data, **not a measurement**; its report says what moves it.\n\n"
            + "\n".join(lines) + "\n")


def readme_tables(studies) -> list[str]:
    """``readme_table`` of every learning curve among ``studies`` that has a committed curve."""
    return [table for study in studies if study.spec.sizes and (table := readme_table(study)) is not None]


def tables(curve: Curve) -> tuple[str, str]:
    """``curve.csv``: one line per row, size and seed (both columns); ``margin.csv``: trained rows' margins."""
    rows_out, margins_out = io.StringIO(), io.StringIO()
    rows_csv, margins_csv = csv.writer(rows_out, lineterminator="\n"), csv.writer(margins_out, lineterminator="\n")
    rows_csv.writerow(["sentences", "size", "row", "seed", curve.main, STSB])
    margins_csv.writerow(["sentences", "size", "row", "seed", "margin"])
    for size in curve.sizes:
        if not curve.sentences.get(size):
            continue
        for row in curve.rows:
            main, stsb = curve.values(row, size, curve.main), curve.values(row, size, STSB)
            for seed, value in main.items():
                rows_csv.writerow([curve.sentences[size], size, row, seed, f"{value:.4f}",
                                   f"{stsb[seed]:.4f}" if seed in stsb else ""])
        for row in curve.trained:
            for seed, margin in curve.margins(row, size, curve.main).items():
                if margin is not None:
                    margins_csv.writerow([curve.sentences[size], size, row, seed, f"{margin:.4f}"])
    return rows_out.getvalue(), margins_out.getvalue()


def charts(curve: Curve, out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sized = [s for s in curve.sizes if curve.sentences.get(s)]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for axis, column in zip(axes, (curve.main, STSB)):
        for row in curve.rows:
            points = [(curve.sentences[s], curve.spread(row, s, column)) for s in sized]
            points = [(x, spread) for x, spread in points if spread.values]
            if points:
                axis.errorbar([x for x, _ in points], [p.mean for _, p in points],
                              yerr=[p.std or 0 for _, p in points], marker="o", capsize=3, label=row,
                              linestyle="--" if row.startswith("fasttext") else "-")
        axis.set(xscale="log", xlabel="sentences (log)", ylabel="Pearson ×100", title=curve.columns[column].title)
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    write_aside(out_dir / "curve.png", lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)

    fig, axis = plt.subplots(figsize=(8, 4.5))
    axis.axhline(0, color="grey", linewidth=1)
    for row in curve.trained:
        points = [(curve.sentences[s], curve.margin(row, s, curve.main)) for s in sized]
        points = [(x, m) for x, m in points if m.values]
        if not points:
            continue
        line = axis.errorbar([x for x, _ in points], [m.mean for _, m in points], yerr=[m.std or 0 for _, m in points],
                             marker="o", capsize=3, label=f"{row} (measured)")
        trend = curve.trend(row)
        if trend is not None:
            xs = [min(x for x, _ in points) * 1.0, *(p["sentences"] for p in trend["predictions"].values())]
            fit = [trend["intercept"] + trend["slope_per_e"] * math.log(x) for x in xs]
            axis.plot(xs, fit, linestyle=":", color=line[0].get_color(), label=f"{row}: fitted trend (prediction)")
            for p in trend["predictions"].values():
                axis.errorbar([p["sentences"]], [p["margin"]],
                              yerr=[[p["margin"] - p["low"]], [p["high"] - p["margin"]]], marker="s",
                              fillstyle="none", capsize=4, color=line[0].get_color())
    for index, ((kind, corpus), (name, model, baseline)) in enumerate(PAPER_MARGINS.items()):
        axis.scatter([PAPER_CORPORA[corpus]], [model - baseline], marker="*", s=90, color="black",
                     label=None if index else "paper, Table 3: its model minus fastText+WR")
        axis.annotate(f"paper {name}", (PAPER_CORPORA[corpus], model - baseline), textcoords="offset points",
                      xytext=(5, 3), fontsize=8)
    axis.set(xscale="log", xlabel="sentences (log)", ylabel="margin over uSIF, ×100",
             title=f"{curve.columns[curve.main].title}: trained row minus uSIF (paper: minus fastText+WR)")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)
    fig.tight_layout()
    write_aside(out_dir / "margin.png", lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    from skipview.platform.studies.study import StudyError, load_study, resolve

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m skipview.platform.studies.learning_curve STUDY", file=sys.stderr)
        return 2
    try:
        study = load_study(resolve(argv[0]))
    except (StudyError, ValueError) as error:
        print(f"error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 1
    if not study.spec.sizes:
        print(f"error: {study.path}: no `sizes`: not a learning curve", file=sys.stderr)
        return 1
    curve = Curve(study, [*read_records(study.report_dir), *study.borrowed_records()],
                  cut_sentences(study.spec.corpus, study.spec.sizes, study.spec.borrow))
    text, data = render(curve)
    rows_csv, margins_csv = tables(curve)
    write_text_aside(study.report_dir / "curve.md", text)
    write_json_aside(study.report_dir / "curve.json", data)
    write_text_aside(study.report_dir / "curve.csv", rows_csv)
    write_text_aside(study.report_dir / "margin.csv", margins_csv)
    charts(curve, study.report_dir)
    print(f"wrote {study.report_dir}/curve.md, curve.json, curve.csv, margin.csv, curve.png, margin.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
