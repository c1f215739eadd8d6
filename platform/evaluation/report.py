"""The terminal table: one row per task, one column per encoder, the task's headline numbers in each cell."""

from __future__ import annotations

from rich.table import Table

# Headline metrics per kind of task, in display order (all are in the metrics JSON anyway).
_STS = ("pearson.mean", "pearson.wmean", "pearson.all", "spearman.mean")
HEADLINES = {
    "sts": _STS, "stsb_unsup": ("pearson.mean", "spearman.mean"), "sickr_unsup": ("pearson.mean", "spearman.mean"),
    "sickr": ("pearson", "spearman", "mse"), "stsb": ("pearson", "spearman", "mse"),
    "mrpc": ("acc", "f1"),
}


def headline(task: str, metrics: dict[str, float]) -> str:
    keys = HEADLINES.get("sts" if task[:3] == "sts" and task[3:].isdigit() else task, ("acc", "dev_acc"))
    parts = [f"{k} {metrics[f'{task}.{k}']:.1f}" if k != "mse" else f"mse {metrics[f'{task}.mse']:.3f}"
             for k in keys if f"{task}.{k}" in metrics]
    return "  ".join(parts)


def metrics_table(results: dict[str, dict[str, float]]) -> Table:
    """``results``: encoder name -> flat metrics."""
    tasks = list(dict.fromkeys(key.split(".")[0] for metrics in results.values() for key in metrics))
    table = Table(title="skipview evaluation (x100; mse on the score scale)")
    table.add_column("task")
    for name in results:
        table.add_column(name)
    for task in tasks:
        table.add_row(task, *(headline(task, metrics) for metrics in results.values()))
    return table
