"""The function every Ray Train worker runs: build the objective, restore, train, checkpoint, evaluate.

It takes one plain ``config`` dict (``TrainSettings`` + the run's bookkeeping, see ``driver.loop_config``) so a
Tune trial can run the very same function with its own values.

Per step: forward under autocast (GPU), backward, gradient clipping, optimiser and schedule step,
``objective.after_optimizer_step()`` on the unwrapped module. Every ``log_every`` steps rank 0 logs loss,
learning rate, throughput and the objective's own metrics (e.g. the temperature) straight to MLflow; Ray only
hears from the workers every ``checkpoint_every`` steps, with a checkpoint (a report costs one controller poll,
about 2 s, so reporting every step would dominate a small step). At each checkpoint rank 0 evaluates STS14 when
SentEval data is configured; the value is reported with the checkpoint, so ``CheckpointConfig`` keeps the best
by STS14 and Tune can schedule on it.
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from skipview.platform.training import checkpoint as ckpt
from skipview.platform.training.config import TrainSettings
from skipview.platform.training.objectives import build

log = logging.getLogger(__name__)

DIVERGED_TAG = "skipview.diverged_at_step"
CORRUPT_TAG = "skipview.skipped_corrupt_checkpoints"
NODES_TAG = "skipview.worker_nodes"


class Diverged(RuntimeError):
    pass


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


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """None means fp32. ``auto``: bf16 where the GPU supports it, fp16 on older GPUs, fp32 on CPU."""
    if device.type != "cuda" or precision == "fp32":
        return None
    if precision == "auto":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return {"bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def parameters_digest(module: torch.nn.Module) -> float:
    """A cheap fingerprint of all parameters (sum of |p| weighted by position) to compare DDP replicas."""
    total = torch.zeros((), dtype=torch.float64)
    for i, p in enumerate(module.parameters()):
        total += (p.detach().double().abs().sum() * (i + 1)).cpu()
    return float(total)


class Tracker:
    """Rank 0's MLflow run; a no-op on other ranks."""

    def __init__(self, config: dict[str, Any], rank: int, run_id: str | None):
        self.client = None
        self.run_id = run_id
        if rank != 0:
            return
        from skipview.platform.tracking import store

        self.client = store.client(config["tracking_uri"])
        self.run_id, resumed = store.open_run(self.client, config["experiment"], config["run_key"],
                                              config["run_name"], run_id=run_id, params=config["params"],
                                              tags=config["tags"])
        log.info("MLflow run %s (%s)", self.run_id, "continued" if resumed else "new")
        # After a restart the steps since the last checkpoint are trained again; they were logged before the
        # failure, so each step keeps its first record and the history stays one value per step.
        self.logged_through = store.last_logged_step(self.client, self.run_id, "loss") if resumed else -1

    def metrics(self, values: dict[str, float], step: int) -> None:
        if self.client is not None and step > self.logged_through:
            from skipview.platform.tracking import store

            store.log_metrics(self.client, self.run_id, values, step)

    def tag(self, key: str, value: str) -> None:
        if self.client is not None:
            self.client.set_tag(self.run_id, key, value)

    def finish(self, status: str) -> None:
        if self.client is not None:
            self.client.set_terminated(self.run_id, status=status)


def train_loop_per_worker(config: dict[str, Any]) -> None:
    import ray
    import ray.train
    import ray.train.torch

    settings = TrainSettings.model_validate(config["settings"])
    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    device = ray.train.torch.get_device()
    torch.set_num_threads(max(int(config.get("cpus_per_worker", 1)), 1))

    # The same seed on every rank gives identical initial weights (DDP would broadcast rank 0's anyway);
    # the per-rank seed afterwards gives each rank its own negative samples / dropout stream.
    torch.manual_seed(settings.seed)
    built = build(settings)
    np.random.seed(settings.seed * 1009 + rank)
    torch.manual_seed(settings.seed * 1009 + rank)

    model = ray.train.torch.prepare_model(
        built.objective, parallel_strategy_kwargs={"find_unused_parameters": settings.ddp_find_unused_parameters})
    objective = getattr(model, "module", model)
    opt = settings.optimizer
    optimizer = torch.optim.Adam(objective.parameters(), lr=opt.lr, betas=opt.betas, weight_decay=opt.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: schedule_factor(step, settings))
    amp_dtype = autocast_dtype(settings.precision, device)
    scaler = torch.amp.GradScaler("cuda") if amp_dtype == torch.float16 else None

    progress, run_id, skipped = ckpt.Progress(), None, []
    latest = ray.train.get_checkpoint()
    if latest is not None:
        restored, state, rng, skipped = ckpt.restore(checkpoints_newest_first(latest), rank=rank,
                                                     map_location=device)
        progress, run_id, had_rng = ckpt.apply(state, rng, model=objective, optimizer=optimizer,
                                               scheduler=scheduler, scaler=scaler)
        if not had_rng:
            log.warning("rank %d: no RNG state in the checkpoint (world size changed?); reseeding", rank)
            torch.manual_seed(settings.seed * 1009 + rank + progress.step)
        log.info("rank %d resumed at step %d (epoch %d, batch %d) from %s", rank, progress.step, progress.epoch,
                 progress.batch, restored.path)
    tracker = Tracker(config, rank, run_id)
    # where each rank runs (Ray node ids, rank order): on a cluster the first question about a slow or failed run
    tracker.tag(NODES_TAG, " ".join(gathered(ray.get_runtime_context().get_node_id(), world_size)))
    if skipped:
        # the warning is in the worker's log; the tag puts it where a cluster user looks first
        tracker.tag(CORRUPT_TAG, " | ".join(skipped))

    def report(extra: dict[str, float], final_model: Path | None = None) -> None:
        metrics = {"step": progress.step, "epoch": progress.epoch, **extra}
        if rank == 0 and settings.senteval_dir:
            score = evaluate_sts14(built, settings)
            metrics["sts14"] = score
            progress.best_sts14 = score if progress.best_sts14 is None else max(progress.best_sts14, score)
            tracker.metrics({"sts14": score}, progress.step)
        with tempfile.TemporaryDirectory() as scratch:
            directory = Path(scratch)
            ckpt.write(directory, rank=rank, progress=progress, model=objective, optimizer=optimizer,
                       scheduler=scheduler, scaler=scaler, mlflow_run_id=tracker.run_id)
            if final_model is not None:
                shutil.move(final_model, directory / ckpt.MODEL_DIR)
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(scratch))

    if progress.step == 0 and rank == 0 and settings.senteval_dir:
        # the untrained model's STS14 starts the curve, so a plot shows how far training moved it
        tracker.metrics({"sts14": evaluate_sts14(built, settings)}, 0)
    window = {"start": time.perf_counter(), "sentences": 0, "tokens": 0}
    last_loss = float("nan")
    model.train()
    while not finished(progress, settings):
        epoch_had_batches = False
        for batch in built.batches(rank=rank, world_size=world_size, epoch=progress.epoch,
                                   start_batch=progress.batch):
            epoch_had_batches = True
            window["sentences"] += batch.num_sentences
            window["tokens"] += batch.num_tokens
            batch = batch.to(device, non_blocking=True)
            autocast = torch.autocast(device.type, dtype=amp_dtype) if amp_dtype else nullcontext()
            with autocast:
                out = model(batch)
            optimizer.zero_grad(set_to_none=True)
            (scaler.scale(out.loss) if scaler else out.loss).backward()
            if scaler:
                scaler.unscale_(optimizer)
            # DDP has all-reduced the gradients, so this norm (and the decision below) is the same on every rank.
            grad_norm = torch.nn.utils.clip_grad_norm_(objective.parameters(),
                                                       opt.grad_clip if opt.grad_clip else float("inf"))
            loss_value, grad_value = shared_loss_and_norm(out.loss, grad_norm, world_size)
            # With fp16 an infinite gradient is an overflow the grad scaler skips, not a divergence.
            if not math.isfinite(loss_value) or (scaler is None and not math.isfinite(grad_value)):
                stop_diverged(tracker, progress.step + 1, loss_value, grad_value)
            if scaler:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            scheduler.step()
            objective.after_optimizer_step()
            progress.step += 1
            progress.batch += 1
            last_loss = loss_value

            if progress.step % settings.log_every == 0:
                log_step(tracker, window, out, loss_value, grad_value, scheduler.get_last_lr()[0],
                         progress.step, device, world_size)
            done = finished(progress, settings)
            if progress.step % settings.checkpoint_every == 0 and not done:
                report({"loss": last_loss})
            if done:
                break
        else:
            if not epoch_had_batches:
                raise ValueError(f"{settings.corpus}: no batch of {settings.batch_size} examples per rank with "
                                 f"{world_size} workers; use a smaller batch_size or fewer workers")
            progress.epoch += 1
            progress.batch = 0

    digest = parameters_digest(objective)
    digests = gathered(digest, world_size)
    replicas_equal = all(d == digests[0] for d in digests)
    tracker.tag("ddp_parameters_equal", str(replicas_equal))
    tracker.tag("ddp_parameters_digests", " ".join(repr(d) for d in digests))     # one per rank, rank order
    tracker.metrics({"ddp_parameters_digest": digest}, progress.step)
    if not replicas_equal:
        raise RuntimeError(f"DDP replicas diverged: parameter digests per rank {digests}")

    final: dict[str, float] = {"loss": last_loss, "ddp_parameters_equal": float(replicas_equal)}
    model_dir = None
    if rank == 0:
        model_dir = Path(tempfile.mkdtemp()) / ckpt.MODEL_DIR
        encoder = finished_encoder(built, settings)
        encoder.save(model_dir)
        if settings.final_eval_tasks and settings.senteval_dir:
            from skipview.platform.evaluation.suite import run_tasks

            results = run_tasks(encoder, settings.final_eval_tasks, settings.senteval_dir)
            final.update({f"eval.{k}": v for k, v in results.items()})
            tracker.metrics({f"eval.{k}": v for k, v in results.items()}, progress.step)
        log_model(tracker, config, model_dir)
    report(final, final_model=model_dir)
    tracker.finish("FINISHED")


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
    import ray.train

    yield latest
    reported = ray.train.get_all_reported_checkpoints(
        consistency_mode=ray.train.CheckpointConsistencyMode.COMMITTED)
    older = [r for r in reported if r.checkpoint.path != latest.path]
    for r in sorted(older, key=lambda r: r.metrics.get("step", -1), reverse=True):
        yield r.checkpoint


def shared_loss_and_norm(loss: torch.Tensor, grad_norm: torch.Tensor, world_size: int) -> tuple[float, float]:
    """Mean loss over ranks and the (already shared) gradient norm. One tiny all-reduce per step makes the
    divergence decision collective: a NaN on one rank stops every rank at the same step instead of hanging."""
    values = torch.stack([loss.detach().float(), grad_norm.detach().float()])
    if world_size > 1:
        dist.all_reduce(values)
        values /= world_size
    return float(values[0]), float(values[1])


def finished(progress: ckpt.Progress, settings: TrainSettings) -> bool:
    return ((settings.max_steps is not None and progress.step >= settings.max_steps)
            or (settings.epochs is not None and progress.epoch >= settings.epochs))


def log_step(tracker: Tracker, window: dict, out, loss: float, grad_norm: float, lr: float, step: int,
             device: torch.device, world_size: int) -> None:
    """Throughput over the window since the last log, summed over ranks (all ranks take part in the sum)."""
    counts = torch.tensor([window["sentences"], window["tokens"]], dtype=torch.float64,
                          device=device if device.type == "cuda" else "cpu")
    if world_size > 1:
        dist.all_reduce(counts)
    elapsed = max(time.perf_counter() - window["start"], 1e-9)
    if tracker.client is not None:
        # the objective's own metrics are rank 0's; the loss and throughput below are over all ranks
        values = {k: float(v.detach()) for k, v in out.metrics.items()}
        values.update({"loss": loss, "grad_norm": grad_norm, "lr": lr, "sentences_per_s": float(counts[0]) / elapsed,
                       "tokens_per_s": float(counts[1]) / elapsed})
        tracker.metrics(values, step)
    window.update(start=time.perf_counter(), sentences=0, tokens=0)


def stop_diverged(tracker: Tracker, step: int, loss: float, grad_norm: float) -> None:
    """Every rank stops (the gradient norm that decides it is shared) by raising ``Diverged``: the run fails for Ray
    (``divergence.FailOnDivergence`` keeps Ray from restarting it) and the last good checkpoint stays the latest."""
    message = f"non-finite training at step {step}: loss={loss}, gradient norm={grad_norm}"
    log.error("%s; stopping, the last good checkpoint is kept", message)
    tracker.tag(DIVERGED_TAG, str(step))
    tracker.tag("skipview.failure", message)
    tracker.finish("FAILED")
    raise Diverged(message)


def evaluate_sts14(built, settings: TrainSettings) -> float:
    from skipview.platform.evaluation.suite import sts14

    objective = built.objective
    was_training = objective.training
    objective.eval()
    try:
        return sts14(finished_encoder(built, settings), settings.senteval_dir)
    finally:
        objective.train(was_training)


def finished_encoder(built, settings: TrainSettings):
    """The inference-side encoder of the current weights with its post-processing fitted on training sentences."""
    encoder = built.objective.sentence_encoder(built.corpus.tokenizer, built.corpus.vocab)
    built.fit_postprocessing(encoder, settings.postprocessing_sentences, seed=settings.seed)
    return encoder


def log_model(tracker: Tracker, config: dict[str, Any], model_dir: Path) -> None:
    if tracker.client is None:
        return
    from skipview.platform.tracking.pyfunc import log_encoder

    uri = log_encoder(model_dir, run_id=tracker.run_id, tracking_uri=config["tracking_uri"])
    tracker.tag("skipview.model_uri", uri)
