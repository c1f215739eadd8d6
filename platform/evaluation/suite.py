"""The task registry and the entry points: ``run_tasks`` (flat metrics dict), ``sts14`` (tuning objective) and
``sts14_by_view`` (a trained model's learning curve)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from sklearn.metrics import f1_score
from tqdm import tqdm

from skipview.models.encoder import SentenceEncoder
from skipview.platform.evaluation import protocols, sts
from skipview.platform.evaluation.datasets import BINARY_FILES, STS_SUBSETS, Pairs, TaskData, load_task
from skipview.platform.evaluation.encoding import Encoder, ModelEncoder, encode_many

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Protocol:
    """How supervised tasks are fitted. ``full`` is SentEval's (10 folds); ``fast`` (5 folds) serves tuning loops."""

    name: str
    kfold: int
    seed: int = 1111  # SentEval's seed for its fold splits
    device: str = field(default_factory=lambda: "cuda" if torch.cuda.is_available() else "cpu")


PROTOCOLS = {"full": Protocol("full", kfold=10), "fast": Protocol("fast", kfold=5)}

TaskRunner = Callable[[str, TaskData, Encoder, Protocol], dict[str, float]]


def _sts(task: str, data: TaskData, encoder: Encoder, protocol: Protocol) -> dict[str, float]:
    return sts.cosine_similarity_task(task, data, encoder)


def _test_split_cosine(task: str, data: TaskData, encoder: Encoder, protocol: Protocol) -> dict[str, float]:
    return sts.cosine_similarity_task(task, data, encoder, splits=["test"])


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``[|u - v|, u * v]``: SentEval's features for SICK-R/E, STS-B and MRPC (it uses ``[u, v, |u-v|, u*v]``
    only for SNLI), as in the skip-thought paper."""
    return np.concatenate([np.abs(u - v), u * v], axis=1)


def _features(encoder: Encoder, data: TaskData, splits: list[str]) -> list[np.ndarray]:
    """Supervised-mode features of every split, all encoded in one call (pairs get ``pair_features``)."""
    parts = [data.splits[s] for s in splits]
    if isinstance(parts[0], Pairs):
        vectors = encode_many(encoder, [g for p in parts for g in (p.a, p.b)], mode="supervised")
        return [pair_features(vectors[2 * i], vectors[2 * i + 1]) for i in range(len(parts))]
    return encode_many(encoder, [p.text for p in parts], mode="supervised")


def _prefixed(task: str, metrics: dict[str, float]) -> dict[str, float]:
    return {f"{task}.{k}": float(v) for k, v in metrics.items()}


def _nested(task: str, data: TaskData, encoder: Encoder, protocol: Protocol) -> dict[str, float]:
    (x,) = _features(encoder, data, ["all"])
    features = protocols.Features.of(x, data.splits["all"].y, len(data.classes), protocol.device)
    return _prefixed(task, protocols.nested_cv(features, protocol.kfold, protocol.seed))


def _kfold_refit(task: str, data: TaskData, encoder: Encoder, protocol: Protocol) -> dict[str, float]:
    x_train, x_test = _features(encoder, data, ["train", "test"])
    y_test = data.splits["test"].y
    train = protocols.Features.of(x_train, data.splits["train"].y, len(data.classes), protocol.device)
    test = protocols.Features.of(x_test, y_test, len(data.classes), protocol.device)
    metrics, predictions = protocols.kfold_then_refit(train, test, protocol.kfold, protocol.seed)
    if len(data.classes) == 2:  # MRPC reports F1 of the positive (paraphrase) class beside accuracy
        metrics["f1"] = 100 * f1_score(y_test, predictions)
    return _prefixed(task, metrics)


def _dev_select(task: str, data: TaskData, encoder: Encoder, protocol: Protocol) -> dict[str, float]:
    xs = _features(encoder, data, ["train", "dev", "test"])
    train, dev, test = (protocols.Features.of(x, data.splits[s].y, len(data.classes), protocol.device)
                        for x, s in zip(xs, ["train", "dev", "test"]))
    return _prefixed(task, protocols.dev_selection(train, dev, test))


def _relatedness(task: str, data: TaskData, encoder: Encoder, protocol: Protocol) -> dict[str, float]:
    xs = _features(encoder, data, ["train", "dev", "test"])
    ys = [data.splits[s].y for s in ["train", "dev", "test"]]
    return _prefixed(task, protocols.relatedness_regression(xs[0], ys[0], xs[1], ys[1], xs[2], ys[2],
                                                            protocol.device, protocol.seed))


TASKS: dict[str, TaskRunner] = {
    **{name: _sts for name in STS_SUBSETS},
    "stsb_unsup": _test_split_cosine,
    "sickr_unsup": _test_split_cosine,
    "sickr": _relatedness,
    "stsb": _relatedness,
    "sicke": _dev_select,
    "sst2": _dev_select,
    "mrpc": _kfold_refit,
    "trec": _kfold_refit,
    **{name: _nested for name in BINARY_FILES},
}
# What each task reports; written into the metrics JSON so readers know how every number was made.
_COSINE = "cosine of unsupervised vectors on the test split; Pearson/Spearman x100"
_RELATEDNESS = ("pair features [|u-v|, u*v] of supervised vectors; Tai et al. soft-label logistic regression "
                "(KL, Adam, batch 64), early stopping on dev Pearson; test Pearson/Spearman x100 and MSE")
_NESTED = ("supervised vectors; logistic regression, {k}-fold nested CV (inner {k}-fold on the training folds picks "
           "C in 2^-2..2^3); acc = mean outer test accuracy, dev_acc = mean inner accuracy of the chosen C")
_KFOLD = ("{k}-fold CV on train picks C in 2^-2..2^3; refit on all train; test accuracy")
_DEV = "logistic regression per C in 2^-2..2^3 fitted on train; the best on dev is scored on test"
DESCRIPTIONS = {
    **{name: "cosine of unsupervised vectors; Pearson/Spearman x100 per subset, aggregates mean (unweighted), "
             "wmean (by number of pairs), all (pooled pairs)" for name in STS_SUBSETS},
    "stsb_unsup": _COSINE,
    "sickr_unsup": _COSINE,
    "sickr": _RELATEDNESS + " (classes 1..5)",
    "stsb": _RELATEDNESS + " (classes 0..5)",
    "sicke": "pair features [|u-v|, u*v]; " + _DEV,
    "sst2": "supervised vectors; " + _DEV,
    "mrpc": "pair features [|u-v|, u*v]; " + _KFOLD + " and F1 of the paraphrase class",
    "trec": "supervised vectors; 6 coarse classes; " + _KFOLD,
    **{name: _NESTED for name in BINARY_FILES},
}


def resolve_tasks(tasks: list[str] | None) -> list[str]:
    if not tasks:
        return list(TASKS)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise KeyError(f"unknown task(s) {', '.join(unknown)}; known: {', '.join(TASKS)}")
    return list(dict.fromkeys(tasks))


def run_tasks(encoder: Encoder, tasks: list[str] | None = None, senteval_dir: str | os.PathLike | None = None,
              protocol: str | Protocol = "full", progress: bool = False) -> dict[str, float]:
    """Run ``tasks`` (all when None) and return one flat dict ``{"task.part.metric": value}``."""
    proto = PROTOCOLS[protocol] if isinstance(protocol, str) else protocol
    metrics: dict[str, float] = {}
    bar = tqdm(resolve_tasks(tasks), desc="evaluate", unit="task", disable=not progress)
    for task in bar:
        bar.set_postfix_str(task)
        start = time.perf_counter()
        data = load_task(task, senteval_dir)
        metrics.update(TASKS[task](task, data, encoder, proto))
        log.info("%s done in %.1f s", task, time.perf_counter() - start)
    return metrics


def evaluate(encoder: Encoder, tasks: list[str] | None = None, senteval_dir: str | os.PathLike | None = None,
             protocol: str | Protocol = "full", progress: bool = False) -> dict:
    """``run_tasks`` plus the record of how the numbers were made, for the metrics JSON."""
    proto = PROTOCOLS[protocol] if isinstance(protocol, str) else protocol
    names = resolve_tasks(tasks)
    start = time.perf_counter()
    metrics = run_tasks(encoder, names, senteval_dir, proto, progress)
    return {
        "metrics": metrics,
        "protocol": asdict(proto),
        "tasks": {t: DESCRIPTIONS[t].format(k=proto.kfold) for t in names},
        "units": "correlations and accuracies x100; mse on the task's score scale",
        "seconds": time.perf_counter() - start,
    }


def sts14(encoder: Encoder, senteval_dir: str | os.PathLike | None = None) -> float:
    """The tuning objective: unweighted mean Pearson x100 over STS14's six subsets (cosine, unsupervised)."""
    return run_tasks(encoder, ["sts14"], senteval_dir)["sts14.pearson.mean"]


def sts14_by_view(encoder: SentenceEncoder, senteval_dir: str | os.PathLike | None = None) -> dict[str, float]:
    """STS14 of a trained ``SentenceEncoder`` (its components fitted on the corpus): ``sts14``, the ensemble's (what
    checkpoints and Tune rank by), and, for a model with several views, ``sts14/<view>`` per view, so a multi-view
    run's learning curve shows which view carries it."""
    views = encoder.view_names if len(encoder.view_names) > 1 else []
    scores = {"sts14": sts14(ModelEncoder(encoder, "ensemble", "corpus"), senteval_dir)}
    scores.update({f"sts14/{view}": sts14(ModelEncoder(encoder, view, "corpus"), senteval_dir) for view in views})
    return scores
