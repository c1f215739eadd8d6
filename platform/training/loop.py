"""The function every Ray Train worker runs: build the objective, restore, train, checkpoint, evaluate.

It takes one plain ``config`` dict (``TrainSettings`` + the run's bookkeeping, see ``driver.loop_config``) so a
Tune trial can run the very same function with its own values.

Per step: forward under autocast (GPU), backward, gradient clipping, optimiser and schedule step,
``objective.after_optimizer_step()`` on the unwrapped module. Batches are read ahead in a background thread
(``prefetch``). Nothing in a step waits for the device: the loss and gradient norm of every step stay on it until
every ``log_every`` steps, when one all-reduce brings the window's values to every rank. That read is where a
non-finite step is found (every rank sees the same values, so every rank stops at the same step, and it always
comes before a checkpoint, so no checkpoint holds diverged weights), and where rank 0 records every step's loss
and gradient norm, the window's throughput, the learning rate and the objective's own metrics (e.g. the
temperature). MLflow receives them in batches (``Tracker``): a database transaction per step would cost a
small step a noticeable share of its time. Ray only hears from the workers every ``checkpoint_every`` steps,
with a checkpoint (a report costs one controller poll, about 2 s, so reporting every step would dominate a small
step). At each checkpoint rank 0 evaluates STS14 on its training device when SentEval data is configured; the
value is reported with the checkpoint, so ``CheckpointConfig`` keeps the best by STS14 and Tune can schedule on
it.
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
import time
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from skipview.models.views import MODES, Mode
from skipview.platform.errors import Diverged
from skipview.platform.training import checkpoint as ckpt
from skipview.platform.training.config import TrainSettings
from skipview.platform.training.objectives import build
from skipview.platform.training.prefetch import prefetch

log = logging.getLogger(__name__)

DIVERGED_TAG = "skipview.diverged_at_step"
CORRUPT_TAG = "skipview.skipped_corrupt_checkpoints"
NODES_TAG = "skipview.worker_nodes"




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


def check_precision(precision: str, on_gpu: bool) -> None:
    if precision == "fp16" and not on_gpu:
        raise ValueError("precision=fp16 needs GPUs (--gpus-per-worker): its loss scaling is CUDA's; on CPU use "
                         "bf16 or fp32")


def parameters_digest(module: torch.nn.Module) -> float:
    """A cheap fingerprint of all parameters (sum of |p| weighted by position) to compare DDP replicas."""
    total = torch.zeros((), dtype=torch.float64)
    for i, p in enumerate(module.parameters()):
        total += (p.detach().double().abs().sum() * (i + 1)).cpu()
    return float(total)


class Tracker:
    """Rank 0's MLflow run; a no-op on other ranks. Metrics are buffered and written at most every
    ``FLUSH_SECONDS`` in one batch, and always before a checkpoint, a tag and the end of the run."""

    FLUSH_SECONDS = 10.0

    def __init__(self, config: dict[str, Any], rank: int, run_id: str | None):
        self.client = None
        self.run_id = run_id
        self.pending: list[tuple[int, dict[str, float]]] = []
        self.flushed_at = time.monotonic()
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
            self.pending.append((step, values))
            if time.monotonic() - self.flushed_at >= self.FLUSH_SECONDS:
                self.flush()

    def flush(self) -> None:
        if self.client is not None and self.pending:
            from skipview.platform.tracking import store

            store.log_metric_steps(self.client, self.run_id, self.pending)
            self.pending = []
        self.flushed_at = time.monotonic()

    def tag(self, key: str, value: str) -> None:
        if self.client is not None:
            self.flush()
            self.client.set_tag(self.run_id, key, value)

    def finish(self, status: str) -> None:
        if self.client is not None:
            self.flush()
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

    # broadcast_buffers=False: an objective's buffers are constants every rank builds identically
    # (models/objective.py); DDP's default would send rank 0's word-vector matrix (148,046 x 300 floats, 178 MB
    # on the novels) to every rank before every forward
    model = ray.train.torch.prepare_model(
        built.objective, parallel_strategy_kwargs={"find_unused_parameters": settings.ddp_find_unused_parameters,
                                                   "broadcast_buffers": False})
    objective = getattr(model, "module", model)
    opt = settings.optimizer
    optimizer = torch.optim.Adam(parameter_groups(objective, opt), lr=opt.lr, betas=opt.betas,
                                 weight_decay=opt.weight_decay)
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
        # sentences read so far: ASHA's clock in a search (platform/tuning/search.py), fair across batch sizes
        metrics = {"step": progress.step, "epoch": progress.epoch,
                   "sentences": progress.step * settings.batch_size * world_size, **extra}
        if rank == 0 and settings.senteval_dir:
            scores = evaluate_sts14(built, settings, device)
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
            ckpt.write(directory, rank=rank, progress=progress, model=objective, optimizer=optimizer,
                       scheduler=scheduler, scaler=scaler, mlflow_run_id=tracker.run_id)
            if final_model is not None:
                shutil.move(final_model, directory / ckpt.MODEL_DIR)
            # refused before the upload, which would stop at a full disk with a truncated state.pt
            ckpt.check_room(config["run_key"], directory)
            try:
                ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(scratch))
            except OSError as error:
                ckpt.check_room(config["run_key"], directory, error)
                raise

    if progress.step == 0 and rank == 0 and settings.senteval_dir:
        # the untrained model's STS14 starts the curve, so a plot shows how far training moved it
        tracker.metrics(evaluate_sts14(built, settings, device), 0)
    window = Window(progress.step)
    last_loss = float("nan")
    model.train()
    while not finished(progress, settings):
        epoch_had_batches = False
        batches = built.batches(rank=rank, world_size=world_size, epoch=progress.epoch, start_batch=progress.batch)
        for batch in prefetch(batches, device):
            epoch_had_batches = True
            autocast = torch.autocast(device.type, dtype=amp_dtype) if amp_dtype else nullcontext()
            with autocast:
                out = model(batch)
            optimizer.zero_grad(set_to_none=True)
            (scaler.scale(out.loss) if scaler else out.loss).backward()
            if scaler:
                scaler.unscale_(optimizer)
            # DDP has all-reduced the gradients, so this norm is the same on every rank.
            grad_norm = torch.nn.utils.clip_grad_norm_(objective.parameters(),
                                                       opt.grad_clip if opt.grad_clip else float("inf"))
            if scaler:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            scheduler.step()
            objective.after_optimizer_step()
            progress.step += 1
            progress.batch += 1
            window.add(out.loss, grad_norm, batch)

            done = finished(progress, settings)
            checkpoint_due = progress.step % settings.checkpoint_every == 0 and not done
            if progress.step % settings.log_every == 0 or checkpoint_due or done:
                # every rank reads at the same steps, and always before a checkpoint
                last_loss = close_window(window, tracker, out, scheduler.get_last_lr()[0], world_size,
                                         overflow_is_skipped=scaler is not None)
                window = Window(progress.step)
            if checkpoint_due:
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
        encoder = finished_encoder(built, settings, device)
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


class Window:
    """The steps since the last read: their loss and gradient norm, left on the device (reading them each step
    would make the host wait for the device every step), their sentence and token counts, and its start time."""

    def __init__(self, last_step: int):
        self.first_step = last_step + 1
        self.values: list[torch.Tensor] = []
        self.sentences = self.tokens = 0
        self.start = time.perf_counter()

    def add(self, loss: torch.Tensor, grad_norm: torch.Tensor, batch) -> None:
        self.values.append(torch.stack([loss.detach().float(), grad_norm.detach().float()]))
        self.sentences += batch.num_sentences
        self.tokens += batch.num_tokens

    def read(self, world_size: int) -> tuple[np.ndarray, float, float]:
        """(steps, 2) loss and gradient norm of each step averaged over ranks, and the sentences and tokens of
        all ranks: one all-reduce and one copy to the host for the whole window. Every rank must call it."""
        per_step = torch.stack(self.values).double()
        counts = torch.tensor([self.sentences, self.tokens], dtype=torch.float64, device=per_step.device)
        values = torch.cat([per_step.flatten(), counts])
        if world_size > 1:
            dist.all_reduce(values)
        values = values.cpu()
        return (values[:-2] / world_size).view(-1, 2).numpy(), float(values[-2]), float(values[-1])


def close_window(window: Window, tracker: "Tracker", out, lr: float, world_size: int, *,
                 overflow_is_skipped: bool) -> float:
    """Read the window and record it; the last step's loss. A non-finite step stops the run by raising
    ``Diverged`` (every rank reads the same values, so every rank stops here). With fp16 an infinite gradient is an
    overflow the grad scaler skipped, not a divergence (``overflow_is_skipped``)."""
    per_step, sentences, tokens = window.read(world_size)
    finite = np.isfinite(per_step[:, 0]) & (overflow_is_skipped | np.isfinite(per_step[:, 1]))
    good = len(per_step) if finite.all() else int(np.argmin(finite))
    for offset in range(good):
        tracker.metrics({"loss": per_step[offset, 0], "grad_norm": per_step[offset, 1]}, window.first_step + offset)
    if good < len(per_step):
        stop_diverged(tracker, window.first_step + good, *per_step[good])
    if tracker.client is not None:
        elapsed = max(time.perf_counter() - window.start, 1e-9)
        # the objective's own metrics are rank 0's, of the window's last step; the rest are over all ranks
        values = {k: float(v.detach()) for k, v in out.metrics.items()}
        values.update({"lr": lr, "sentences_per_s": sentences / elapsed, "tokens_per_s": tokens / elapsed})
        tracker.metrics(values, window.first_step + len(per_step) - 1)
    return float(per_step[-1, 0])


def finished(progress: ckpt.Progress, settings: TrainSettings) -> bool:
    return ((settings.max_steps is not None and progress.step >= settings.max_steps)
            or (settings.epochs is not None and progress.epoch >= settings.epochs))


def stop_diverged(tracker: Tracker, step: int, loss: float, grad_norm: float) -> None:
    """Every rank stops (the window's values that decide it are shared) by raising ``Diverged``: the run fails for Ray
    (``divergence.FailWithoutRestart`` keeps Ray from restarting it) and the last good checkpoint stays the latest."""
    message = f"non-finite training at step {step}: loss={loss}, gradient norm={grad_norm}"
    log.error("%s; stopping, the last good checkpoint is kept", message)
    tracker.tag(DIVERGED_TAG, str(step))
    tracker.tag("skipview.failure", message)
    tracker.finish("FAILED")
    raise Diverged(message)


def evaluate_sts14(built, settings: TrainSettings, device: torch.device) -> dict[str, float]:
    """STS14 of the current weights, on the training device: ``sts14`` (the model's ensemble, what checkpoints and
    Tune rank by) and, for a model with several views, ``sts14/<view>`` per view, so a multi-view run's learning
    curve shows which view carries it. STS14 is unsupervised, so only that mode's component is fitted."""
    from skipview.platform.evaluation.encoding import ModelEncoder
    from skipview.platform.evaluation.suite import sts14

    objective = built.objective
    was_training = objective.training
    objective.eval()
    try:
        encoder = finished_encoder(built, settings, device, modes=("unsupervised",))
        views = encoder.view_names if len(encoder.view_names) > 1 else []
        scores = {"sts14": sts14(ModelEncoder(encoder, "ensemble", "corpus"), settings.senteval_dir)}
        scores.update({f"sts14/{view}": sts14(ModelEncoder(encoder, view, "corpus"), settings.senteval_dir)
                       for view in views})
        return scores
    finally:
        objective.train(was_training)


def finished_encoder(built, settings: TrainSettings, device: torch.device, modes: Sequence[Mode] = MODES):
    """The inference-side encoder of the current weights on ``device``, with the post-processing of ``modes``
    fitted on training sentences."""
    encoder = built.objective.sentence_encoder(built.corpus.tokenizer, built.corpus.vocab).to(device)
    built.fit_postprocessing(encoder, settings.postprocessing_sentences, seed=settings.seed, modes=modes)
    return encoder


def log_model(tracker: Tracker, config: dict[str, Any], model_dir: Path) -> None:
    if tracker.client is None:
        return
    from skipview.platform.tracking.pyfunc import log_encoder

    uri = log_encoder(model_dir, run_id=tracker.run_id, tracking_uri=config["tracking_uri"])
    tracker.tag("skipview.model_uri", uri)
