"""The driver side of a training run: connect to Ray, build the ``TorchTrainer``, fit, collect the outputs.

``build_trainer`` is the reusable piece: a Tune trial calls it with its own run name and a
``TuneReportCallback`` and fits it inside the trial. ``train`` is what ``skipview train`` does around it:
starts or joins Ray, resumes a run of the same name from its latest checkpoint (Ray Train V2 restores a run
from ``storage/name`` when a trainer with the same ``RunConfig`` is fitted again), turns a diverged run into a
clear error, and copies the final model directory out of the last checkpoint.
"""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import shutil
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.fs
import torch

from skipview.models.corpus import PreparedCorpus
from skipview.models.directories import swap_in
from skipview.models.objective import ObjectiveConfig
from skipview.platform import stopping
from skipview.platform.cluster.auth import ensure_private_token
from skipview.platform.cluster.ray_temp import refuse_ray_temporary
from skipview.platform.errors import ClusterTooSmall, CorruptCheckpoint, Diverged, StorageFull
from skipview.platform.files import is_full, storage_full, write_json_aside
from skipview.platform.tracking import store
from skipview.platform.tracking.lineage import lineage_tags, portable_path
from skipview.platform.training import checkpoint as ckpt, watchdog
from skipview.platform.training.config import BUDGET_KEYS, RunSettings, TrainSettings, check_precision
from skipview.platform.training.objectives import aligned_word_vectors
from skipview.platform.training.run_log import RunLog

log = logging.getLogger(__name__)
STATE_API_ENV = "RAY_API_SERVER_ADDRESS"
# How long Ray Train's controller waits for a worker group's placement group (ray.train.v2._internal.constants;
# fit() passes it on to the controller)
START_TIMEOUT_ENV = "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"


def is_uri(storage: str) -> bool:
    return "://" in storage


def storage_root(storage: str) -> str:
    """Ray needs an absolute local path (or a URI). One in Ray's temporary files (a relative path in a job submitted
    with ``--working-dir``) is refused: the checkpoints would vanish with them."""
    if is_uri(storage):
        return storage
    refuse_ray_temporary(storage, f"--storage {storage}", "pass --storage an absolute path every node reaches "
                         "(a shared file system) or an object store URI (s3://BUCKET/runs)")
    return str(Path(storage).expanduser().resolve())


def local_root(storage: str) -> Path:
    """Where this driver keeps the local outputs of runs stored under ``storage`` (model directories a study loads
    again, a search's best settings): the storage itself when it is a local path. A URI (``s3://bucket/runs``) is no
    local folder, and ``Path`` would turn it into one named ``s3:``; its local outputs go to ``./runs``."""
    return Path("runs").resolve() if is_uri(storage) else Path(storage_root(storage))


def run_key(run: RunSettings) -> str:
    return f"{storage_root(run.storage).rstrip('/')}/{run.name}"


def run_name_prefix(settings: TrainSettings) -> str:
    """What the default names of runs of this objective on this corpus start with (``--resume`` looks for it)."""
    corpus = Path(settings.corpus).resolve()
    corpus_name = corpus.parent.name if corpus.name == "prepared" else corpus.name
    return f"{settings.objective.split(':')[-1]}-{corpus_name}-"


def new_run_name(settings: TrainSettings) -> str:
    """The prefix, the time, and four random hex digits: runs started in the same second (several runs launched
    together on one machine) get their own names, so their own checkpoints and MLflow runs."""
    return f"{run_name_prefix(settings)}{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def latest_run_name(storage: str, prefix: str) -> str | None:
    """The latest run under ``storage`` whose name starts with ``prefix``: the most recently modified directory of a
    local storage; on object storage (whose "directories" have no modification time) the last by name, which for
    ``new_run_name``'s names is the newest timestamp."""
    if is_uri(storage):
        fs, root = pyarrow.fs.FileSystem.from_uri(storage)
        found = fs.get_file_info(pyarrow.fs.FileSelector(root, allow_not_found=True))
        names = [info.base_name for info in found
                 if info.type == pyarrow.fs.FileType.Directory and info.base_name.startswith(prefix)]
        return max(names) if names else None
    root = Path(storage_root(storage))
    runs = [p for p in root.glob(f"{prefix}*") if p.is_dir()] if root.is_dir() else []
    return max(runs, key=lambda p: p.stat().st_mtime).name if runs else None


def objective_config(settings: TrainSettings) -> dict[str, Any]:
    """The objective's settings with its defaults filled in. A ``module:factory`` objective has no registered
    config: its settings as given."""
    config = settings.objective_settings
    return config.model_dump(mode="json") if isinstance(config, ObjectiveConfig) else dict(config)


def check_inputs(settings: TrainSettings, gpus_per_worker: float = 0) -> None:
    """Fail on the driver, before any Ray process starts, on what every worker would otherwise fail on (and Ray
    would retry): a precision the device cannot train in, the prepared corpus and the word vectors (present, and
    aligned with the corpus vocabulary). The objective's settings were checked when ``settings`` was made."""
    check_precision(settings.precision, gpus_per_worker > 0)
    check_data(settings)


def check_data(settings: TrainSettings) -> None:
    """The prepared corpus opens, and its word vectors are present and aligned with its vocabulary."""
    corpus = PreparedCorpus(settings.corpus)
    if settings.wordvecs is not None:
        aligned_word_vectors(settings.wordvecs, corpus.vocab)


def tags_for(settings: TrainSettings) -> dict[str, str]:
    objective = objective_config(settings)
    tags = {"objective": settings.objective, "seed": str(settings.seed), **lineage_tags(settings.corpus,
                                                                                           settings.wordvecs)}
    for key in ("views", "invertible"):
        if key in objective:
            tags[key] = str(objective[key])
    return tags


def run_params(settings: TrainSettings) -> dict[str, Any]:
    """What a run records as its MLflow params: the settings, the objective's with their defaults filled in."""
    return {**settings.model_dump(mode="json"), "objective_settings": objective_config(settings)}


def check_continuation(settings: TrainSettings, run: RunSettings) -> None:
    """A name MLflow already records is that run continued: the same settings, its budget aside."""
    client = store.client(run.tracking_uri or store.tracking_uri())
    defaults = run_params(TrainSettings(objective=settings.objective, corpus=settings.corpus))
    store.check_same_params(client, run.experiment, run_key(run), run_params(settings), defaults=defaults,
                            may_differ=BUDGET_KEYS, what=f"run {run.name}")


def loop_config(settings: TrainSettings, run: RunSettings, tracking_uri: str,
                stop_request: str | None = None) -> dict[str, Any]:
    # the driver is this process (a Tune trial's, in a search): a run whose driver is gone is closed by the next
    # process that opens the store (store.close_orphans)
    return {"settings": settings.model_dump(mode="json"), "run_name": run.name, "run_key": run_key(run),
            "experiment": run.experiment, "tracking_uri": tracking_uri, "cpus_per_worker": run.cpus_per_worker,
            "params": run_params(settings), "tags": tags_for(settings), "driver": store.driver_tags(),
            "stop_request": stop_request}


def build_trainer(settings: TrainSettings, run: RunSettings, *, tracking_uri: str, callbacks: list | None = None,
                  stop_request: str | None = None):
    """The run's ``TorchTrainer``; its workers stop at the next step, with a checkpoint, when the driver's
    ``StopRequest`` actor named ``stop_request`` is told to (``preemption.py``)."""
    import ray.train
    from ray.train.torch import TorchTrainer

    from skipview.platform.training.divergence import FailWithoutRestart
    from skipview.platform.training.loop import train_loop_per_worker
    from skipview.platform.training.rendezvous import NodeAddressTorchConfig
    from skipview.platform.training.run_folder import KeepSnapshot

    # a local storage's copy of Ray's checkpoint record, which a full disk can leave empty (run_folder.py)
    keep = [] if is_uri(run.storage) else [KeepSnapshot(run_key(run))]
    score = {"checkpoint_score_attribute": "sts14", "checkpoint_score_order": "max"} if settings.senteval_dir else {}
    return TorchTrainer(
        train_loop_per_worker,
        train_loop_config=loop_config(settings, run, tracking_uri, stop_request),
        torch_config=NodeAddressTorchConfig(),          # the DDP store on the node's address (rendezvous.py)
        scaling_config=ray.train.ScalingConfig(
            num_workers=run.workers, use_gpu=run.gpus_per_worker > 0,
            resources_per_worker={"CPU": run.cpus_per_worker, **({"GPU": run.gpus_per_worker}
                                                                  if run.gpus_per_worker else {})}),
        run_config=ray.train.RunConfig(
            name=run.name, storage_path=storage_root(run.storage),
            callbacks=[FailWithoutRestart(), *keep, *(callbacks or [])],
            # Without a score Ray keeps the most recent ones; with it the best by STS14 plus always the latest.
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=run.keep_checkpoints, **score),
            # with a bounded wait the worker group's start is tried once, for worker_wait_s (train())
            failure_config=ray.train.FailureConfig(
                max_failures=run.max_failures, controller_failure_limit=-1 if run.worker_wait_s is None else 0)),
    )


def connect(address: str | None, cpus: int | None = None, *, log_to_driver: bool = True,
            run_log: RunLog | None = None) -> None:
    """Join the cluster at ``address`` (or ``RAY_ADDRESS``), else start a local Ray on the cores this process may
    use. ``address="local"`` makes it a new Ray of our own even when someone else's ``ray start`` runs here.

    The local Ray gets its dashboard on a free port, announced to every Ray process as the state-API server:
    Ray Train's PlacementGroupCleaner asks that API whether a run's controller is alive. Without it the API call
    fails (or, through /tmp/ray's "current cluster" file, asks another cluster), the cleaner dies, and the
    placement group of a controller that was killed (a trial stopped by ASHA, a killed run) is never freed, so
    later trials wait forever for CPUs that look free.

    Ray's observability machinery that nothing of a local run reads is switched off or slowed
    (``LOCAL_HEAD_CONFIG``, ``LOCAL_HEAD_ENV``); a cluster given by address is left as its owner configured it.
    With ``run_log`` (``run_log.capture``) the workers' output goes to its file instead of the console.
    """
    import ray

    if not ray.is_initialized():
        start_or_join(address, cpus, log_to_driver)
    if run_log is not None:
        run_log.take_worker_output()


def start_or_join(address: str | None, cpus: int | None, log_to_driver: bool) -> None:
    import ray

    address = address or os.environ.get("RAY_ADDRESS")
    if address and address != "local":
        ray.init(address=address, log_to_driver=log_to_driver)
        stopping.reinstall()
        return
    ensure_private_token()          # before ray.init, which would otherwise write it readable by every user
    # Ray's processes are started by ray.init and inherit the environment then (the watchdog's mark included); the
    # caller's is left as it was
    mark = watchdog.marked(os.getpid())
    for attempt in range(1, LOCAL_START_TRIES + 1):
        try:
            start_local(cpus, log_to_driver, mark)
            break
        except BaseException as error:      # a stop while Ray starts too: the processes it had started go with it
            ray.shutdown()
            watchdog.end(watchdog.local_ray(mark[watchdog.MARK]))
            expired = [wait for message, wait in LOCAL_START_WAITS.items() if message in str(error)]
            if attempt == LOCAL_START_TRIES or not expired:
                raise
            log.warning("the local Ray did not start: %s; starting it again (try %d of %d)", expired[0], attempt + 1,
                        LOCAL_START_TRIES)
    watchdog.start(os.getpid(), mark)
    atexit.register(end_local_ray, mark[watchdog.MARK])     # before Ray's own (registered when Ray was imported)
    stopping.reinstall()            # over the C++ SIGTERM handler ray.init installs (it aborts the process in 3 s)


def end_local_ray(mark_value: str) -> None:
    """At the driver's exit, its local Ray ended before the driver goes: Ray's shutdown, waited on, then what it
    leaves (its dashboard and runtime-env agents can outlive their raylet; ``watchdog``'s docstring), listed before
    the shutdown while they are still the raylet's children. So a command's exit leaves nothing of its Ray, however
    loaded the machine: the watchdog, which ends the rest once the driver is gone, was 3 s late for the runtime-env
    agent of a command stopped in the idle test suite's busiest minute. It stays for a driver killed outright, which
    runs no exit handler."""
    import ray

    processes = watchdog.local_ray(mark_value)
    ray.shutdown(wait_for_processes=True)
    watchdog.end(processes + watchdog.local_ray(mark_value))


# Ray 2.60 waits fixed times for a new node's processes and then raises, with these words: 30 s for the raylet to
# register with its GCS (ray/_private/node.py), and 60 s for the dashboard to publish its address
# (ray/_private/services.py; its variable RAY_DASHBOARD_STARTUP_TIMEOUT_S is read once, when Ray is imported). On two
# cores busy with other Rays starting (the test suite's slowest minute) the GCS's own reply timed out after 45 s, and
# the dashboard, its nine module processes started, had not published its address after 69 s: starts on a busy
# machine, which a second try passes, not a broken Ray. A dashboard that ended instead fails every try alike, and the
# last try's error is raised.
LOCAL_START_WAITS = {"The current node timed out during startup": "its raylet did not register within Ray's 30 s",
                     "(it contains the error message from the dashboard)":
                         "its dashboard did not come up within Ray's 60 s"}
LOCAL_START_TRIES = 3


def start_local(cpus: int | None, log_to_driver: bool, mark: dict[str, str]) -> None:
    import ray

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with environment({STATE_API_ENV: f"http://127.0.0.1:{port}", **LOOPBACK_ONLY, **LOCAL_HEAD_ENV, **mark}), \
            loopback_node_ip():
        ray.init(address="local", num_cpus=cpus or len(os.sched_getaffinity(0)), include_dashboard=True,
                 dashboard_host="127.0.0.1", dashboard_port=port, log_to_driver=log_to_driver,
                 _system_config=LOCAL_HEAD_CONFIG)


# A local Ray serves one user's run on one machine, so nothing of it should be reachable from the network. Ray 2.60
# gives its node the machine's address and then binds the GCS, the raylet and the workers to every interface and the
# dashboard agent to 0.0.0.0 (Ray binds to the node's address only from ray-project/ray#59852, 2026). Ray picks the
# loopback address as the node's address where clusters are off (its default on macOS and Windows,
# ray-project/ray#24130), and every process then listens on 127.0.0.1 only: the switch is this variable, which Ray's
# processes read when they start, and the constant the driver read when it imported Ray.
LOOPBACK_ONLY = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}

# What Ray 2.60 runs for observability that a local run never reads (skipview's metrics go to MLflow). Without it
# Ray's own processes take 4.8-5.2 CPU s per minute of training instead of 6.3 (benchmarks/ray_overhead.py,
# reports/benchmarks/ray_overhead.json: the dashboard agent 0.45 -> 0.08, the log monitor 0.50 -> 0.20, the
# dashboard 0.68 -> 0.42, the GCS 0.35 -> 0.23). Every Ray process (the GCS, the raylet, each of Ray Train's six
# actors and the idle worker) records metrics for the dashboard agent's Prometheus endpoint and sends its task
# events to the GCS every second (for the dashboard's task list and `ray list tasks`), and the raylet and the GCS
# write a debug-state dump every 10 s. Ray Train's PlacementGroupCleaner asks the state API for an actor, which the
# GCS's actor table answers, not the task events. Left alone: the workers' own timers (an idle actor costs 0.23 s a
# minute; a 10x slower internal heartbeat and raylet check and no event stats saved 0.01-0.02), usage stats (which
# ray.init already turns off) and the autoscaler monitor and log monitor processes (ray.init has no switch for them).
# Nor does a local head start idle Python workers when its driver connects: Ray prestarts one per CPU for the tasks
# a driver may send, but skipview sends none and each of a run's actors starts a process of its own, so they only
# wait (about 1 CPU s each to start, 0.3-0.8 CPU s a minute idle). Without them an idle head of 2 CPUs took 1.7 CPU s
# a minute instead of 2.6, and a `skipview train` of the tests' size (tests/platform/training/test_together.py's
# command) 31.6 CPU s instead of 32.8 in all, Ray's processes included (medians of 4 alternated pairs, each run's
# process tree counted by a cpuacct group, on the 2-core AMD EPYC with native bf16, beside two trainings).
LOCAL_HEAD_CONFIG = {"enable_metrics_collection": False, "task_events_report_interval_ms": 0,
                     "debug_dump_period_milliseconds": 0, "prestart_worker_first_driver": False}
# Read by Ray's Python processes when they start. The log monitor, which forwards the workers' output to the
# driver, globs the log folder for new files every 0.1 s until there are 1000 of them; from the threshold 0 on it
# globs every LOG_NAME_UPDATE_INTERVAL_S, and a new worker's file, read from its start, is merely found up to 5 s
# later (lines of known files still go out within 0.1 s). The dashboard agent's reporter samples every process of
# the node for the dashboard's node view every 5 s, and the dashboard records its own modules' CPU and memory as
# metrics every 5 s: once a minute is enough for a page nobody opens. Ray Train starts a preemption watcher actor
# per run (a process importing Ray Train, polling the node's drain state every 5 s): a local head's one node is
# never drained by a cloud provider.
LOCAL_HEAD_ENV = {"RAY_LOG_MONITOR_MANY_FILES_THRESHOLD": "0", "LOG_NAME_UPDATE_INTERVAL_S": "5",
                  "REPORTER_UPDATE_INTERVAL_MS": "60000", "METRICS_RECORD_INTERVAL_S": "60",
                  "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0"}


@contextmanager
def environment(variables: dict[str, str]):
    """``variables`` set in this process's environment for the block, then the caller's values back."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value


@contextmanager
def loopback_node_ip():
    """The driver's own choice of node address (read by ``ray.init`` from a constant set when Ray was imported)."""
    from ray._private import ray_constants

    before = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before


def check_local_resources(workers: int, cpus_per_worker: float, gpus_per_worker: float, address: str | None) -> None:
    """Refuse a worker group larger than the local Ray that ``connect`` would start for it: Ray Train would wait for
    the missing CPUs (or GPUs) and retry without end. A cluster (``address`` or ``RAY_ADDRESS``) may grow by
    autoscaling, so it is not judged here."""
    if (address or os.environ.get("RAY_ADDRESS")) not in (None, "", "local"):
        return
    cpus = len(os.sched_getaffinity(0))
    if workers * cpus_per_worker > cpus:
        raise ValueError(f"--workers {workers} x --cpus-per-worker {cpus_per_worker:g} needs "
                         f"{workers * cpus_per_worker:g} CPUs; the local Ray has {cpus} (use --workers "
                         f"{max(1, int(cpus // cpus_per_worker))} or fewer, or --address a cluster)")
    if gpus_per_worker:
        gpus = torch.cuda.device_count()
        if workers * gpus_per_worker > gpus:
            raise ValueError(f"--workers {workers} x --gpus-per-worker {gpus_per_worker:g} needs "
                             f"{workers * gpus_per_worker:g} GPUs; this machine has {gpus}")


@dataclass
class Outcome:
    run_name: str
    mlflow_run_id: str | None
    metrics: dict[str, Any]
    checkpoint_path: str | None
    model_dir: Path | None


def train(settings: TrainSettings, run: RunSettings, *, callbacks: list | None = None) -> Outcome:
    """Fit the run (or resume it). A stop signal makes its workers write a checkpoint at their next step and end;
    then this raises ``Stopped`` saying where that checkpoint is (a second signal stops at once)."""
    import ray.train
    from ray.train.v2._internal.exceptions import WorkerGroupStartupTimeoutError

    from skipview.platform.training import run_folder
    from skipview.platform.training.divergence import cause, not_retried
    from skipview.platform.training.preemption import STOPPED_METRIC, DriverStop

    uri = run.tracking_uri or store.tracking_uri()
    if not is_uri(run.storage):
        for change in run_folder.repair(Path(run_key(run))):
            log.warning(change)
    stop = DriverStop()
    trainer = build_trainer(settings, run, tracking_uri=uri, callbacks=callbacks, stop_request=stop.name)
    missing = missing_resources(run)
    if missing and run.worker_wait_s is not None:
        log.warning("run %s: the workers need %s; waiting up to %g s for the cluster to grow (--wait-for-workers)",
                    run.name, missing, run.worker_wait_s)
    wait = {} if run.worker_wait_s is None else {START_TIMEOUT_ENV: f"{run.worker_wait_s:g}"}
    with environment(wait), stopping.deferred(stop.on_signal):
        try:
            result = stopping.in_thread(trainer.fit)
        except stopping.Stopped as stopped:
            mark_failed(store.client(uri), run, status="KILLED")
            stopped.kept = f"run {run.name} without a checkpoint of its own; its last: {last_checkpoint(run)}"
            raise
        except ray.train.TrainingFailedError as error:
            # a run that stopped is not running; the next launch of the same name continues it (store.open_run)
            mark_failed(store.client(uri), run)
            found = not_retried(error)
            if isinstance(found, Diverged):
                raise Diverged(f"run {run.name}: {found}; last good checkpoint: {last_checkpoint(run)}") from None
            if isinstance(found, CorruptCheckpoint):
                raise CorruptCheckpoint(f"run {run.name}: {found}") from None
            if found is not None:
                raise StorageFull(str(found)) from None
            if cause(error, lambda e: isinstance(e, WorkerGroupStartupTimeoutError)) is not None:
                raise ClusterTooSmall(f"run {run.name}: the cluster gave no room for {run.workers} worker(s) in "
                                      f"{run.worker_wait_s:g} s: they need {missing or 'what it had then'}; use fewer "
                                      "--workers or --cpus-per-worker, or --wait-for-workers -1 to wait without bound "
                                      "(an autoscaling cluster)") from None
            # Ray's own writes to a full storage (its checkpoint record) fail in its controller
            if cause(error, is_full) is not None and not is_uri(run.storage):
                raise storage_full(Path(run_key(run)), "Ray could not record the run's checkpoints",
                                   ckpt.FULL_HINT) from None
            raise
        finally:
            stop.close()
    if result.metrics.get(STOPPED_METRIC):
        raise stopping.Stopped(stopping.requested(), kept=f"run {run.name} stopped at step {result.metrics['step']} "
                               f"with a checkpoint ({result.checkpoint.path}); its MLflow run is marked KILLED")
    client = store.client(uri)
    run_id = store.find_run(client, run.experiment, run_key(run))
    model_dir = None
    if run.output is not None and result.checkpoint is not None:
        model_dir = copy_model(result.checkpoint, Path(run.output))
    return Outcome(run.name, run_id, dict(result.metrics or {}),
                   result.checkpoint.path if result.checkpoint else None, model_dir)


def missing_resources(run: RunSettings) -> str | None:
    """What the worker group needs that the cluster does not have free now, e.g. ``CPU 2 (1 in all, 1 free)``."""
    import ray

    need = {"CPU": run.workers * run.cpus_per_worker, "GPU": run.workers * run.gpus_per_worker}
    total, free = ray.cluster_resources(), ray.available_resources()
    short = [f"{name} {amount:g} ({total.get(name, 0):g} in all, {free.get(name, 0):g} free)"
             for name, amount in need.items() if amount and free.get(name, 0) < amount]
    return ", ".join(short) or None


def mark_failed(client, run: RunSettings, status: str = "FAILED") -> None:
    """Mark the run's MLflow run FAILED (or KILLED: stopped) if it is still RUNNING: the workers mark only a
    divergence and a stop they saw through themselves."""
    run_id = store.find_run(client, run.experiment, run_key(run))
    if run_id is not None and client.get_run(run_id).info.status == "RUNNING":
        client.set_terminated(run_id, status=status)


def last_checkpoint(run: RunSettings) -> str:
    """The path of the run's latest registered checkpoint, or why there is none. A run that failed before its first
    checkpoint has no checkpoint-manager snapshot, and Ray's ``Result.from_path`` raises on it."""
    import ray.train

    try:
        latest = ray.train.Result.from_path(run_key(run)).checkpoint
    except (RuntimeError, ValueError, OSError):
        latest = None
    return latest.path if latest else "none (it failed before its first checkpoint)"


def copy_model(checkpoint, output: Path) -> Path:
    """Copy the model directory out of the final checkpoint: written aside, then swapped in."""
    with checkpoint.as_directory() as directory:
        source = Path(directory) / ckpt.MODEL_DIR
        if not source.is_dir():
            raise FileNotFoundError(f"{checkpoint.path}: the last checkpoint has no {ckpt.MODEL_DIR}/ "
                                    "(the run did not finish)")
        partial = output.with_name(output.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(source, partial)
    return swap_in(partial, output)


def write_metrics(outcome: Outcome, path: Path) -> None:
    checkpoint = portable_path(outcome.checkpoint_path) if outcome.checkpoint_path else None
    write_json_aside(path, {"run_name": outcome.run_name, "mlflow_run_id": outcome.mlflow_run_id,
                            "checkpoint": checkpoint, "metrics": outcome.metrics})
