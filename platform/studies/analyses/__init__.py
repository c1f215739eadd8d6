"""A study's analyses: steps that read its trained models after the study has run, declared in the study file
under ``analyses`` (a name each, and a ``kind``), their code one module each beside this file. An analysis writes
``reports/<study>/<name>.md`` and ``.json``; ``skipview study analyse <study>`` runs them (``--dry-run`` prints the
commands), and one DVC stage reproduces every study's (``study_analysis`` in reports/dvc.yaml).

Kinds:

``supervised``  (``compare_encoders.py``) the models of ``models`` (rows of the study, each with its views; or a
                model directory outside it by ``path``, a DVC dependency) on the supervised ``tasks``, beside the
                training-free ``baselines`` on the study's word vectors: Table 6's supervised columns per view. The
                study's report reads them back (``supervised_metrics``), so its supervised columns and claims are
                measured, per seed, by the same runs.
``usif_levers`` (``usif_levers.py``) the test-time levers that move trained (f, g) models past uSIF: ``models``
                maps a label to a trained cell or a combined row of the study.

(``gen_f_probe.py`` is a probe of one gen checkpoint, run by hand: it names a checkpoint, not a study's model.)
"""

from __future__ import annotations

import importlib
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from skipview.platform.studies.report import Measured

BASELINES = Literal["avg", "wr", "sif", "usif"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelRef(_Strict):
    row: str | None = Field(None, description="a trained cell or combined row of the study")
    path: str | None = Field(None, description="a model directory outside the study (e.g. data/models/uniskip-cpu)")
    name: str | None = Field(None, description="the report's label (default: the row)")
    views: list[str] = ["ensemble"]

    @model_validator(mode="after")
    def _one_source(self):
        if (self.row is None) == (self.path is None):
            raise ValueError("give exactly one of row (a row of the study) or path (a model directory)")
        if self.path is not None and self.name is None:
            raise ValueError("a model given by path needs a name")
        return self


class Supervised(_Strict):
    kind: Literal["supervised"]
    models: list[ModelRef] = Field(min_length=1)
    tasks: list[str] = Field(min_length=1)
    baselines: list[BASELINES] = []
    fits: list[Literal["subset", "task", "corpus"]] = ["task"]
    supervised_fits: list[Literal["task", "corpus"]] = ["task"]
    protocol: Literal["full", "fast"] = "full"
    seeds: int | None = Field(None, ge=1, description="the study's first seeds (default: all of them)")


class UsifLevers(_Strict):
    kind: Literal["usif_levers"]
    models: dict[str, str] = Field(min_length=1, description="label -> a trained cell or combined row")
    components: int = Field(5, ge=1, description="m of the piecewise rows (uSIF: 5)")
    seeds: int | None = Field(None, ge=1)


Analysis = Annotated[Union[Supervised, UsifLevers], Field(discriminator="kind")]
MODULES = {"supervised": "compare_encoders", "usif_levers": "usif_levers"}


@dataclass(frozen=True)
class Step:
    """One analysis of one study, as the command it runs."""
    study: str
    name: str
    module: str
    argv: list[str]
    inputs: list[str]                # a model directory outside the study (a DVC dependency), at most one

    @property
    def out(self) -> str:
        return f"reports/{self.study}/{self.name}"

    def command(self) -> str:
        return shlex.join(["python", "-m", f"skipview.platform.studies.analyses.{self.module}", *self.argv])

    def run(self) -> None:
        importlib.import_module(f"skipview.platform.studies.analyses.{self.module}").main(self.argv)


def check_rows(analyses: dict[str, Analysis], trained: dict[str, set[str]], combined: dict[str, list[str]]) -> None:
    """Every row an analysis names is a row of the study with the views it asks for (ValueError naming it)."""
    for name, analysis in analyses.items():
        if isinstance(analysis, Supervised):
            for ref in analysis.models:
                if ref.row is None:
                    continue
                views = trained.get(ref.row) or ({"ensemble"} if ref.row in combined else None)
                if views is None:
                    raise ValueError(f"analyses.{name}: {ref.row} is not a trained or combined row of the study")
                missing = [v for v in ref.views if v not in views | {"ensemble"}]   # a combined row: ensemble only
                if missing:
                    raise ValueError(f"analyses.{name}: {ref.row} has no view {', '.join(missing)}")
        else:
            unknown = [row for row in analysis.models.values() if row not in trained and row not in combined]
            if unknown:
                raise ValueError(f"analyses.{name}: {', '.join(unknown)} is not a trained or combined row of the "
                                 "study")


def commands(study: str, corpus: str, seeds: int, analyses: dict[str, Analysis], model_dir,
          combined: dict[str, list[str]], data_root: str = "data") -> list[Step]:
    """The commands of a study's analyses. ``model_dir(cell, seed)``: where the study leaves that model;
    ``combined``: a combined row's two parts (``cell/view``)."""
    wordvecs, prepared = f"{data_root}/{corpus}/wordvecs", f"{data_root}/{corpus}/prepared"
    senteval = f"{data_root}/senteval/downstream"
    found = []
    for name, analysis in analyses.items():
        out = f"reports/{study}/{name}"
        runs = range(analysis.seeds or seeds)
        if isinstance(analysis, Supervised):
            models, inputs = [], []
            for ref in analysis.models:
                views = ",".join(ref.views)
                if ref.path is not None:
                    models += ["--model", f"{ref.name}={ref.path}@{views}"]
                    inputs.append(ref.path)
                    continue
                for seed in runs:
                    # a combined row: DIR@VIEW+DIR@VIEW, the views of two models of the same seed as one encoder
                    spec = ("+".join(f"{model_dir(cell, seed)}@{view}" for cell, view in
                                     (part.split("/") for part in combined[ref.row]))
                            if ref.row in combined else f"{model_dir(ref.row, seed)}@{views}")
                    models += ["--model", f"{ref.name or ref.row}-seed{seed}={spec}"]
            argv = ["--wordvecs", wordvecs, "--pc-corpus", prepared, "--senteval-dir", senteval, *models,
                    "--supervised", ",".join(analysis.tasks), "--protocol", analysis.protocol,
                    "--fits", ",".join(analysis.fits), "--supervised-fits", ",".join(analysis.supervised_fits),
                    "--baselines", ",".join(analysis.baselines), "--out", out,
                    # a machine holding some of the models measures those and keeps the other rows (DVC's stage
                    # removes the outputs first, so it measures all)
                    "--resume"]
        else:
            models, inputs = [], []
            for label, row in analysis.models.items():
                for seed in runs:
                    parts = [part.split("/")[0] for part in combined.get(row, [row])]
                    models += ["--model", f"{label}-seed{seed}=" + "+".join(str(model_dir(p, seed)) for p in parts)]
            argv = ["--wordvecs", wordvecs, "--senteval-dir", senteval, *models,
                    "--components", str(analysis.components), "--out", out]
        if len(inputs) > 1:
            raise ValueError(f"analyses.{name}: at most one model by path (DVC's stage takes one input)")
        found.append(Step(study, name, MODULES[analysis.kind], argv, inputs))
    return found


def supervised_metrics(report_dir: Path, analyses: dict[str, Analysis]) -> dict[tuple[str, int], Measured]:
    """The supervised tasks' metrics that the study's ``supervised`` analyses measured of its own rows, as the runs'
    metrics (``<view>/<metric>``) by (row, seed), with when the oldest of them was measured: what the report adds
    to each run's own evaluation (unless that run is newer: ``Measured``). Only the fit the supervised tasks ran
    under, and only the rows named by a row of the study (not a model given by path)."""
    found: dict[tuple[str, int], Measured] = {}
    for name, analysis in analyses.items():
        if isinstance(analysis, Supervised):
            measured_rows(report_dir / f"{name}.json", analysis, analysis.supervised_fits, analysis.tasks, found)
    return found


def measured_rows(table: Path, analysis: Supervised, fits: list[str], tasks: list[str] | None,
                  found: dict[tuple[str, int], Measured] | None = None) -> dict[tuple[str, int], Measured]:
    """What one ``supervised`` analysis's table (``<name>.json``) measured of the study's rows under ``fits``, of
    ``tasks`` (None: every task it ran), as the runs' metrics by (row, seed), added to ``found``."""
    found = {} if found is None else found
    if not table.is_file():
        return found
    labels = {ref.name or ref.row: ref.row for ref in analysis.models if ref.row is not None}
    for row in json.loads(table.read_text())["rows"]:
        label, _, view = row["encoder"].rpartition(" ")
        model, _, seed = label.rpartition("-seed")
        if model not in labels or not seed.isdigit() or row["component_fit"] not in fits:
            continue
        measured = found.setdefault((labels[model], int(seed)), Measured({}))
        measured.metrics.update({f"{view}/{key}": value for key, value in row["metrics"].items()
                                 if (tasks is None or key.split(".")[0] in tasks) and value is not None})
        if row.get("measured_at") is not None:      # the oldest row decides
            measured.measured_at = min(row["measured_at"], measured.measured_at or row["measured_at"])
    return found
