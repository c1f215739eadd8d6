"""A study is one typed file, ``studies/<name>.yaml``, that holds everything it is: the question, the base training
settings, the rows it trains and compares (by name from ``studies/catalogue.yaml``, or its own under ``define``),
the claims it checks, seeds, tasks, protocol, component fit, and the analyses that read its models afterwards.
``skipview study run <name>`` runs or resumes it and writes the report; ``skipview study analyse <name>`` runs its
analyses; ``skipview study index`` regenerates what is derived from all study files: ``reports/INDEX.md`` (what the
studies have shown), README.md's results table, and ``studies/index.yaml`` (the list DVC's two study stages iterate
over).

Keys of a study file (every one is checked; an unknown or bad key is an error naming the file and line):

``question``        one line: what the study asks (the index's first column).
``corpus``          the prepared corpus and word vectors: ``data/<corpus>/prepared``, ``data/<corpus>/wordvecs``.
``sizes``           a learning curve: the corpus is nested cuts (``data/<corpus>/prepared/<size>``,
                    ``data/<corpus>/wordvecs/<size>``; ``skipview data cut``) and every row runs on each cut with the
                    same settings, as ``<row>.<size>`` (``Matrix.at_size``; ``study run --sizes`` runs some of them).
``borrow``          a learning curve's sizes that other studies (files beside this one) already ran with the same rows
                    and settings: ``{all: [table6_trained]}`` reads their records of this study's rows as
                    ``<row>.<size>`` (``Study.borrowed_records``) and never trains that size.
``borrow_rows``     rows another study (a file beside this one) measured, reported beside this study's and never run:
                    ``{table6_trained: {rows: [disc-fg], analysis: classification}}``. Their cost is that study's
                    run records'; their numbers its ``supervised`` analysis's (``reports/<study>/<analysis>.json``,
                    the rows of this study's component fit), or without ``analysis`` its records' own. Either must
                    have been measured under this study's protocol and component fit, or the numbers would not
                    compare: checked when the study is read. The report says where each row comes from.
``config``          base training settings (a YAML file as for ``skipview train --config``; a search's
                    ``best_config.yaml``, which DVC then runs first), optional.
``settings``        typed overrides of the base, dotted keys (``objective_settings.hidden_size: 256``).
``cells``           the rows the study runs, in the catalogue or under ``define`` (trained, trained outside the study,
                    combined, reference).
``define``          the study's own rows (``cells``, ``combined``, ``references``; schema: platform/studies/matrix.py)
                    and the directions it checks on them (``claims``, as a catalogue's claim set).
``claims``          names of the catalogue's claim sets to check (those whose two rows the study has).
``columns``         the report's columns, by name in the catalogue (default: the unsupervised ones).
``cell_settings``   per cell, dotted overrides of that cell's training settings (a generative cell at the
                    generative search's batch size and rate while the discriminative cells keep theirs).
``seeds``           seeds per trained cell (mean +- std in the report); a row trained outside the study has the seeds
                    it names among them, each row's n in the report.
``references``      false: skip the reference rows among ``cells``.
``tasks``, ``protocol``, ``component_fit``: the evaluation of every row (``skipview evaluate --help``).
``workers``, ``cpus_per_worker``, ``gpus_per_worker``: each model's Ray Train workers.
``warm_start``      the study (a file beside this one) whose runs of the same cells and seeds this one continues.
``headline``        the row and the baseline the index quotes (``cell/view`` each) and the column.
``analyses``        named steps run on the study's models (platform/studies/analyses/: every kind and its keys).

The study's name is the file's stem: the prefix of its Train runs under ``runs/``, its MLflow experiment (so
rerunning it finds what is already trained), and its report folder ``reports/<name>/`` (the report, the chart, the
summary, the training curves, one record per finished run and each analysis's output; a README there is the
study's own text).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from skipview.platform.studies.analyses import Analysis, Step, Supervised, check_rows, commands, measured_rows
from skipview.platform.studies.matrix import (CATALOGUE, HOURS, SENTENCES_SEEN, Cell, Define, Matrix, load_catalogue,
                                             pick)
from skipview.platform.studies.report import BORROWED_FROM, BORROWED_METRICS, RunRecord, read_records
from skipview.platform.studies.runner import Plan, StudySettings, cell_settings, load_base, model_dir
from skipview.platform.training.config import TrainSettings
from skipview.platform.yaml_source import describe, load_model, load_with_lines, written

STUDIES_DIR = Path("studies")
REPORTS = Path("reports")
INDEX = REPORTS / "INDEX.md"
DVC_INDEX = STUDIES_DIR / "index.yaml"
ANALYSES_CODE = "models"              # an analysis's input when it reads no model from outside the study
UNSUPERVISED_COLUMNS = ("sts_avg", "sts12", "sts13", "sts14", "sickr_unsup", "stsb_unsup")
SIDE = r"^[^/]+/[^/]+$"


class StudyError(ValueError):
    """A study file that is not valid; the message names the file, line and key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Headline(_Strict):
    row: str = Field(pattern=SIDE, description="cell/view of the study's answer")
    baseline: str = Field(pattern=SIDE, description="cell/view it is compared with")
    column: str = "sts_avg"


class BorrowRows(_Strict):
    rows: list[str] = Field(min_length=1)
    analysis: str | None = None


class StudyFile(Plan):
    question: str = Field(min_length=1)
    corpus: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    sizes: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+$")]] = []
    borrow: dict[str, list[str]] = {}
    borrow_rows: dict[str, BorrowRows] = {}
    config: str | None = None
    settings: dict[str, Any] = {}
    cells: list[str] = Field(min_length=1)
    define: Define = Define()
    claims: list[str] = []
    columns: list[str] = list(UNSUPERVISED_COLUMNS)
    cell_settings: dict[str, dict[str, Any]] = {}
    headline: Headline | None = None
    analyses: dict[str, Analysis] = {}


@dataclass(frozen=True)
class Part:
    """What one ``run_study`` call trains: the study's rows on one corpus (its ``size`` of a learning curve, or None:
    the whole study)."""
    size: str | None
    base: TrainSettings
    matrix: Matrix


class Study:
    """A validated study: its file, its matrix (restricted to its cells, with their settings; every size's rows in a
    learning curve), its base training settings (the largest size's), its parts (``Part``: one per size, or the
    whole study), and the ``StudySettings`` the ablation runner takes."""

    def __init__(self, path: Path, spec: StudyFile, matrix: Matrix, base: TrainSettings,
                 parts: list[Part] | None = None):
        self.path, self.spec, self.matrix, self.base = path, spec, matrix, base
        self.parts = parts or [Part(None, base, matrix)]

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def report_dir(self) -> Path:
        return REPORTS / self.name

    @property
    def own_parts(self) -> list[Part]:
        """The parts this study trains: every part but the sizes it borrows."""
        return [part for part in self.parts if part.size not in self.spec.borrow]

    def borrowed_records(self) -> list[RunRecord]:
        """The run records of the sizes the study borrows: each named study's records of this study's rows,
        renamed ``<row>.<size>``, their lineage naming the study they come from (``borrowed_from``). Every record
        is kept, a baseline that two studies measured on their own vectors included (see ``learning_curve``). Then
        those of the rows it borrows (``borrow_rows``)."""
        rows = set(self.spec.cells)
        sizes = [replace(record, cell=f"{record.cell}.{size}", lineage={**record.lineage, BORROWED_FROM: name})
                 for size, names in self.spec.borrow.items() for name in names
                 for record in read_records(REPORTS / name) if record.cell in rows]
        return sizes + [record for name, entry in self.spec.borrow_rows.items()
                        for record in _borrowed_rows(self.path.parent, name, entry, self.spec.component_fit)]

    def settings(self, *, seeds: int | None = None, first_seed: int = 0, storage: str = "runs") -> StudySettings:
        plan = self.spec.model_dump(include=set(Plan.model_fields))
        return StudySettings(**{**plan, "seeds": seeds or plan["seeds"]}, name=self.name, storage=storage,
                             experiment=self.name, first_seed=first_seed)

    def command(self) -> str:
        return f"skipview study run {self.name}"

    def analysis_steps(self, storage: str = "runs") -> list[Step]:
        settings = self.settings(storage=storage)
        combined = {row.name: row.combine for row in self.matrix.combined}
        cells = {row.name: row for row in self.matrix.cells}
        return commands(self.name, self.spec.corpus, self.spec.seeds, self.spec.analyses,
                        lambda cell, seed: str(model_dir(settings, cells[cell], seed)), combined)

    def dvc_entry(self) -> dict[str, Any]:
        """What DVC's study stage needs to know of this study (studies/index.yaml, generated)."""
        return {"corpus": self.spec.corpus, "after": self.upstream.as_posix()}

    @property
    def upstream(self) -> Path:
        """The one file this study reads besides its own file, the data and the code, whose change must retrain it:
        the report of the study it continues, else its base config (a search's best settings), else the numbers of
        the first rows it borrows, else the catalogue. DVC cannot read a study file, so ``skipview study index``
        writes it into studies/index.yaml (``studies.<name>.after``); through it ``dvc repro`` runs the search or
        the shorter study first."""
        if self.spec.warm_start:
            return REPORTS / self.spec.warm_start / "ablation_summary.json"
        if self.spec.config:
            return Path(self.spec.config)
        for name, entry in self.spec.borrow_rows.items():
            return _borrowed_numbers(name, entry)
        return CATALOGUE


def study_paths(root: Path = Path(".")) -> list[Path]:
    """Every study file: ``studies/*.yaml`` but the catalogue and the generated DVC index."""
    return sorted(p for p in (root / STUDIES_DIR).glob("*.yaml") if p.name not in (CATALOGUE.name, DVC_INDEX.name))


def resolve(name_or_path: str | Path, root: Path = Path(".")) -> Path:
    """``table6_trained``, ``studies/table6_trained.yaml`` or any path to a study file."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = root / STUDIES_DIR / f"{path.name}.yaml"
    if not path.is_file():
        known = [p.stem for p in study_paths(root)]
        raise StudyError(f"{path}: no such study file (studies: {', '.join(known) or 'none'})")
    return path


def load_study(path: str | Path, data_root: Path = Path("data"), senteval_dir: Path | None = None) -> Study:
    """Read and check a study file: its keys, its matrix rows, the base settings and every trained cell's settings
    (typed through the objective registry), so a typo fails here, naming the file and line, not an hour later."""
    path = Path(path)
    spec = load_model(path, StudyFile, StudyError)
    _, lines = load_with_lines(path)

    def fail(at: tuple[str, ...], why: str) -> StudyError:
        return StudyError(describe(path, lines, [(at, why)]))

    for size, names in spec.borrow.items():
        if size not in spec.sizes:
            raise fail(("borrow", size), f"not one of the study's sizes ({', '.join(spec.sizes) or 'none'})")
        for name in names:
            if name == path.stem or not (path.parent / f"{name}.yaml").is_file():
                raise fail(("borrow", size), f"{name}: no other study file {name}.yaml beside this one")
    if spec.warm_start and not (path.parent / f"{spec.warm_start}.yaml").is_file():
        raise fail(("warm_start",), f"no study file {spec.warm_start}.yaml beside this one: a study continues "
                                    f"another study's runs")
    borrowed = [row for name, entry in spec.borrow_rows.items()
                for row in _rows_to_borrow(path, lines, spec, name, entry, data_root, senteval_dir)]
    try:
        matrix = pick(load_catalogue(), spec.define, spec.cells, spec.claims, spec.columns, borrowed)
    except ValueError as error:
        key, _, why = str(error).partition(": ")
        raise fail((key,) if key in StudyFile.model_fields else ("cells",), why if key in StudyFile.model_fields
                   else str(error)) from None
    unknown = sorted(set(spec.cell_settings) - {c.name for c in matrix.cells})
    if unknown:
        raise fail(("cell_settings", unknown[0]), f"not a trained cell of this study "
                   f"(cells: {', '.join(c.name for c in matrix.cells)})")
    matrix = matrix.model_copy(update={"cells": [c.model_copy(update={"train": {**c.train, **spec.cell_settings.get(
        c.name, {})}}) for c in matrix.cells]})
    sizes = spec.sizes or [""]

    def paths(size: str) -> dict[str, str]:
        return {"corpus": str(data_root / spec.corpus / "prepared" / size),
                "wordvecs": str(data_root / spec.corpus / "wordvecs" / size),
                "senteval_dir": str(senteval_dir or data_root / "senteval" / "downstream")}

    try:
        bases = [load_base(spec.config, paths(size), [], spec.settings, matrix, spec.references) for size in sizes]
    except (ValidationError, ValueError) as error:
        raise fail(("settings",), _first_error(error)) from None
    base, matrix = bases[-1]
    for cell in matrix.cells:
        try:
            cell_settings(base, cell, 0)
        except (ValidationError, ValueError) as error:
            at = ("cell_settings", cell.name) if cell.name in spec.cell_settings else ("settings",)
            raise fail(at, f"{cell.name}: {_first_error(error)}") from None
        beyond = sorted(set(cell.seeds or ()) - set(range(spec.seeds)))
        if beyond:
            raise fail(("seeds",), f"{cell.name} has seed {beyond[0]}, beyond the study's {spec.seeds} seeds "
                                   f"(0-{spec.seeds - 1}): it would never be evaluated")
    try:
        check_rows(spec.analyses, {c.name: set(c.views) for c in matrix.cells},
                   {c.name: c.combine for c in matrix.combined})
    except ValueError as error:
        raise fail(("analyses", str(error).split(":")[0].split(".", 1)[1]), str(error).split(": ", 1)[1]) from None
    if not spec.sizes:
        return Study(path, spec, matrix, base)
    parts = [Part(size, size_base, matrix.at_size(size)) for size, (size_base, _) in zip(sizes, bases)]
    return Study(path, spec, Matrix.joined([part.matrix for part in parts]), base, parts)


def _rows_to_borrow(path: Path, lines, spec: StudyFile, name: str, entry: BorrowRows, data_root: Path,
                    senteval_dir: Path | None) -> list[Cell]:
    """The rows ``entry`` borrows from the study ``name`` (a file beside ``path``), as that study defines them, with
    the views its numbers cover; a StudyError naming the line where they are not there or would not compare."""
    def fail(key: str, why: str) -> StudyError:
        return StudyError(describe(path, lines, [(("borrow_rows", name, key), why)]))

    other_path = path.parent / f"{name}.yaml"
    if name == path.stem or not other_path.is_file():
        raise fail("rows", f"no other study file {name}.yaml beside this one")
    other = load_study(other_path, data_root, senteval_dir)
    rows = {row.name: row for row in other.matrix.cells + other.matrix.combined}
    unknown = [row for row in entry.rows if row not in rows]
    if unknown:
        raise fail("rows", f"{', '.join(unknown)}: not a trained or combined row of {name} (rows: {', '.join(rows)})")
    if entry.analysis is None:
        measured = (other.spec.protocol, other.spec.component_fit)
        if measured != (spec.protocol, spec.component_fit):
            raise fail("rows", f"{name} measured protocol {measured[0]}, component fit {measured[1]}; this study's "
                               f"are {spec.protocol}, {spec.component_fit}: name an analysis of {name} that measured "
                               "its rows as this study does")
        return [rows[row] for row in entry.rows]
    analysis = other.spec.analyses.get(entry.analysis)
    if not isinstance(analysis, Supervised):
        raise fail("analysis", f"{entry.analysis}: not a supervised analysis of {name} (analyses: "
                               f"{', '.join(other.spec.analyses) or 'none'})")
    if analysis.protocol != spec.protocol or spec.component_fit not in analysis.fits:
        raise fail("analysis", f"{entry.analysis} measured protocol {analysis.protocol}, component fits "
                               f"{', '.join(analysis.fits)}; this study's are {spec.protocol}, {spec.component_fit}")
    views = {ref.row: ref.views for ref in analysis.models if ref.row is not None}
    missing = [row for row in entry.rows if row not in views]
    if missing:
        raise fail("rows", f"{', '.join(missing)}: not measured by {name}'s analysis {entry.analysis}")
    return [rows[row].model_copy(update={"views": {view: rows[row].views[view] for view in views[row]}})
            for row in entry.rows]


def _borrowed_numbers(name: str, entry: BorrowRows) -> Path:
    """Where the numbers of the rows borrowed from ``name`` are: its analysis's table, else its run records."""
    return REPORTS / name / (f"{entry.analysis}.json" if entry.analysis else "runs")


def _borrowed_rows(studies: Path, name: str, entry: BorrowRows, component_fit: str) -> list[RunRecord]:
    """The records of the rows ``entry`` borrows from the study ``name`` (its file in ``studies``): its run records'
    cost and lineage, and their numbers from its analysis (the rows of ``component_fit``, every task it ran), or
    their own. A seed the analysis did not measure is left out. Their training curves stay in that study's report:
    this one's curves are its own runs'."""
    records = [record for record in read_records(REPORTS / name) if record.cell in entry.rows]
    source = {BORROWED_FROM: name, BORROWED_METRICS: _borrowed_numbers(name, entry).as_posix()}
    if entry.analysis is None:
        return [replace(record, curves={}, lineage={**record.lineage, **source}) for record in records]
    analysis = load_study(studies / f"{name}.yaml").spec.analyses[entry.analysis]
    measured = measured_rows(_borrowed_numbers(name, entry), analysis, [component_fit], None)
    return [replace(record, curves={}, lineage={**record.lineage, **source},
                    metrics={**{key: record.metrics[key] for key in (HOURS, SENTENCES_SEEN) if key in record.metrics},
                             **measured[record.cell, record.seed].metrics})
            for record in records if (record.cell, record.seed) in measured]


def _first_error(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        return f"{'.'.join(written(first['loc']))}: {first['msg']}"
    return str(error).splitlines()[0]


# the strongest training-free row (issue 25): every index row quotes it beside the headline, where the study has it
USIF_ROW = "fasttext-usif/ensemble"


def _summary(study: Study) -> dict[str, Any] | None:
    """The study's committed ``ablation_summary.json`` (None before it has run)."""
    path = study.report_dir / "ablation_summary.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _stat(summary: dict[str, Any], side: str, column: str) -> dict[str, Any] | None:
    """Mean, std and n over seeds of ``side`` (cell/view) in one column of a summary (None where it has none)."""
    cell, view = side.split("/")
    return summary["cells"].get(cell, {}).get(view, {}).get(column)


def headline(study: Study) -> dict[str, Any] | None:
    """The index's row for a study: its headline cell and baseline from the committed summary (None without one)."""
    summary = _summary(study)
    if study.spec.headline is None or summary is None:
        return None
    line = study.spec.headline
    return {"row": line.row, "baseline": line.baseline, "column": line.column,
            "value": _stat(summary, line.row, line.column), "reference": _stat(summary, line.baseline, line.column),
            "usif": _stat(summary, USIF_ROW, line.column),
            "seeds": summary["cells"].get(line.row.split("/")[0], {}).get("seeds", 0)}


def _number(stat: dict[str, Any] | None) -> str:
    if not stat or stat.get("mean") is None:
        return "–"
    return f"{stat['mean']:.1f}" + (f" ± {stat['std']:.1f}" if stat.get("std") is not None else " (n=1)")


def render_index(studies: list[Study]) -> str:
    lines = ["# What skipview has shown", "",
             "Generated by `skipview study index` from `studies/*.yaml` and each study's `ablation_summary.json`: "
             "do not edit by hand. Each row: the study's question, its headline row (mean ± std over seeds, ×100) "
             "beside its baseline and uSIF (the strongest training-free encoder) on the same word vectors, and the "
             "command that reproduces it. uSIF '–': the study was run before uSIF was a reference row and its word "
             "vectors are not kept (fastText runs differ), so no same-vectors uSIF exists: README.md, 'uSIF beside the "
             "older studies', gives uSIF against SIF on later runs of the same vectors.", "",
             "| study | question | headline | value | baseline | value | uSIF | seeds | command |",
             "|---|---|---|---|---|---|---|---|---|"]
    for study in studies:
        row = headline(study)
        # a study not run yet has no ablation.md: its own README, where it has one, says what is under way
        page = "README.md" if row is None and (study.report_dir / "README.md").is_file() else "ablation.md"
        link = f"[{study.name}]({study.report_dir.relative_to(INDEX.parent).as_posix()}/{page})" \
            if study.report_dir.is_relative_to(INDEX.parent) else study.name
        if row is None:
            lines.append(f"| {link} | {study.spec.question} | not run yet | | | | | | `{study.command()}` |")
            continue
        lines.append(f"| {link} | {study.spec.question} | {row['row']} | {_number(row['value'])} | "
                     f"{row['baseline']} | {_number(row['reference'])} | {_number(row['usif'])} | {row['seeds']} | "
                     f"`{study.command()}` |")
    return "\n".join(lines) + "\n"


# README.md's results table, between these two lines, is written by `skipview study index` like reports/INDEX.md
README = Path("README.md")
RESULTS_BEGIN = "<!-- results: generated by `skipview study index` from the study summaries; do not edit -->"
RESULTS_END = "<!-- end of results -->"
# its rows: the multi-view paper's two models as trained at the profile Table 6 was measured at, then the best
# headline over seeds of any study; each beside the training-free uSIF and SIF of its own study (the same vectors)
PAPER_STUDY = "table6_trained"
PAPER_ROWS = {"disc-fg/ensemble": "the paper's discriminative (f, g)",
              "gen-invertible/ensemble": "the paper's generative (f, g), invertible"}
# and skip-thought trained to a plateau on the same corpus (issue 57), its study's headline row
SKIPTHOUGHT_STUDY = "skipthought"
SIF_ROW = "fasttext-sif/ensemble"
RESULTS_COLUMN = "sts_avg"


def render_readme_results(studies: list[Study], curves: list[str] = ()) -> str:
    """The README's results table (the lines between RESULTS_BEGIN and RESULTS_END) from the committed summaries,
    followed by ``curves`` (the learning curves' tables, ``learning_curve.readme_tables``)."""
    by_name = {study.name: study for study in studies}
    rows = [(by_name[PAPER_STUDY], side, label) for side, label in PAPER_ROWS.items()]
    over_seeds = [(row["value"]["mean"], study.name) for study in studies if (row := headline(study))
                  and row["column"] == RESULTS_COLUMN and row["value"] and row["value"].get("std") is not None]
    best = by_name[max(over_seeds)[1]]
    rows.append((best, best.spec.headline.row, "the best trained model"))
    skipthought = by_name[SKIPTHOUGHT_STUDY]
    rows.append((skipthought, skipthought.spec.headline.row, "skip-thought, evaluated as its paper does"))
    title = next(c.title for c in by_name[PAPER_STUDY].matrix.columns if c.name == RESULTS_COLUMN)
    lines = [f"| model | {title}, ×100 | uSIF | SIF | seeds | study |", "|---|---|---|---|---|---|"]
    for study, side, label in rows:
        summary = _summary(study) or {"cells": {}}           # a study not run yet: its row says so
        stats = [_number(_stat(summary, row, RESULTS_COLUMN)) for row in (side, USIF_ROW, SIF_ROW)]
        seeds = summary["cells"].get(side.split("/")[0], {}).get("seeds", "not run yet")
        lines.append(f"| {label}: `{side}` | {' | '.join(stats)} | {seeds} | [{study.name}]({_report(study)}) |")
    paper = _summary(by_name[PAPER_STUDY])
    lines += ["", f"The paper's Table 6 directions at this size ([{PAPER_STUDY}]({_report(by_name[PAPER_STUDY])})): "
              f"{paper['claims_measured']} measured, {paper['claims_reproduced']} reproduced, "
              f"{paper['claims_tied']} ties, {paper['claims_reversed']} reversed."]
    for curve in curves:
        lines += ["", curve.rstrip("\n")]
    return "\n".join(lines) + "\n"


def _report(study: Study) -> str:
    """The study's report as a link from the repository root: its own README where it has one."""
    readme = study.report_dir / "README.md"
    return (readme if readme.is_file() else study.report_dir / "ablation.md").as_posix()


def with_readme_results(readme: str, table: str) -> str:
    """``readme`` with the text between its two results markers replaced by ``table``."""
    before, begin, rest = readme.partition(RESULTS_BEGIN + "\n")
    _, end, after = rest.partition(RESULTS_END)
    if not begin or not end:
        raise StudyError(f"{README}: no results markers ({RESULTS_BEGIN} ... {RESULTS_END}) to write the table between")
    return before + begin + table + end + after


def render_dvc_index(studies: list[Study]) -> str:
    """studies/index.yaml: each study's corpus and upstream (``studies``), and each analysis of each study with the
    model directories outside the study it reads (``analyses``), for reports/dvc.yaml's foreach stages."""
    import yaml

    entries = {"studies": {study.name: study.dvc_entry() for study in studies},
               "analyses": {f"{step.study}.{step.name}": {"study": step.study, "name": step.name,
                                                           "corpus": study.spec.corpus,
                                                           # DVC expands no list into deps: one input each
                                                           "input": step.inputs[0] if step.inputs else ANALYSES_CODE}
                            for study in studies for step in study.analysis_steps()}}
    return ("# Generated by `skipview study index` from studies/*.yaml: do not edit. reports/dvc.yaml's study and\n"
            "# study_analysis stages iterate over it (DVC cannot read a study file).\n"
            + yaml.safe_dump(entries, sort_keys=False))
