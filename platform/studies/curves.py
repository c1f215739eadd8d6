"""Training curves of a study's runs: what each cell did on the way to its row of the table.

A table says where the models ended; when a direction comes out reversed, the first questions are how each view
learned, whether the learned temperature settled, and whether a two-view model's views came to agree. Those are
the training loop's MLflow metrics (STS14 of the ensemble and of each view at every checkpoint, the objective's
temperature and mean cosines at every log step); this module averages them over a cell's seeds, step by step, and
draws one panel per question (``ablation_curves.png``, numbers in ``ablation_curves.json``). STS14 per cell and view
is also written flat (``sts14_curves.csv``: step, cell, view, sts14), the form ``dvc plots show`` and ``dvc plots
diff`` draw (the study stage declares it, with the template ``.dvc/plots/study_curves.json``).
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skipview.platform.files import write_aside, write_text_aside

if TYPE_CHECKING:                      # report.py draws these curves, so it imports this module
    from skipview.platform.studies.report import RunRecord

# panel title -> the metric keys drawn in it; ``sts14/*`` is every per-view STS14 a run has
PANELS: dict[str, tuple[str, ...]] = {
    "STS14 during training (x100; components of a training sample)": ("sts14", "sts14/*"),
    "temperature tau (mean of the last 10 logged steps)": ("temperature",),
    "mean cosine: a sentence's two views / its context neighbours / the rest of the batch\n(across views where "
    "there are two; mean of the last 10 logged steps)": (
        "cosine_views", "cosine_neighbours", "cosine_others"),
}
SMOOTHING = 10       # log-step metrics are one batch's value: drawn as the mean of the last 10 logged points
STYLES = {"sts14": "-", "cosine_views": "-", "cosine_neighbours": "--", "cosine_others": ":", "temperature": "-"}


def curve_keys(logged: Iterable[str]) -> list[str]:
    """The keys of ``PANELS`` among a run's logged metric keys (``sts14/*`` expanded to its views)."""
    return [k for k in logged if any(_matches(k, keys) for keys in PANELS.values())]


def seed_means(runs: Iterable[RunRecord]) -> dict[str, dict[str, dict[str, Any]]]:
    """cell -> key -> {"steps", "mean", "seeds"}: per step, the mean over the cell's seeds that logged it (a step
    only some seeds reached, e.g. a run stopped early, is averaged over those)."""
    values: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    seeds: dict[str, set[int]] = defaultdict(set)
    for run in runs:
        for key, points in run.curves.items():
            for step, value in points:
                values[run.cell][key][step].append(value)
            seeds[run.cell].add(run.seed)
    return {cell: {key: {"steps": sorted(by_step), "mean": [statistics.fmean(by_step[s]) for s in sorted(by_step)],
                         "seeds": len(seeds[cell])}
                   for key, by_step in keys.items()}
            for cell, keys in values.items()}


def render(curves: dict[str, dict[str, dict[str, Any]]], path: Path) -> None:
    """One panel per question, one colour per cell, one line style per metric."""
    import matplotlib

    matplotlib.use("Agg")                      # no display on servers and CI
    import matplotlib.pyplot as plt

    colours = dict(zip(curves, plt.rcParams["axes.prop_cycle"].by_key()["color"] * 4))
    panels = [(title, keys) for title, keys in PANELS.items()
              if any(_matches(k, keys) for cell in curves.values() for k in cell)]
    if not panels:
        raise ValueError("no run logged any training curve")
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.2 * len(panels)), squeeze=False)
    for ax, (title, keys) in zip(axes[:, 0], panels):
        for cell, by_key in curves.items():
            for key, curve in by_key.items():
                if not _matches(key, keys):
                    continue
                view = key.partition("/")[2]
                style = {"": "-", "f": "--", "g": ":"}.get(view, "-.") if key.startswith("sts14") else STYLES[key]
                label = f"{cell} {view or 'ensemble'}" if key.startswith("sts14") else f"{cell} {key}"
                ax.plot(curve["steps"], smoothed(curve["mean"], 1 if key.startswith("sts14") else SMOOTHING),
                        style, color=colours[cell], label=label, linewidth=1.2)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, ncols=3)
    fig.tight_layout()
    write_aside(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)


def smoothed(values: list[float], window: int) -> list[float]:
    """Trailing mean over ``window`` points (fewer at the start), so the first point stays where it was."""
    return [statistics.fmean(values[max(0, i + 1 - window):i + 1]) for i in range(len(values))]


def _matches(key: str, keys: tuple[str, ...]) -> bool:
    return key in keys or ("sts14/*" in keys and key.startswith("sts14/"))


def sts14_csv(curves: dict[str, dict[str, dict[str, Any]]]) -> str:
    """STS14 during training as one row per (step, cell, view), the seeds' mean unsmoothed: a table DVC's plots read
    (a JSON of nested series is not), so a study's curves can be compared across commits with ``dvc plots diff``."""
    out = io.StringIO()
    rows = csv.writer(out, lineterminator="\n")
    rows.writerow(["step", "cell", "view", "sts14"])
    for cell, by_key in sorted(curves.items()):
        for key, curve in sorted(by_key.items()):
            if _matches(key, ("sts14", "sts14/*")):
                view = key.partition("/")[2] or "ensemble"
                rows.writerows([step, cell, view, round(value, 4)] for step, value in zip(curve["steps"], curve["mean"]))
    return out.getvalue()


def build_curves(runs: list[RunRecord], out_dir: Path) -> dict[str, Path] | None:
    """Write ``ablation_curves.png``, ``.json`` and ``sts14_curves.csv`` under ``out_dir`` (None when no run logged
    a curve, e.g. a study of baselines only)."""
    curves = seed_means(runs)
    if not any(curves.values()):
        return None
    paths = {"curves_chart": out_dir / "ablation_curves.png", "curves": out_dir / "ablation_curves.json",
             "curves_table": out_dir / "sts14_curves.csv"}
    render(curves, paths["curves_chart"])
    write_text_aside(paths["curves"], json.dumps(curves, indent=1, sort_keys=True) + "\n")
    write_text_aside(paths["curves_table"], sts14_csv(curves))
    return paths
