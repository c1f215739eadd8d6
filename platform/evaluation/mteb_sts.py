"""MTEB's own STS evaluation (its ``AbsTaskSTS`` and ``AnySTSEvaluator``) of a skipview encoder on the local
SentEval files, offline: the check that skipview's STS numbers are the ones MTEB computes on the same pairs.

* ``local_task``: one of STS12, STS13, STS14, STS-B (test split) or SICK-R (test split) as a local MTEB task, read
  by skipview's own readers (``datasets.load_task``), so both evaluations see the same pairs. MTEB documents a local
  task as an ``AbsTask`` subclass whose ``load_data`` fills ``self.dataset`` (its mock tasks do so); nothing is looked
  up on the Hugging Face Hub. An STS year's subsets are MTEB "hf subsets", so MTEB's task score (the mean of its
  subsets' main scores) is skipview's ``spearman.mean``; ``pooled=True`` puts every pair in one subset, as MTEB's
  registered STS12-14 tasks (``mteb/sts12-sts``, ...) do, which is skipview's ``spearman.all``.
* ``MtebEncoder``: a skipview encoder (``encoding.Encoder``: a trained model's ``ModelEncoder`` or a baseline) as an
  MTEB encoder. MTEB encodes each side of each subset in its own ``encode`` call; this encodes the call's batches in
  one call of the skipview encoder, so a component fitted per call is fitted on one side of one subset (skipview's
  ``component_fit="subset-sides"``), and a stored one (``"corpus"``) is used as it is.
* ``evaluate``: MTEB's cosine Spearman x100 per task and per subset; ``side_by_side``: those beside skipview's suite
  (``suite.run_tasks``) on the same encoder, row by row, and whether they agree within ``TOLERANCE``.
"""

from __future__ import annotations

import os

# Read by huggingface_hub and datasets when they are imported (below, through mteb): nothing here may reach the Hub,
# and with these set neither library tries to.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"

from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import mteb  # noqa: E402
import numpy as np  # noqa: E402
from datasets import Dataset, DatasetDict  # noqa: E402
from mteb.abstasks.sts import AbsTaskSTS  # noqa: E402
from mteb.abstasks.task_metadata import TaskMetadata  # noqa: E402
from mteb.models import ModelMeta  # noqa: E402
from mteb.models.abs_encoder import AbsEncoder  # noqa: E402
from mteb.models.model_meta import ScoringFunction  # noqa: E402

from skipview.platform.evaluation.datasets import Pairs, load_task  # noqa: E402
from skipview.platform.evaluation.encoding import Encoder, fits_per_subset  # noqa: E402
from skipview.platform.evaluation.suite import run_tasks  # noqa: E402

POOLED = "all"  # the one subset of a pooled task (skipview's name for the pooled aggregate)
TOLERANCE = 0.1  # x100: the largest difference between MTEB's and skipview's figure of one statistic called agreement


@dataclass(frozen=True)
class LocalTask:
    """A skipview STS task as MTEB sees it: its MTEB name, the split read (None: an STS year, whose splits are its
    subsets) and the gold scale, which MTEB normalises to [0, 1] (no correlation changes)."""

    name: str
    split: str | None
    min_score: int
    max_score: int


# skipview task key -> local MTEB task; the keys are the suite's, whose cosine scores these are
LOCAL_TASKS = {
    "sts12": LocalTask("SentEvalSTS12", None, 0, 5),
    "sts13": LocalTask("SentEvalSTS13", None, 0, 5),
    "sts14": LocalTask("SentEvalSTS14", None, 0, 5),
    "stsb_unsup": LocalTask("SentEvalSTSBenchmark", "test", 0, 5),
    "sickr_unsup": LocalTask("SentEvalSICK-R", "test", 1, 5),
}


def _dataset(pairs: Pairs) -> DatasetDict:
    return DatasetDict({"test": Dataset.from_dict({"sentence1": pairs.a, "sentence2": pairs.b,
                                                   "score": [float(y) for y in pairs.y]})})


class SentEvalSTS(AbsTaskSTS):
    """A local STS task: its pairs per subset, test split ``test``. ``local_task`` makes one class per task, because
    MTEB keeps a task's metadata on its class (unloading the data drops an instance's own)."""

    def __init__(self, pairs: dict[str, Pairs]):
        self.pairs = pairs
        super().__init__()

    def load_data(self, num_proc: int | None = None, **kwargs) -> None:
        self.dataset = {subset: _dataset(pairs) for subset, pairs in self.pairs.items()}
        self.data_loaded = True


def local_task(task: str, senteval_dir: str | os.PathLike, pooled: bool = False) -> SentEvalSTS:
    """``task`` (a key of ``LOCAL_TASKS``) read from ``senteval_dir`` (SentEval's ``data/downstream``) as an MTEB
    STS task: an STS year's subsets as MTEB subsets, or all its pairs in one (``pooled``)."""
    local = LOCAL_TASKS[task]
    data = load_task(task, senteval_dir)
    splits = {local.split: data.splits[local.split]} if local.split else data.splits
    if pooled:
        parts = list(splits.values())
        splits = {POOLED: Pairs([s for p in parts for s in p.a], [s for p in parts for s in p.b],
                                np.concatenate([p.y for p in parts]))}
    metadata = TaskMetadata(
        name=local.name + ("-pooled" if pooled else ""),
        description=f"skipview's {task} read from {senteval_dir} (SentEval's data/downstream files)",
        dataset={"path": str(Path(senteval_dir).resolve()), "revision": "local"},
        type="STS", category="t2t", modalities=["text"], eval_splits=["test"],
        eval_langs={subset: ["eng-Latn"] for subset in splits}, main_score="cosine_spearman",
        date=None, domains=None, task_subtypes=None, license=None, annotations_creators="human-annotated",
        dialect=None, sample_creation="found", bibtex_citation="", reference=None)
    task_class = type(metadata.name, (SentEvalSTS,), {"metadata": metadata, "min_score": local.min_score,
                                                      "max_score": local.max_score})
    return task_class(splits)


class MtebEncoder(AbsEncoder):
    """A skipview ``Encoder`` as MTEB's ``EncoderProtocol``: unsupervised vectors, compared by cosine."""

    def __init__(self, encoder: Encoder, name: str):
        self.encoder = encoder
        self.mteb_model_meta = ModelMeta.create_empty(
            {"name": name, "similarity_fn_name": ScoringFunction.COSINE, "framework": ["PyTorch"]})

    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs) -> np.ndarray:
        # all of the call's batches in one call: the encoder sees the whole side, as skipview's suite gives it
        return self.encoder.encode([text for batch in inputs for text in batch["text"]], mode="unsupervised")


def evaluate(encoder: Encoder, name: str, senteval_dir: str | os.PathLike, tasks: list[str] | None = None,
             pooled: bool = False) -> dict[str, dict]:
    """MTEB's scores of ``encoder`` on ``tasks`` (keys of ``LOCAL_TASKS``; default all): per task its main score
    (cosine Spearman x100; with several subsets their mean, MTEB's task score) and each subset's."""
    chosen = {task: local_task(task, senteval_dir, pooled) for task in tasks or LOCAL_TASKS}
    result = mteb.evaluate(MtebEncoder(encoder, name), list(chosen.values()), cache=None, co2_tracker=False,
                           show_progress_bar=False, encode_kwargs={"batch_size": 128})
    by_name = {task_result.task_name: task_result for task_result in result.task_results}
    scores = {}
    for task, mteb_task in chosen.items():
        task_result = by_name[mteb_task.metadata.name]
        scores[task] = {"mteb_task": mteb_task.metadata.name, "main_score": 100.0 * float(task_result.get_score()),
                        "subsets": {row["hf_subset"]: 100.0 * row["main_score"] for row in task_result.scores["test"]}}
    return scores


def side_by_side(encoder: Encoder, name: str, senteval_dir: str | os.PathLike, tasks: list[str] | None = None
                 ) -> list[dict]:
    """One row per statistic both compute: MTEB's cosine Spearman x100 beside skipview's key for it (each subset;
    an STS year's mean of subsets, MTEB's task score; its pooled pairs, MTEB's registered tasks' score).

    A pooled row is the same statistic only for an encoder whose vectors do not depend on the other sentences of
    the call: one that fits its component per call fits it on a pooled side in MTEB, per subset in skipview."""
    names = list(tasks or LOCAL_TASKS)
    ours = run_tasks(encoder, names, senteval_dir)
    theirs = evaluate(encoder, name, senteval_dir, names)
    pooled = evaluate(encoder, name, senteval_dir, [t for t in names if LOCAL_TASKS[t].split is None], pooled=True)

    def row(task: str, subset: str, mteb_score: float, key: str, same_statistic: bool = True) -> dict:
        difference = mteb_score - ours[key]
        return {"task": task, "subset": subset, "mteb": mteb_score, "skipview": ours[key], "skipview_key": key,
                "difference": difference, "same_statistic": same_statistic,
                "agree": same_statistic and abs(difference) <= TOLERANCE}

    rows = []
    for task in names:
        subsets = theirs[task]["subsets"]
        rows += [row(task, subset, score, f"{task}.{subset}.spearman") for subset, score in subsets.items()]
        if len(subsets) > 1:
            rows.append(row(task, "mean", theirs[task]["main_score"], f"{task}.spearman.mean"))
        if task in pooled:
            rows.append(row(task, f"{POOLED} (pooled)", pooled[task]["main_score"], f"{task}.spearman.all",
                            same_statistic=not fits_per_subset(encoder)))
    return rows


def _verdict(row: dict) -> str:
    return "yes" if row["agree"] else "no" if row["same_statistic"] else "n/a: not the same statistic"


def markdown(report: dict) -> str:
    """The side-by-side tables of a ``skipview mteb-sts`` report, one per encoder, with the command that made them."""
    lines = [f"# MTEB's STS evaluation beside skipview's ({report['component_fit']} components)", "",
             f"Made by `{report['command']}` (mteb {report['mteb_version']}, data {report['senteval_dir']}).", "",
             "Cosine Spearman x100 of the same encoder on the same pairs: MTEB's (its `AbsTaskSTS` and "
             "`AnySTSEvaluator` on local tasks read by skipview's readers, no network) and skipview's suite "
             f"(`skipview evaluate`). Agree: the same statistic, within {report['tolerance']}. `mean`: MTEB's score "
             "of an STS year (the mean of its subsets); `all (pooled)`: one correlation over every pair of the year, "
             "as MTEB's registered STS12-14 tasks compute it; not the same statistic when the components are fitted "
             "per call (MTEB then fits them on each side of the pooled year, skipview on each side of each subset).",
             ""]
    for encoder, rows in report["encoders"].items():
        lines += [f"## {encoder}", "", "| task | subset | MTEB | skipview | skipview key | MTEB - skipview | agree |",
                  "| --- | --- | ---: | ---: | --- | ---: | --- |"]
        lines += [f"| {r['task']} | {r['subset']} | {r['mteb']:.2f} | {r['skipview']:.2f} | `{r['skipview_key']}` | "
                  f"{r['difference']:+.4f} | {_verdict(r)} |" for r in rows]
        lines.append("")
    return "\n".join(lines)
