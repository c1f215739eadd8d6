"""A study is one typed file, ``studies/<name>.yaml``: the question, the base training settings, the rows of a matrix
it trains and compares, seeds, tasks, protocol, component fit, budget and where its report goes. ``skipview study
run <name>`` runs or resumes it and writes the report; ``skipview study index`` regenerates the index of what the
studies have shown (``reports/INDEX.md``) from their summaries.

Keys of a study file (every one is checked; an unknown or bad key is an error naming the file and line):

``question``        one line: what the study asks (the index's first column).
``corpus``          the prepared corpus and word vectors: ``data/<corpus>/prepared``, ``data/<corpus>/wordvecs``.
``config``          base training settings (a YAML file as for ``skipview train --config``), optional.
``settings``        typed overrides of the base, dotted keys (``objective_settings.hidden_size: 256``).
``matrix``          the matrix file whose rows the study runs (default: the paper's Table 6,
                    ``platform/tuning/ablation.yaml``); ``cells`` picks rows of it (with their claims).
``cell_settings``   per cell, dotted overrides of that cell's training settings (a generative cell at the
                    generative search's batch size and rate while the discriminative cells keep theirs).
``seeds``, ``references``, ``tasks``, ``protocol``, ``component_fit``, ``workers``, ``cpus_per_worker``,
``gpus_per_worker``: as the ``skipview ablation`` options of the same names.
``warm_start``      the study (a file beside this one) whose runs of the same cells and seeds this one continues.
``headline``        the row and the baseline the index quotes (``cell/view`` each) and the column.

The study's name is the file's stem: the prefix of its Train runs under ``runs/``, its MLflow experiment (so
rerunning it finds what is already trained), and its report folder ``reports/<name>/`` (the report, the chart, the
summary, the training curves and one record per finished run; a README there is the study's own text).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from skipview.platform.training.config import TrainSettings
from skipview.platform.tuning.ablation import REPORT_TASKS, StudySettings, cell_settings, load_base
from skipview.platform.tuning.matrix import DEFAULT_MATRIX, Matrix, load_matrix
from skipview.platform.tuning.yaml_source import describe, load_model, load_with_lines, written

STUDIES_DIR = Path("studies")
REPORTS = Path("reports")
INDEX = REPORTS / "INDEX.md"
SIDE = r"^[^/]+/[^/]+$"


class StudyError(ValueError):
    """A study file that is not valid; the message names the file, line and key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Headline(_Strict):
    row: str = Field(pattern=SIDE, description="cell/view of the study's answer")
    baseline: str = Field(pattern=SIDE, description="cell/view it is compared with")
    column: str = "sts_avg"


class StudyFile(_Strict):
    question: str = Field(min_length=1)
    corpus: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    config: str | None = None
    settings: dict[str, Any] = {}
    matrix: str = str(DEFAULT_MATRIX.relative_to(Path(__file__).parents[2]))
    cells: list[str] | None = None
    cell_settings: dict[str, dict[str, Any]] = {}
    seeds: int = Field(3, ge=1)
    references: bool = True
    tasks: list[str] = list(REPORT_TASKS)
    protocol: Literal["full", "fast"] = "full"
    component_fit: Literal["subset", "subset-stacked", "subset-sides", "task"] = "subset"
    workers: int = Field(1, ge=1)
    cpus_per_worker: float = Field(1, gt=0)
    gpus_per_worker: float = Field(0, ge=0)
    warm_start: str | None = None
    headline: Headline | None = None


class Study:
    """A validated study: its file, its matrix (restricted to its cells, with their settings), its base training
    settings, and the ``StudySettings`` the ablation runner takes."""

    def __init__(self, path: Path, spec: StudyFile, matrix: Matrix, base: TrainSettings):
        self.path, self.spec, self.matrix, self.base = path, spec, matrix, base

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def report_dir(self) -> Path:
        return REPORTS / self.name

    def settings(self, *, seeds: int | None = None, first_seed: int = 0, storage: str = "runs") -> StudySettings:
        spec = self.spec
        return StudySettings(name=self.name, storage=storage, experiment=self.name, seeds=seeds or spec.seeds,
                             first_seed=first_seed, references=spec.references, workers=spec.workers,
                             cpus_per_worker=spec.cpus_per_worker, gpus_per_worker=spec.gpus_per_worker,
                             tasks=tuple(spec.tasks), protocol=spec.protocol, component_fit=spec.component_fit,
                             warm_start=spec.warm_start)

    def command(self) -> str:
        return f"skipview study run {self.name}"

    @property
    def upstream(self) -> Path:
        """The one file this study reads besides its own file, the data and the code, whose change must retrain it:
        the report of the study it continues, else its base config (a search's best settings), else its matrix. DVC
        cannot derive a stage's dependencies from the study file, so params.yaml names it (`studies.<name>.after`)
        and a test holds the two equal; through it ``dvc repro`` runs the search or the shorter study first."""
        if self.spec.warm_start:
            return REPORTS / self.spec.warm_start / "ablation_summary.json"
        return Path(self.spec.config or self.spec.matrix)


def resolve(name_or_path: str | Path, root: Path = Path(".")) -> Path:
    """``table6_trained``, ``studies/table6_trained.yaml`` or any path to a study file."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = root / STUDIES_DIR / f"{path.name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (root / STUDIES_DIR).glob("*.yaml"))
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

    if spec.warm_start and not (path.parent / f"{spec.warm_start}.yaml").is_file():
        raise fail(("warm_start",), f"no study file {spec.warm_start}.yaml beside this one: a study continues "
                                    f"another study's runs")
    try:
        matrix = load_matrix(spec.matrix)
        if spec.cells:
            matrix = matrix.subset(spec.cells)
    except ValueError as error:
        raise fail(("cells",) if spec.cells else ("matrix",), str(error)) from None
    unknown = sorted(set(spec.cell_settings) - {c.name for c in matrix.cells})
    if unknown:
        raise fail(("cell_settings", unknown[0]), f"not a trained cell of this study "
                   f"(cells: {', '.join(c.name for c in matrix.cells)})")
    matrix = matrix.model_copy(update={"cells": [c.model_copy(update={"train": {**c.train, **spec.cell_settings.get(
        c.name, {})}}) for c in matrix.cells]})
    paths = {"corpus": str(data_root / spec.corpus / "prepared"), "wordvecs": str(data_root / spec.corpus / "wordvecs"),
             "senteval_dir": str(senteval_dir or data_root / "senteval" / "downstream")}
    try:
        base, matrix = load_base(spec.config, paths, [], spec.settings, matrix, spec.references)
    except (ValidationError, ValueError) as error:
        raise fail(("settings",), _first_error(error)) from None
    for cell in matrix.cells:
        try:
            cell_settings(base, cell, 0)
        except (ValidationError, ValueError) as error:
            at = ("cell_settings", cell.name) if cell.name in spec.cell_settings else ("settings",)
            raise fail(at, f"{cell.name}: {_first_error(error)}") from None
    return Study(path, spec, matrix, base)


def _first_error(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        return f"{'.'.join(written(first['loc']))}: {first['msg']}"
    return str(error).splitlines()[0]


# the strongest training-free row (issue 25): every index row quotes it beside the headline, where the study has it
USIF_ROW = "fasttext-usif/ensemble"


def headline(study: Study) -> dict[str, Any] | None:
    """The index's row for a study: its headline cell and baseline from the committed summary (None without one)."""
    summary_path = study.report_dir / "ablation_summary.json"
    if study.spec.headline is None or not summary_path.is_file():
        return None
    summary = json.loads(summary_path.read_text())
    line = study.spec.headline

    def stat(side: str) -> dict[str, Any] | None:
        cell, view = side.split("/")
        return summary["cells"].get(cell, {}).get(view, {}).get(line.column)

    return {"row": line.row, "baseline": line.baseline, "column": line.column, "value": stat(line.row),
            "reference": stat(line.baseline), "usif": stat(USIF_ROW),
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
        link = f"[{study.name}]({study.report_dir.relative_to(INDEX.parent).as_posix()}/ablation.md)" \
            if study.report_dir.is_relative_to(INDEX.parent) else study.name
        if row is None:
            lines.append(f"| {link} | {study.spec.question} | not run yet | | | | | | `{study.command()}` |")
            continue
        lines.append(f"| {link} | {study.spec.question} | {row['row']} | {_number(row['value'])} | "
                     f"{row['baseline']} | {_number(row['reference'])} | {_number(row['usif'])} | {row['seeds']} | "
                     f"`{study.command()}` |")
    return "\n".join(lines) + "\n"
