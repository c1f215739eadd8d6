"""``skipview heldout``: every checkpoint a skip-thought run keeps, evaluated on a corpus no training read, and the
plateau rule of issue 57 over them.

Where each figure comes from. The run, its kept checkpoints and the settings its MLflow run recorded are read as
``recorded_run.py`` reads them: the model, the training corpus whose vocabulary the weights are indexed by,
``max_len``, ``batch_size``, ``checkpoint_every``. The perplexity is the training objective's own, on the held-out
corpus (``models/skipthought/perplexity.py``). The sentences read are step x batch size x workers (a checkpoint holds
one RNG file per worker), as the loop reports them to Ray. The hours trained are the loop's throughput windows
summed up to the checkpoint's step (``store.trained_hours``, ``hours_at``).

The plateau rule: three epochs, and on to at most five while the held-out next-sentence perplexity still improves
by more than 1 % per half epoch. It reads the checkpoints at a half-epoch boundary only: the periodic ones, every
``checkpoint_every`` steps, and the one a run writes when its epochs are over; not those a stop signal wrote
between them. So it needs ``checkpoint_every`` to be half an epoch (the runs it was made for checkpoint every 4,381
steps of an 8,761-step epoch), and says so when it is not.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tqdm import tqdm

from skipview.models.batching import TripleBatch, num_batches
from skipview.models.corpus import PreparedCorpus
from skipview.models.objective import ExampleKind
from skipview.models.skipthought.perplexity import corpus_nll, heldout_batches
from skipview.platform.tracking.lineage import portable_path
from skipview.platform.training import checkpoint as ckpt
from skipview.platform.training.objectives import Built
from skipview.platform.training.recorded_run import RecordedRun

MIN_EPOCHS, MAX_EPOCHS, MIN_GAIN = 3, 5, 0.01      # issue 57: three epochs, at most five, 1 % per half epoch


@dataclass(frozen=True)
class Verdict:
    decision: Literal["continue", "plateaued", "done", "unjudged"]
    epochs: int | None          # with continue: the epochs to train to
    line: str


def plateau(points: Sequence[tuple[int, float]]) -> Verdict:
    """The rule on a run's half-epoch checkpoints, (half epochs, held-out next-sentence perplexity) in the order they
    were written; of two at the same half epoch (a run's last at the end of its epochs and the periodic one a few
    steps later, when it is continued) the first counts. The gain per half epoch is measured from the half-epoch
    checkpoint before the last, per half epoch between them when the one in between is no longer kept."""
    by_half: dict[int, float] = {}
    for half, perplexity in points:
        by_half.setdefault(half, perplexity)
    if not by_half:
        return Verdict("continue", MIN_EPOCHS, f"no half-epoch checkpoint yet: train on to {MIN_EPOCHS} epochs")
    *earlier, half = sorted(by_half)
    at = f"at {half / 2:g} epochs held-out next-sentence perplexity {by_half[half]:.2f}"
    gain = None
    if earlier:
        gain = 1 - (by_half[half] / by_half[earlier[-1]]) ** (1 / (half - earlier[-1]))
        at += f", {gain:.2%} better per half epoch than at {earlier[-1] / 2:g}"
    if half >= 2 * MAX_EPOCHS:
        return Verdict("done", None, f"{at}: {MAX_EPOCHS} epochs, the most the rule trains; stop")
    if half < 2 * MIN_EPOCHS:
        return Verdict("continue", MIN_EPOCHS, f"{at}: train on to {MIN_EPOCHS} epochs")
    if gain is None:
        return Verdict("unjudged", None, f"{at}: no earlier half-epoch checkpoint is kept to compare with")
    if gain > MIN_GAIN:
        return Verdict("continue", MAX_EPOCHS, f"{at} (> {MIN_GAIN:.0%}): train on, to at most {MAX_EPOCHS} epochs "
                       f"(--set epochs={MAX_EPOCHS} on the same name), and judge again at the next half epoch")
    return Verdict("plateaued", None, f"{at} (<= {MIN_GAIN:.0%}): plateaued; stop")


def half_epochs(progress: ckpt.Progress, checkpoint_every: int) -> int | None:
    """The half epochs a checkpoint stands at, when at a boundary: a periodic one, or the one written when the run's
    epochs were over (the loop has then moved on to batch 0 of the next epoch); None for one a stop signal wrote."""
    if progress.step % checkpoint_every == 0:
        return progress.step // checkpoint_every
    if progress.batch == 0 and progress.epoch > 0:
        return 2 * progress.epoch
    return None


def hours_at(hours: dict[int, float], step: int, log_every: int) -> float | None:
    """Hours trained at ``step`` from the hours at each throughput window's end (``store.trained_hours``): a
    window's own where one ends at ``step``; else, fewer than ``log_every`` steps past the last window before it,
    that window's hours plus the steps since at its pace. A run that ended by epochs before 83e8176 left its last
    few steps unlogged (issue 57's seed-0 runs, 3 steps at 3 epochs). Else none."""
    if step in hours:
        return hours[step]
    ends = sorted(end for end in hours if end < step)
    if not ends or step - ends[-1] >= log_every:
        return None
    last = ends[-1]
    previous = ends[-2] if len(ends) > 1 else 0
    pace = (hours[last] - hours.get(previous, 0.0)) / (last - previous)
    return hours[last] + (step - last) * pace


def check_heldout(heldout: PreparedCorpus, training: PreparedCorpus) -> None:
    """Refuse a held-out corpus that is not read in the training corpus's words, or that may hold its documents."""
    meta = heldout.path / "meta.json"
    if heldout.path.resolve() == training.path.resolve():
        raise ValueError(f"{heldout.path}: the run's training corpus itself, not a held-out one")
    if heldout.tokenizer != training.tokenizer:
        raise ValueError(f"{meta}: tokenizer {heldout.tokenizer.to_dict()}, not the training corpus's "
                         f"{training.tokenizer.to_dict()} ({training.path}): its words are not the model's")
    largest = int(heldout.tokens.max(initial=0))
    if largest >= len(heldout.vocab):
        raise ValueError(f"{heldout.path / 'tokens.bin'}: ids up to {largest} for the {len(heldout.vocab)} words of "
                         "its vocab.tsv: the corpus and its vocabulary do not match")
    cut, training_cut = heldout.meta.get("cut"), training.meta.get("cut")
    if cut and training_cut and cut["source_vocab_sha256"] == training_cut["source_vocab_sha256"]:
        rest_of_it = cut.get("rest") and not training_cut.get("rest") and all(
            cut[key] == training_cut[key] for key in ("seed", "sentences_asked"))
        if not rest_of_it:
            raise ValueError(f"{meta}: cut from the corpus the training corpus was cut from, but not as the rest of "
                             f"its cut (`skipview data cut --rest` with --sentences {training_cut['sentences_asked']} "
                             f"--seed {training_cut['seed']}): it may hold documents the run trained on")


@dataclass
class HeldOutRun:
    """A skip-thought run ready to evaluate checkpoint by checkpoint: the run read back, its model to load each
    checkpoint into, the held-out batches (read once), its hours trained by step."""

    run: RecordedRun
    corpus: Path
    built: Built
    batches: list[TripleBatch]
    hours: dict[int, float]
    steps_per_epoch: int

    @classmethod
    def open(cls, run_dir: Path, corpus: Path, tracking_uri: str) -> HeldOutRun:
        """Everything checked before any checkpoint is evaluated: a bad input fails here, with nothing written."""
        run = RecordedRun.open(run_dir, tracking_uri)
        run.require_skipthought("held-out perplexity is a skip-thought run's, the likelihood of its decoders")
        built = run.build()
        heldout = PreparedCorpus(corpus)
        check_heldout(heldout, built.corpus)
        settings = run.settings
        return cls(run, corpus, built, heldout_batches(heldout, built.corpus.vocab, settings.batch_size,
                                                       settings.max_len),
                   run.hours(), num_batches(built.corpus, ExampleKind.TRIPLE, settings.batch_size,
                                            world_size=run.workers, seed=settings.seed))

    @property
    def checkpoints_halve_epochs(self) -> bool:
        # an epoch's steps differ by a few batches from one epoch to the next (batching.py's blocks)
        return abs(2 * self.run.settings.checkpoint_every - self.steps_per_epoch) <= self.steps_per_epoch // 100

    def evaluate(self, folder: Path) -> dict[str, Any]:
        """The record of one checkpoint: where it stands in training and its held-out perplexities."""
        step, settings = self.run.load(folder, self.built), self.run.settings
        wall, cpu = time.perf_counter(), time.process_time()
        nll = corpus_nll(self.built.objective, tqdm(self.batches, desc=folder.name, unit=" batch", disable=None))
        record = {"run": self.run.folder.name, "checkpoint": folder.name, "step": step.step, "epoch": step.epoch,
                  "half_epochs": half_epochs(step, settings.checkpoint_every)
                  if self.checkpoints_halve_epochs else None,
                  "sentences": step.step * settings.batch_size * len(list(folder.glob(ckpt.RNG_GLOB))),
                  "perplexity_next": nll.perplexity("next"), "perplexity_previous": nll.perplexity("previous"),
                  "examples": nll.examples, "tokens_next": nll.tokens["next"],
                  "tokens_previous": nll.tokens["previous"], "seconds": round(time.perf_counter() - wall, 1),
                  "cpu_seconds": round(time.process_time() - cpu, 1)}
        return self.with_hours(record)

    def with_hours(self, record: dict[str, Any]) -> dict[str, Any]:
        """The record with its hours trained as the run's throughput windows give them (``hours_at``); also for a
        record kept from an earlier call, which may have been measured without them."""
        hours = hours_at(self.hours, record["step"], self.run.settings.log_every)
        return {**record, "train_hours": hours} if hours is not None else record

    def measured_before(self, out: Path) -> dict[str, dict[str, Any]]:
        """The records that an earlier ``--out`` file holds for this run on this corpus, by checkpoint. A kept
        checkpoint never changes (Ray Train registers a folder once and never writes into it again), so its figures
        still stand: a check at the next half epoch then measures only the new checkpoints (about 70 s each for the
        issue's runs, against 15 min for all of them). A file of another run, corpus or ``max_len`` gives none."""
        try:
            earlier = json.loads(out.read_text())
        except FileNotFoundError:
            return {}
        except ValueError as error:
            raise ValueError(f"{out}: not the JSON of an earlier `skipview heldout --out` ({error}); remove it, "
                             "or give another --out") from None
        same = (earlier.get("mlflow_run_id") == self.run.mlflow_run_id
                and earlier.get("corpus") == portable_path(self.corpus)
                and earlier.get("max_len") == self.run.settings.max_len)
        return {record["checkpoint"]: record for record in earlier.get("records", [])} if same else {}

    def report(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """The records, by step, with the run's rule verdict and what they were measured on."""
        records, settings = sorted(records, key=lambda record: record["step"]), self.run.settings
        if self.checkpoints_halve_epochs:
            verdict = plateau([(r["half_epochs"], r["perplexity_next"]) for r in records
                               if r["half_epochs"] is not None])
        else:
            verdict = Verdict("unjudged", None, f"checkpoint_every {settings.checkpoint_every} is not half of an "
                                                f"epoch's {self.steps_per_epoch} steps: the rule needs half-epoch "
                                                "checkpoints")
        return {"run": self.run.folder.name, "run_folder": portable_path(self.run.folder),
                "mlflow_run_id": self.run.mlflow_run_id, "corpus": portable_path(self.corpus),
                "training_corpus": portable_path(settings.corpus), "max_len": settings.max_len,
                "checkpoint_every": settings.checkpoint_every, "steps_per_epoch": self.steps_per_epoch,
                "records": records, "plateau": {"decision": verdict.decision, "epochs": verdict.epochs,
                                                "line": verdict.line}}


def describe(record: dict[str, Any]) -> str:
    """A record as one line of the command's output."""
    where = (f"{record['half_epochs'] / 2:g} epochs" if record["half_epochs"] is not None
             else "not at a half epoch")
    hours = f", {record['train_hours']:.2f} h trained" if "train_hours" in record else ""
    return (f"{record['checkpoint']}: step {record['step']} ({where}{hours}): held-out perplexity next "
            f"{record['perplexity_next']:.2f}, previous {record['perplexity_previous']:.2f} "
            f"({record['examples']} examples; {record['seconds']:.0f} s)")
