"""The task registry and the entry points: ``run_tasks`` (flat metrics dict) and ``sts14`` (tuning objective)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from skipview.platform.evaluation import sts
from skipview.platform.evaluation.datasets import STS_SUBSETS, TaskData, load_task
from skipview.platform.evaluation.encoding import Encoder

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Protocol:
    """How supervised tasks are fitted. ``full`` is SentEval's (10 folds); ``fast`` (5 folds) serves tuning loops."""

    name: str
    kfold: int
    seed: int = 1111  # SentEval's seed for its fold splits
    device: str = "cpu"


PROTOCOLS = {"full": Protocol("full", kfold=10), "fast": Protocol("fast", kfold=5)}

TaskRunner = Callable[[str, TaskData, Encoder, Protocol], dict[str, float]]


def _sts(task: str, data: TaskData, encoder: Encoder, protocol: Protocol) -> dict[str, float]:
    return sts.cosine_similarity_task(task, data, encoder)


def _test_split_cosine(task: str, data: TaskData, encoder: Encoder, protocol: Protocol) -> dict[str, float]:
    return sts.cosine_similarity_task(task, data, encoder, splits=["test"])


TASKS: dict[str, TaskRunner] = {
    **{name: _sts for name in STS_SUBSETS},
    "stsb_unsup": _test_split_cosine,
    "sickr_unsup": _test_split_cosine,
}
# What each task reports; written into the metrics JSON so readers know how every number was made.
DESCRIPTIONS = {
    **{name: "cosine of unsupervised vectors; Pearson/Spearman x100 per subset, aggregates mean (unweighted), "
             "wmean (by number of pairs), all (pooled pairs)" for name in STS_SUBSETS},
    "stsb_unsup": "cosine of unsupervised vectors on the test split; Pearson/Spearman x100",
    "sickr_unsup": "cosine of unsupervised vectors on the test split; Pearson/Spearman x100",
}


def resolve_tasks(tasks: list[str] | None) -> list[str]:
    if not tasks:
        return list(TASKS)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise KeyError(f"unknown task(s) {', '.join(unknown)}; known: {', '.join(TASKS)}")
    return list(dict.fromkeys(tasks))


def run_tasks(encoder: Encoder, tasks: list[str] | None = None, senteval_dir: str | os.PathLike | None = None,
              protocol: str | Protocol = "full") -> dict[str, float]:
    """Run ``tasks`` (all when None) and return one flat dict ``{"task.part.metric": value}``."""
    proto = PROTOCOLS[protocol] if isinstance(protocol, str) else protocol
    metrics: dict[str, float] = {}
    for task in resolve_tasks(tasks):
        start = time.perf_counter()
        data = load_task(task, senteval_dir)
        metrics.update(TASKS[task](task, data, encoder, proto))
        log.info("%s done in %.1f s", task, time.perf_counter() - start)
    return metrics


def evaluate(encoder: Encoder, tasks: list[str] | None = None, senteval_dir: str | os.PathLike | None = None,
             protocol: str | Protocol = "full") -> dict:
    """``run_tasks`` plus the record of how the numbers were made, for the metrics JSON."""
    proto = PROTOCOLS[protocol] if isinstance(protocol, str) else protocol
    names = resolve_tasks(tasks)
    start = time.perf_counter()
    metrics = run_tasks(encoder, names, senteval_dir, proto)
    return {
        "metrics": metrics,
        "protocol": asdict(proto),
        "tasks": {t: DESCRIPTIONS[t] for t in names},
        "units": "correlations and accuracies x100; mse on the task's score scale",
        "seconds": time.perf_counter() - start,
    }


def sts14(encoder: Encoder, senteval_dir: str | os.PathLike | None = None) -> float:
    """The tuning objective: unweighted mean Pearson x100 over STS14's six subsets (cosine, unsupervised)."""
    return run_tasks(encoder, ["sts14"], senteval_dir)["sts14.pearson.mean"]
