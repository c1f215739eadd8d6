"""The rows of studies as data: a study's matrix is the rows it trains and compares, picked by name from the
catalogue (``studies/catalogue.yaml``, every row defined once) or defined by the study itself, with the report's
columns and the paper's claims it checks.

Keys of a row (catalogue ``cells``, ``combined``, ``references``, or a study's ``define``):

``name``        unique, used in run names, record files and tags.
``objective``   a trained model (``gen``/``disc``/``skipthought``); ``settings`` override the objective's settings,
                ``train`` the cell's other training settings (dotted keys, e.g. ``batch_size``).
``baseline``    instead: ``avg``, ``wr``, ``sif`` or ``usif``, computed from the word vectors with no training.
``combine``     instead: ``[cell/view, cell/view]`` of two trained cells of the same seed, ensembled (Table 6 does it
                for the single-view f and g models and for f1 with g1); its training cost is the sum of its parts'.
                ``ensemble``: ``mean`` (the multi-view paper's: the parts' vectors averaged on unsupervised tasks,
                concatenated on supervised ones) or ``concatenation`` (in both: combine-skip, Kiros et al. 2015
                section 3.1; two separately trained spaces have no coordinates in common to average, and the cosine
                of two concatenations of unit vectors is the mean of the parts' cosines). Its seeds are those both
                parts have.
``run``         with ``objective``: a model trained outside the study, by ``skipview train`` over hours and sessions
                (issue 57): its run folder (``STORAGE/NAME``) and ``model``, the model directory to evaluate, each
                with ``{seed}``; ``seeds``, the seeds it has (default: the study's). The study evaluates it and
                records the run's hours and sentences seen; it never trains it.
``tags``        MLflow tags (strings) the UI's compare view groups by; ``views``: encoder view name -> report label
                (the ``SentenceEncoder``'s names: f, g, f1, f2, g1, g2, uni, bi, and ``ensemble``).

A study may also report rows another study measured (its ``borrow_rows``: ``Matrix.borrowed``), which it never runs.

The catalogue also holds the report ``columns`` (``name``, ``title``, ``metrics``: evaluation metric keys averaged
per run over those the run has) and named ``claims`` sets (``better``/``worse`` as ``cell/view``, ``column``,
``paper``): directions to check.

Every run of a study carries the tags ``skipview.study=ablation``, ``cell``, ``seed`` and the row's own tags,
logs its evaluation as ``<view>/<metric>`` plus ``train/hours`` and ``train/sentences_seen`` (``metric_key``
below), and is tagged ``skipview.ablation.evaluated`` when complete: the report builder reads nothing else. (The
tag values keep the name the runner once had, so the MLflow runs and records made before stay readable.)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from skipview.models.registry import ObjectiveName
from skipview.platform.yaml_source import load_model

CATALOGUE = Path("studies") / "catalogue.yaml"
STUDY_TAG = "skipview.study"
STUDY = "ablation"
CELL_TAG = "cell"
SEED_TAG = "seed"
SIZE_TAG = "size"           # a learning curve's corpus size (Matrix.at_size)
EVALUATED_TAG = "skipview.ablation.evaluated"     # set once every view is evaluated: the run is complete
ENSEMBLE = "ensemble"
HOURS = "train/hours"
SENTENCES_SEEN = "train/sentences_seen"
SUMMARY = "summary"         # a run's report columns as metrics summary/<column> (ablation.summary_metrics)
TRAIN_PARAMS = "train"      # a trained run's settings are its params train.<setting> (see ablation's docstring)
SEEDED = r"\{seed\}"         # a path pattern of a row trained outside the study: one run and model per seed


class MatrixError(ValueError):
    """An ablation-matrix file that is not valid; the message names the file, line and key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Cell(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.+-]+$")
    objective: ObjectiveName | None = None
    baseline: Literal["avg", "wr", "sif", "usif"] | None = None
    combine: list[Annotated[str, Field(pattern=r"^[^/]+/[^/]+$")]] | None = Field(None, min_length=2, max_length=2)
    ensemble: Literal["mean", "concatenation"] = "mean"
    run: str | None = Field(None, pattern=SEEDED)
    model: str | None = Field(None, pattern=SEEDED)
    seeds: list[Annotated[int, Field(ge=0)]] | None = Field(None, min_length=1)
    settings: dict[str, Any] = {}
    train: dict[str, Any] = {}      # dotted overrides of the cell's training settings (a study's cell_settings)
    tags: dict[str, str] = {}
    views: dict[Annotated[str, Field(pattern=r"^[^/]+$")], str] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_kind(self):
        if sum(x is not None for x in (self.objective, self.baseline, self.combine)) != 1:
            raise ValueError("give exactly one of objective (a trained model), baseline (avg, wr, sif, usif) or combine "
                             "(two cell/view of trained cells)")
        if self.objective is None and (self.settings or self.train or set(self.views) != {ENSEMBLE}):
            raise ValueError("a baseline or combined row has no settings and one representation: "
                             "views: {ensemble: <label>}")
        if self.ensemble != "mean" and self.combine is None:
            raise ValueError("ensemble: only a combined row ensembles its parts")
        if (self.run is None) != (self.model is None) or (self.run is not None and self.objective is None):
            raise ValueError("a row trained outside the study gives its objective, run (the `skipview train` run "
                             "folder) and model (the model directory to evaluate), each with {seed}")
        if self.run is not None and self.train:
            raise ValueError("a row trained outside the study has no training settings (train) to apply")
        if self.seeds is not None and self.run is None:
            raise ValueError("seeds: only a row trained outside the study names its seeds (the study's seeds run "
                             "every other row)")
        return self


class Column(_Strict):
    name: str
    title: str
    metrics: list[str] = Field(min_length=1)

    def value(self, view: str, metrics: Mapping[str, float]) -> tuple[float | None, list[str]]:
        """The mean of this column's metrics that ``view`` has among a run's ``metrics``, and the ones used; None
        when the run has none of them or one is not finite."""
        present = [m for m in self.metrics if metric_key(view, m) in metrics]
        values = [metrics[metric_key(view, m)] for m in present]
        if values and all(math.isfinite(v) for v in values):
            return statistics.fmean(values), present
        return None, []


class Claim(_Strict):
    better: str = Field(pattern=r"^[^/]+/[^/]+$", description="cell/view")
    worse: str = Field(pattern=r"^[^/]+/[^/]+$", description="cell/view")
    column: str
    paper: str = ""


class Matrix(_Strict):
    cells: list[Cell] = Field(min_length=1)
    combined: list[Cell] = []
    references: list[Cell] = []
    borrowed: list[Cell] = []       # another study's rows, reported beside these, never run (a study's borrow_rows)
    columns: list[Column] = Field(min_length=1)
    claims: list[Claim] = []

    @model_validator(mode="after")
    def _consistent(self):
        rows = self.cells + self.combined + self.references + self.borrowed
        names = [c.name for c in rows]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"cell names must be unique; repeated: {', '.join(duplicates)}")
        views = {c.name: set(c.views) for c in rows}
        trained = {c.name: set(c.views) for c in self.cells}
        for row in self.cells + self.references:
            if row.combine:
                raise ValueError(f"{row.name}: combine rows belong under combined")
        for row in self.combined:
            if not row.combine:
                raise ValueError(f"{row.name}: a row under combined needs combine: [cell/view, cell/view]")
            for part in row.combine:
                cell, view = part.split("/")
                if view not in trained.get(cell, ()):
                    raise ValueError(f"{row.name}: combine part {part!r} is not a view of a trained cell")
        columns = {c.name for c in self.columns}
        for claim in self.claims:
            for side in (claim.better, claim.worse):
                cell, view = side.split("/")
                if view not in views.get(cell, ()):
                    raise ValueError(f"claim side {side!r}: no cell {cell!r} with view {view!r}")
            if claim.column not in columns:
                raise ValueError(f"claim column {claim.column!r} is not one of {sorted(columns)}")
        return self

    def rows(self, references: bool) -> list[Cell]:
        """The rows the study runs."""
        return self.cells + self.combined + (self.references if references else [])

    def reported(self, references: bool) -> list[Cell]:
        """The rows its report shows: those it runs, then those it borrows."""
        return self.rows(references) + self.borrowed

    def has_seed(self, row: Cell, seed: int) -> bool:
        """Whether the study runs ``row`` at ``seed``: a row trained outside it at the seeds it names, a combined row
        at those both its parts have, every other row at every seed."""
        if row.combine:
            cells = {cell.name: cell for cell in self.cells}
            return all(self.has_seed(cells[part.split("/")[0]], seed) for part in row.combine)
        return row.seeds is None or seed in row.seeds

    def at_size(self, size: str) -> "Matrix":
        """The rows of one size of a learning curve (a study's ``sizes``): every row named ``<name>.<size>`` and
        tagged ``size``, with its combined parts and the claims' sides renamed alike."""
        def renamed(side: str) -> str:
            cell, view = side.split("/")
            return f"{cell}.{size}/{view}"

        def row(cell: Cell) -> Cell:
            return cell.model_copy(update={"name": f"{cell.name}.{size}", "tags": {**cell.tags, SIZE_TAG: size},
                                           "combine": cell.combine and [renamed(part) for part in cell.combine]})

        return Matrix(cells=[row(c) for c in self.cells], combined=[row(c) for c in self.combined],
                      references=[row(c) for c in self.references], columns=self.columns,
                      claims=[c.model_copy(update={"better": renamed(c.better), "worse": renamed(c.worse)})
                              for c in self.claims])

    @classmethod
    def joined(cls, matrices: list["Matrix"]) -> "Matrix":
        """One matrix of the rows and claims of ``matrices`` (the sizes of a learning curve), whose columns are
        the first's."""
        return cls(**{kind: [row for m in matrices for row in getattr(m, kind)]
                      for kind in ("cells", "combined", "references", "claims")}, columns=matrices[0].columns)

    def subset(self, names: list[str], borrowed: list[Cell] = ()) -> "Matrix":
        """The matrix restricted to the rows ``names`` (cells, combined or reference rows), with ``borrowed`` rows of
        other studies beside them, and the claims whose two sides are both there: a study of the cells that carry a
        question, costed by what it trains. A combined row needs its parts among the names (checked as for a whole
        matrix)."""
        known = {row.name for row in self.cells + self.combined + self.references}
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ValueError(f"cells: no row named {', '.join(unknown)} in the matrix (rows: {', '.join(sorted(known))})")
        kept = set(names)
        cells = [row for row in self.cells if row.name in kept]
        if not cells:
            raise ValueError("cells: name at least one trained cell")
        reported = kept | {row.name for row in borrowed}
        claims = [c for c in self.claims if {c.better.split("/")[0], c.worse.split("/")[0]} <= reported]
        return Matrix(cells=cells, combined=[r for r in self.combined if r.name in kept],
                      references=[r for r in self.references if r.name in kept], borrowed=list(borrowed),
                      columns=self.columns, claims=claims)


@dataclass(frozen=True)
class PlannedRun:
    """One training (or baseline evaluation) of the study."""

    cell: Cell
    seed: int

    @staticmethod
    def name_of(cell: str, seed: int) -> str:
        return f"{cell}-seed{seed}"

    @property
    def run_name(self) -> str:
        return self.name_of(self.cell.name, self.seed)

    @property
    def tags(self) -> dict[str, str]:
        return {STUDY_TAG: STUDY, CELL_TAG: self.cell.name, SEED_TAG: str(self.seed), **self.cell.tags}

    @property
    def identity(self) -> dict[str, str]:
        """The run's place in the matrix as MLflow params: the compare view and its parallel-coordinates plot only
        offer params and metrics as axes ("-" where a setting does not apply, so every run has every axis)."""
        return {"matrix.cell": self.cell.name, "matrix.views": self.cell.tags.get("views", "-"),
                "matrix.invertible": self.cell.tags.get("invertible", "-"), "matrix.seed": str(self.seed)}

    @property
    def summary_view(self) -> str:
        """The view a run is summed up by in the compare view: its ensemble, or its only view."""
        return ENSEMBLE if ENSEMBLE in self.cell.views else next(iter(self.cell.views))


class Rows(_Strict):
    """Rows in their three kinds: the catalogue's, or a study's own (its ``define``)."""
    cells: list[Cell] = []
    combined: list[Cell] = []
    references: list[Cell] = []

    def all(self) -> list[Cell]:
        return self.cells + self.combined + self.references


class Define(Rows):
    """A study's own rows (its ``define``), with the directions it checks on them (``claims``: the catalogue's claim
    sets name catalogue rows only)."""
    claims: list[Claim] = []


class Catalogue(Rows):
    columns: list[Column] = Field(min_length=1)
    claims: dict[str, list[Claim]] = {}

    @model_validator(mode="after")
    def _consistent(self):
        self.whole()                   # names unique, combined parts and claim sides real rows, claim columns known
        return self

    def whole(self, own: Rows = Rows()) -> Matrix:
        """Every row (the catalogue's, then ``own``), every column and every claim."""
        return Matrix(cells=self.cells + own.cells, combined=self.combined + own.combined,
                      references=self.references + own.references, columns=self.columns,
                      claims=[claim for claims in self.claims.values() for claim in claims])


def load_catalogue(path: str | Path = CATALOGUE) -> Catalogue:
    return load_model(path, Catalogue, MatrixError)


def pick(catalogue: Catalogue, own: Define, names: list[str], claim_sets: list[str], columns: list[str],
         borrowed: list[Cell] = ()) -> Matrix:
    """A study's matrix: the rows ``names`` (the catalogue's or the study's own, in the catalogue's order, the
    study's own after), the ``borrowed`` rows of other studies, the claims of ``claim_sets`` whose two rows it has
    and its own (``Define.claims``), and the report ``columns``. A ValueError names the first problem ("cells: ...",
    "claims: ...", "columns: ...", "define: ...")."""
    clash = sorted({row.name for row in own.all()} & {row.name for row in catalogue.all()})
    if clash:
        raise ValueError(f"define: {', '.join(clash)} is a row of the catalogue ({CATALOGUE}): use it by name under "
                         "cells, or give your own row another name")
    unknown = [name for name in claim_sets if name not in catalogue.claims]
    if unknown:
        raise ValueError(f"claims: no claim set {', '.join(unknown)} in {CATALOGUE} (sets: "
                         f"{', '.join(catalogue.claims)})")
    known = {column.name: column for column in catalogue.columns}
    unknown = [name for name in columns if name not in known]
    if unknown:
        raise ValueError(f"columns: no column {', '.join(unknown)} in {CATALOGUE} (columns: {', '.join(known)})")
    rows = set(names) | {row.name for row in borrowed}
    for claim in own.claims:
        absent = [side for side in (claim.better, claim.worse) if side.split("/")[0] not in rows]
        if absent:
            raise ValueError(f"define: claim {claim.better} > {claim.worse}: {absent[0]} is not a row of the study")
    whole = catalogue.whole(own).model_copy(update={"claims": [claim for name in claim_sets
                                                               for claim in catalogue.claims[name]] + own.claims})
    study = whole.subset(names, borrowed)
    reported = [claim for claim in study.claims if claim.column not in columns]
    if reported:
        raise ValueError(f"columns: claim {reported[0].better} > {reported[0].worse} is on column "
                         f"{reported[0].column}, which the study does not report")
    return study.model_copy(update={"columns": [known[name] for name in columns]})


def plan(matrix: Matrix, seeds: int, references: bool = False, first_seed: int = 0) -> list[PlannedRun]:
    """Every run of the study, seed-major so an interrupted study has every cell at its first seeds; a combined
    row follows the cells it combines. Baselines have no randomness: one run each. A row with seeds of its own runs
    at those (``Matrix.has_seed``)."""
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1, got {seeds}")
    runs = []
    for seed in range(first_seed, first_seed + seeds):
        for cell in matrix.rows(references):
            if (cell.baseline is None or seed == first_seed) and matrix.has_seed(cell, seed):
                runs.append(PlannedRun(cell, seed))
    return runs


def metric_key(view: str, metric: str) -> str:
    """The MLflow metric key of an evaluation metric of one view (``ensemble/sts14.pearson.mean``)."""
    if not view or "/" in view:
        raise ValueError(f"a view name is non-empty and has no '/': {view!r}")
    return f"{view}/{metric}"
