"""The function every Ray Train worker runs: build the objective, restore, train, checkpoint, evaluate.

It takes one plain ``config`` dict (``TrainSettings`` + the run's bookkeeping, see ``driver.loop_config``) so a
Tune trial can run the very same function with its own values.

Per step: forward under autocast (GPU), backward, gradient clipping, optimiser and schedule step,
``objective.after_optimizer_step()`` on the unwrapped module. Batches are read ahead in a background thread
(``prefetch``). Nothing in a step waits for the device: the loss and gradient norm of every step stay on it until
every ``log_every`` steps, when one all-reduce brings the window's values to every rank (``window.py``). That read
is where a non-finite step is found (every rank sees the same values, so every rank stops at the same step, and it
always comes before a checkpoint, so no checkpoint holds diverged weights), and where rank 0 records every step's
loss and gradient norm, the window's throughput, the learning rate and the objective's own metrics (e.g. the
temperature). MLflow receives them in batches (``tracking.tracker.Tracker``): a database transaction per step
would cost a small step a noticeable share of its time. Ray only hears from the workers every
``checkpoint_every`` steps, with a checkpoint (``report``; a report costs one controller poll, about 2 s, so
reporting every step would dominate a small step). At each checkpoint rank 0 evaluates STS14 on its training
device when SentEval data is configured; the value is reported with the checkpoint, so ``CheckpointConfig`` keeps
the best by STS14 and Tune can schedule on it.
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import ray
import ray.train
import ray.train.torch
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from skipview.models.batching import num_batches
from skipview.models.objective import ObjectiveOutput
from skipview.platform.tracking.lineage import HARDWARE_TAG, hardware, hardware_of_group
from skipview.platform.tracking.tracker import Tracker
from skipview.platform.training import checkpoint as ckpt
from skipview.platform.training.config import TrainSettings, check_precision
from skipview.platform.training.objectives import Built, build
from skipview.platform.training.preemption import STOPPED_METRIC, Preemption
from skipview.platform.training.prefetch import prefetch
from skipview.platform.training.progress import Reporter
from skipview.platform.training.window import Window, close_window

log = logging.getLogger(__name__)
# Every worker imports this module. The evaluation suite (scikit-learn, SciPy's statistics) and MLflow's model
# flavour are imported where rank 0 evaluates and logs the model: elsewhere they cost each worker about 2 CPU s of
# start-up for nothing (tests/test_packaging.py holds it).

CORRUPT_TAG = "skipview.skipped_corrupt_checkpoints"
NODES_TAG = "skipview.worker_nodes"
STOPPED_TAG = "skipview.stopped"


def schedule_factor(step: int, settings: TrainSettings) -> float:
    """Multiplier of the base learning rate after ``step`` steps: linear warm-up, then constant/linear/cosine."""
    opt = settings.optimizer
    if opt.warmup_steps and step < opt.warmup_steps:
        return (step + 1) / opt.warmup_steps
    if opt.schedule == "constant":
        return 1.0
    span = max(settings.max_steps - opt.warmup_steps, 1)
    progress = min(max(step - opt.warmup_steps, 0) / span, 1.0)
    return 1.0 - progress if opt.schedule == "linear" else 0.5 * (1.0 + math.cos(math.pi * progress))


def parameter_groups(objective: torch.nn.Module, opt) -> list[dict[str, Any]]:
    """Adam's parameter groups: ``opt.lr`` for every parameter (the first group, the one the log's ``lr`` follows),
    except those under a module that ``opt.lr_by_module`` gives its own rate (a view that needs a gentler step than
    the other, e.g. the bi-GRU f beside the linear g)."""
    modules = dict(objective.named_modules())
    unknown = sorted(set(opt.lr_by_module) - set(modules))
    if unknown:
        raise ValueError(f"optimizer.lr_by_module: {', '.join(unknown)} is not a module of the objective "
                         f"(its modules: {', '.join(name for name in modules if name)})")
    owner = {}                          # id(parameter) -> the longest configured module name that holds it
    for name in sorted(opt.lr_by_module, key=len):
        owner.update((id(param), name) for param in modules[name].parameters())
    groups = [{"params": [p for p in objective.parameters() if id(p) not in owner], "lr": opt.lr}]
    for name, lr in opt.lr_by_module.items():
        params = [p for p in objective.parameters() if owner.get(id(p)) == name]
        if params:
            groups.append({"params": params, "lr": lr})
    return groups


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """None means fp32. ``auto``: bf16 where the GPU supports it, fp16 on older GPUs, fp32 on CPU. On a CPU with
    avx512_bf16, bf16 autocast ran the multi-view step 1.16-1.28x faster at h = 256 and disc's 2.2x at paper size
    (reports/benchmarks/bf16_cpu.json); CPUs without it emulate bf16, so there it is asked for
    (``--set precision=bf16``), not assumed. fp16 needs CUDA: its grad scaler is CUDA's (``check_precision`` refuses
    it on the driver)."""
    if precision == "fp32" or (device.type != "cuda" and precision == "auto"):
        return None
    if precision == "auto":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    check_precision(precision, device.type == "cuda")
    return {"bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def parameters_digest(module: torch.nn.Module) -> float:
    """A cheap fingerprint of all parameters (sum of |p| weighted by position) to compare DDP replicas."""
    total = torch.zeros((), dtype=torch.float64)
    for i, p in enumerate(module.parameters()):
        total += (p.detach().double().abs().sum() * (i + 1)).cpu()
    return float(total)


class StartupClock:
    """Wall and CPU seconds of each start-up phase, logged once at the first batch: on a loaded machine the wall
    time says more about the load than about the code, the CPU time (this process's, all its threads) does not."""

    def __init__(self, rank: int):
        self.rank = rank
        self.marks = [("start", time.perf_counter(), time.process_time())]

    def mark(self, phase: str) -> None:
        self.marks.append((phase, time.perf_counter(), time.process_time()))

    def first_batch(self) -> None:
        """Called at every batch; at the first, the start-up's lines (what a run costs before its first step)."""
        if self.marks[-1][0] == "first_batch":
            return
        self.mark("first_batch")
        log.info("rank %d: start-up (corpus opened, batching plan made, first batch read) took %.2f s", self.rank,
                 self.marks[-1][1] - self.marks[0][1])
        # one line (benchmarks/scale.py parses it): ``<phase> <wall>/<cpu>`` per phase, in order
        phases = ", ".join(f"{phase} {wall - last_wall:.2f}/{cpu - last_cpu:.2f}"
                           for (_, last_wall, last_cpu), (phase, wall, cpu) in zip(self.marks, self.marks[1:]))
        log.info("rank %d: start-up phases, wall/CPU s: %s", self.rank, phases)


def start(config: dict[str, Any]) -> tuple[Training, Tracker, ckpt.Progress, StartupClock]:
    """Everything before the first step: the objective built and seeded, wrapped for DDP, restored from the latest
    checkpoint, its MLflow run opened."""
    settings = TrainSettings.model_validate(config["settings"])
    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    clock = StartupClock(rank)
    torch.set_num_threads(max(int(config.get("cpus_per_worker", 1)), 1))
    # The same seed on every rank gives identical initial weights (DDP would broadcast rank 0's anyway);
    # the per-rank seed afterwards gives each rank its own negative samples / dropout stream.
    torch.manual_seed(settings.seed)
    built = build(settings)
    np.random.seed(settings.seed * 1009 + rank)
    torch.manual_seed(settings.seed * 1009 + rank)
    clock.mark("built")
    training = Training.prepare(built, rank, world_size, ray.train.torch.get_device())
    clock.mark("ddp")
    log.info("rank %d: corpus, word vectors and objective built in %.2f s; DDP model ready at %.2f s", rank,
             clock.marks[1][1] - clock.marks[0][1], clock.marks[2][1] - clock.marks[0][1])
    progress, run_id, skipped = training.resume()
    clock.mark("resume")
    tracker = Tracker(config, rank, run_id)
    # where each rank runs (Ray node ids, rank order): on a cluster the first question about a slow or failed run;
    # and on what: a run's hours mean little without its machine (a restart may land on other nodes: set again)
    ranks = gathered((ray.get_runtime_context().get_node_id(), hardware(str(training.device))), world_size)
    tracker.tag(NODES_TAG, " ".join(node for node, _ in ranks))
    tracker.tag(HARDWARE_TAG, hardware_of_group([kind for _, kind in ranks]))
    clock.mark("mlflow")
    if skipped:
        # the warning is in the worker's log; the tag puts it where a cluster user looks first
        tracker.tag(CORRUPT_TAG, " | ".join(skipped))
    if progress.step == 0 and rank == 0 and settings.senteval_dir:
        from skipview.platform.training.sts14 import evaluate_sts14
        # the untrained model's STS14 starts the curve, so a plot shows how far training moved it
        tracker.metrics(evaluate_sts14(built, training.device), 0)
    return training, tracker, progress, clock


def train_loop_per_worker(config: dict[str, Any]) -> None:
    training, tracker, progress, clock = start(config)
    settings, built, rank, world_size = training.settings, training.built, training.rank, training.world_size
    preemption = Preemption(config.get("stop_request"), config["run_name"], rank, world_size)
    window, last_loss, first_step, stopped = Window(progress.step), float("nan"), progress.step, False
    # the driver's progress bar or line (progress.py): rank 0 speaks for the run
    reporter = Reporter(config["run_name"], total_steps(built, world_size)) if rank == 0 else None
    training.model.train()
    while not (finished(progress, settings) or stopped):      # one epoch (or its rest, after a restart) a turn
        epoch = built.batches(rank=rank, world_size=world_size, epoch=progress.epoch, start_batch=progress.batch)
        for batch in prefetch(epoch, training.device):
            clock.first_batch()
            out, grad_norm = training.step(batch)
            progress.step += 1
            progress.batch += 1
            window.add(out.loss, grad_norm, batch)
            done = finished(progress, settings)
            stopped = not done and preemption.agreed()         # the same answer on every rank (preemption.py)
            checkpoint_due = not done and (stopped or progress.step % settings.checkpoint_every == 0)
            if progress.step % settings.log_every == 0 or checkpoint_due or done:
                # every rank reads at the same steps, and always before a checkpoint
                last_loss = log_window(window, training, tracker, out, reporter, progress.step)
                window = Window(progress.step)
            if checkpoint_due:
                report(training, tracker, progress, {"loss": last_loss, STOPPED_METRIC: float(stopped)},
                       run_key=config["run_key"])
            if done or stopped:
                break
        else:                   # the epoch is over (at once when the last checkpoint was at its last batch)
            if progress.batch == 0:
                raise ValueError(f"{settings.corpus}: no batch of {settings.batch_size} examples per rank with "
                                 f"{world_size} workers; use a smaller batch_size or fewer workers")
            progress.epoch += 1
            progress.batch = 0
            if finished(progress, settings) and window.first_step <= progress.step:
                # the last epoch ended between two logs (its last batch is known only once the epoch is over): its
                # last steps are logged too, and the final checkpoint's step ends a window (its hours trained)
                last_loss = log_window(window, training, tracker, out, reporter, progress.step)
    preemption.close()
    log.info("rank %d: %d steps in %.2f s (checkpoints included)%s", rank, progress.step - first_step,
             time.perf_counter() - clock.marks[-1][1], "; stopped as asked" if stopped else "")
    if stopped:
        tracker.tag(STOPPED_TAG, f"at step {progress.step}, by a stop signal; the same command resumes it")
        tracker.finish("KILLED")
        return
    if progress.step == first_step:
        # a resume that trained no step (its checkpoint already at or past max_steps): the run's loss is the one
        # its last attempt logged, not NaN
        last_loss = tracker.last_logged("loss")
    final = {"loss": last_loss, "ddp_parameters_equal": float(check_replicas(training, tracker, progress.step))}
    model_dir, evaluated = save_final_model(training, tracker, progress.step) if rank == 0 else (None, {})
    final.update(evaluated)
    report(training, tracker, progress, final, run_key=config["run_key"], final_model=model_dir)
    tracker.finish("FINISHED")


def log_window(window: Window, training: Training, tracker: Tracker, out: ObjectiveOutput, reporter: Reporter | None,
               step: int) -> float:
    """The window's steps logged (one all-reduce, on every rank at the same step) and shown; its last loss."""
    loss = close_window(window, tracker, out, training.scheduler.get_last_lr()[0], training.world_size,
                        overflow_is_skipped=training.scaler is not None)
    if reporter is not None:
        reporter.report(step, loss)
    return loss


@dataclass
class Training:
    """What one rank trains: the built objective (``objective``), its DDP wrapper (``model``), the optimiser, the
    learning-rate schedule and, for fp16, the grad scaler; the rank's place in the group and its device."""

    built: Built
    rank: int
    world_size: int
    device: torch.device
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    scaler: torch.amp.GradScaler | None
    amp_dtype: torch.dtype | None

    @classmethod
    def prepare(cls, built: Built, rank: int, world_size: int, device: torch.device) -> Training:
        settings = built.settings
        # broadcast_buffers=False: an objective's buffers are constants every rank builds identically
        # (models/objective.py); DDP's default would send rank 0's word-vector matrix (148,046 x 300 floats, 178 MB
        # on the novels) to every rank before every forward. Ignoring them also keeps DDP's start from writing
        # rank 0's copy into the others': the word vectors are a read-only memory map shared by the node's workers
        # (torch 2.13 deprecates broadcast_buffers=False and will sync buffers at start without this).
        DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
            built.objective, [name for name, _ in built.objective.named_buffers()])
        model = ray.train.torch.prepare_model(
            built.objective, parallel_strategy_kwargs={"find_unused_parameters": settings.ddp_find_unused_parameters,
                                                       "broadcast_buffers": False})
        opt = settings.optimizer
        optimizer = torch.optim.Adam(parameter_groups(getattr(model, "module", model), opt), lr=opt.lr,
                                     betas=opt.betas, weight_decay=opt.weight_decay)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: schedule_factor(step, settings))
        amp_dtype = autocast_dtype(settings.precision, device)
        scaler = torch.amp.GradScaler("cuda") if amp_dtype == torch.float16 else None
        return cls(built, rank, world_size, device, model, optimizer, scheduler, scaler, amp_dtype)

    @property
    def objective(self) -> torch.nn.Module:
        return getattr(self.model, "module", self.model)

    @property
    def settings(self) -> TrainSettings:
        return self.built.settings

    def resume(self) -> tuple[ckpt.Progress, str | None, list[str]]:
        """The position to start from, the MLflow run id the checkpoint names and the checkpoints skipped as
        corrupt: restored from Ray's latest checkpoint (or the newest older one that loads) when there is one."""
        latest = ray.train.get_checkpoint()
        if latest is None:
            return ckpt.Progress(), None, []
        restored, state, rng, skipped = ckpt.restore(checkpoints_newest_first(latest), rank=self.rank,
                                                     map_location=self.device)
        progress, run_id, had_rng = ckpt.apply(state, rng, model=self.objective, optimizer=self.optimizer,
                                               scheduler=self.scheduler, scaler=self.scaler)
        if not had_rng:
            log.warning("rank %d: no RNG state in the checkpoint (world size changed?); reseeding", self.rank)
            torch.manual_seed(self.settings.seed * 1009 + self.rank + progress.step)
        log.info("rank %d resumed at step %d (epoch %d, batch %d) from %s", self.rank, progress.step, progress.epoch,
                 progress.batch, restored.path)
        return progress, run_id, skipped

    def step(self, batch) -> tuple[ObjectiveOutput, torch.Tensor]:
        """One optimiser step on ``batch``; its output and gradient norm, both left on the device."""
        autocast = torch.autocast(self.device.type, dtype=self.amp_dtype) if self.amp_dtype else nullcontext()
        with autocast:
            out = self.model(batch)
        self.optimizer.zero_grad(set_to_none=True)
        (self.scaler.scale(out.loss) if self.scaler else out.loss).backward()
        if self.scaler:
            self.scaler.unscale_(self.optimizer)
        # DDP has all-reduced the gradients, so this norm is the same on every rank.
        grad_clip = self.settings.optimizer.grad_clip
        grad_norm = torch.nn.utils.clip_grad_norm_(self.objective.parameters(), grad_clip or float("inf"))
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.scheduler.step()
        self.objective.after_optimizer_step()
        return out, grad_norm


def report(training: Training, tracker: Tracker, progress: ckpt.Progress, extra: dict[str, float], *, run_key: str,
           final_model: Path | None = None) -> None:
    """Report to Ray with a checkpoint of every rank (and ``final_model``, rank 0's model directory, moved into it):
    the step, epoch and sentences read, ``extra``, and on rank 0 STS14 when SentEval data is configured, which
    ``progress.best_sts14`` follows. ``run_key`` is the run's folder, whose free space a checkpoint must fit."""
    settings, rank = training.settings, training.rank
    started = time.perf_counter()
    # sentences read so far: ASHA's clock in a search (platform/tuning/search.py), fair across batch sizes
    metrics = {"step": progress.step, "epoch": progress.epoch,
               "sentences": progress.step * settings.batch_size * training.world_size, **extra}
    if rank == 0 and settings.senteval_dir:
        from skipview.platform.training.sts14 import evaluate_sts14
        scores = evaluate_sts14(training.built, training.device)
        # Ray hears only the ensemble's score, the one checkpoint ranking and ASHA read; the per-view curves go
        # to MLflow
        score = metrics["sts14"] = scores["sts14"]
        progress.best_sts14 = score if progress.best_sts14 is None else max(progress.best_sts14, score)
        tracker.metrics(scores, progress.step)
    # a restarted run continues MLflow's history after the last logged step: everything up to this
    # checkpoint must be there
    tracker.flush()
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        ckpt.write(directory, rank=rank, progress=progress, model=training.objective, optimizer=training.optimizer,
                   scheduler=training.scheduler, scaler=training.scaler, mlflow_run_id=tracker.run_id)
        if final_model is not None:
            shutil.move(final_model, directory / ckpt.MODEL_DIR)
        # refused before the upload, which would stop at a full disk with a truncated state.pt
        ckpt.check_room(run_key, directory)
        try:
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(scratch))
        except OSError as error:
            ckpt.check_room(run_key, directory, error)
            raise
    log.info("rank %d: checkpoint at step %d reported in %.2f s", rank, progress.step, time.perf_counter() - started)


def check_replicas(training: Training, tracker: Tracker, step: int) -> bool:
    """Whether every rank ends with the same parameters (a collective: every rank calls it), recorded on the run;
    replicas that differ fail it."""
    digest = parameters_digest(training.objective)
    digests = gathered(digest, training.world_size)
    replicas_equal = all(d == digests[0] for d in digests)
    tracker.tag("ddp_parameters_equal", str(replicas_equal))
    tracker.tag("ddp_parameters_digests", " ".join(repr(d) for d in digests))     # one per rank, rank order
    tracker.metrics({"ddp_parameters_digest": digest}, step)
    if not replicas_equal:
        raise RuntimeError(f"DDP replicas diverged: parameter digests per rank {digests}")
    return replicas_equal


def save_final_model(training: Training, tracker: Tracker, step: int) -> tuple[Path, dict[str, float]]:
    """Rank 0's model directory, in a folder of its own until the final checkpoint takes it, logged to MLflow; and
    its ``final_eval_tasks`` scores (``eval.<metric>``) when SentEval data is configured, recorded at ``step``."""
    settings, started = training.settings, time.perf_counter()
    model_dir = Path(tempfile.mkdtemp()) / ckpt.MODEL_DIR
    encoder = training.built.finished_encoder(training.device)
    encoder.save(model_dir)
    evaluated: dict[str, float] = {}
    if settings.final_eval_tasks and settings.senteval_dir:
        from skipview.platform.evaluation.suite import run_tasks
        results = run_tasks(encoder, settings.final_eval_tasks, settings.senteval_dir)
        evaluated = {f"eval.{k}": v for k, v in results.items()}
        tracker.metrics(evaluated, step)
    tracker.log_model(model_dir, encoder)
    log.info("final model saved and logged in %.2f s", time.perf_counter() - started)
    return model_dir, evaluated


def gathered(value: Any, world_size: int) -> list[Any]:
    """``value`` of every rank, in rank order (a collective: every rank calls it)."""
    if not (dist.is_available() and dist.is_initialized()):
        return [value]
    values = [None] * world_size
    dist.all_gather_object(values, value)
    return values


def checkpoints_newest_first(latest):
    """Ray's latest checkpoint, then the run's other registered checkpoints by step, newest first. The list is only
    asked for (one call to the Train controller) when the latest cannot be loaded."""
    yield latest
    reported = ray.train.get_all_reported_checkpoints(
        consistency_mode=ray.train.CheckpointConsistencyMode.COMMITTED)
    older = [r for r in reported if r.checkpoint.path != latest.path]
    for r in sorted(older, key=lambda r: r.metrics.get("step", -1), reverse=True):
        yield r.checkpoint


def total_steps(built: Built, world_size: int) -> int | None:
    """The steps the run will take: ``max_steps``, or as many epochs of the first epoch's batches (epochs of pairs
    and triples differ by a few batches) when that comes first."""
    settings = built.settings
    if settings.epochs is None:
        return settings.max_steps
    per_epoch = num_batches(built.corpus, built.objective.example_kind, settings.batch_size, world_size=world_size,
                            seed=settings.seed)
    return min(per_epoch * settings.epochs, settings.max_steps or per_epoch * settings.epochs)


def finished(progress: ckpt.Progress, settings: TrainSettings) -> bool:
    return ((settings.max_steps is not None and progress.step >= settings.max_steps)
            or (settings.epochs is not None and progress.epoch >= settings.epochs))
