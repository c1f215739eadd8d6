"""Where runs are recorded and how a training run maps onto exactly one MLflow run.

MLflow 3 refuses the old ``./mlruns`` file store unless told, so the default is a SQLite file in the working
directory (``./mlflow.db``); ``MLFLOW_TRACKING_URI`` overrides it (a tracking server for clusters). The URI is
resolved once on the driver and handed to the Ray workers as an absolute URI, so a worker whose working
directory differs still writes to the same store.

One training run is one MLflow run, found again by its *run key* (storage path + Ray run name): a worker group
restarted by ``FailureConfig``, or a relaunched driver, continues the run instead of opening a duplicate.

Many processes open the same store at once (runs started together, a run's workers): ``client`` gets every one
through ``ready``, which creates and migrates a new SQLite store once, under a file lock, and closes the runs whose
driver died without closing them (``close_orphans``).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skipview.platform.cluster.ray_temp import refuse_ray_temporary
from skipview.platform.tracking.datasets import log_data

log = logging.getLogger(__name__)
DEFAULT_DB = "mlflow.db"
RUN_KEY_TAG = "skipview.run_key"
# The process that drives a run (the one that fits its trainer), so a later process can tell the run is orphaned
DRIVER_HOST_TAG = "skipview.driver.host"
DRIVER_PROCESS_TAG = "skipview.driver.process"          # "PID@START", START the process's start time (epoch s)
ORPHAN_TAG = "skipview.orphaned"
MAX_PARAM_LENGTH = 6000      # MLflow 3's limit on a param value
PARAMS_PER_BATCH = 100       # MLflow's limit on params per log_batch call
METRICS_PER_BATCH = 1000     # and on metrics


def tracking_uri() -> str:
    """``MLFLOW_TRACKING_URI`` if set, else an absolute ``sqlite:///`` URI to ``./mlflow.db``."""
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if uri:
        return uri
    return f"sqlite:///{(Path.cwd() / DEFAULT_DB).resolve()}"


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (a relative one against the working directory), else None."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///"):]).resolve()


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts become dotted keys (``{"opt": {"lr": 1}} -> {"opt.lr": 1}``); lists stay values."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def client(uri: str | None = None):
    from mlflow.tracking import MlflowClient

    uri = uri or tracking_uri()
    ready(uri)
    return MlflowClient(tracking_uri=uri)


_ready: set[str] = set()


def ready(uri: str) -> None:
    """Make the store at ``uri`` usable by this process, once per process.

    A SQLite store is created and migrated by the first MLflow client that opens it, and MLflow 3.17 does that
    without a lock (``SqlAlchemyStore.__init__``): runs started together on a fresh folder all migrate at once and
    all but one fail (``duplicate column name``, ``table experiments already exists``, alembic's ``expected to match
    one row``). Here the first opening happens under a file lock beside the database (the ``filelock`` package:
    flock on POSIX, released if the holder dies), so one process migrates and the others find the store at its
    latest schema. A store that resolves into Ray's temporary files is refused first (``ray_temp``)."""
    from mlflow.tracking import MlflowClient

    if uri in _ready:
        return
    path = sqlite_path(uri)
    if path is not None:
        from filelock import FileLock

        refuse_ray_temporary(path, "the MLflow store", "set MLFLOW_TRACKING_URI to an MLflow server "
                             "(http://HOST:5000; in a job: --runtime-env-json "
                             "'{\"env_vars\": {\"MLFLOW_TRACKING_URI\": ...}}') or to sqlite:////SHARED/PATH/mlflow.db")
        with FileLock(f"{path}.lock"):
            MlflowClient(tracking_uri=uri).search_experiments(max_results=1)     # creates and migrates it
    _ready.add(uri)
    close_orphans(MlflowClient(tracking_uri=uri))


def driver_tags() -> dict[str, str]:
    """This process as a run's driver: host name, pid and start time (a pid alone may be reused)."""
    import psutil

    return {DRIVER_HOST_TAG: socket.gethostname(),
            DRIVER_PROCESS_TAG: f"{os.getpid()}@{psutil.Process().create_time():.2f}"}


def driver_alive(process: str) -> bool:
    """Whether the ``PID@START`` process of this host still runs (the same process, not a later one with its pid)."""
    import psutil

    pid, _, started = process.partition("@")
    try:
        return abs(psutil.Process(int(pid)).create_time() - float(started)) < 1.0
    except (psutil.NoSuchProcess, ValueError):
        return False
    except psutil.AccessDenied:        # another user's process: alive, its start time unreadable
        return True


def close_orphans(mlflow_client) -> None:
    """Mark KILLED the RUNNING runs whose driver ran on this host and is gone (a ``kill -9``, a lost machine's
    process ends without closing its run), saying so in the log. Runs of other hosts cannot be judged from here and are
    left as they are. Continuing such a run (``open_run``) makes it RUNNING again."""
    host = socket.gethostname()
    ids = [exp.experiment_id for exp in mlflow_client.search_experiments()]
    if not ids:
        return
    running = mlflow_client.search_runs(ids, filter_string=f"attributes.status = 'RUNNING' and "
                                                           f"tags.`{DRIVER_HOST_TAG}` = '{host}'")
    for run in running:
        process = run.data.tags.get(DRIVER_PROCESS_TAG, "")
        if driver_alive(process):
            continue
        # read again: a relaunch may have continued the run under a new driver since the search
        now = mlflow_client.get_run(run.info.run_id)
        if now.info.status == "RUNNING" and now.data.tags.get(DRIVER_PROCESS_TAG) == process:
            mlflow_client.set_tag(run.info.run_id, ORPHAN_TAG, f"driver {process} on {host} ended without closing it")
            mlflow_client.set_terminated(run.info.run_id, status="KILLED")
            log.warning("MLflow run %s (%s) marked KILLED: its driver %s ended without closing it", run.info.run_id,
                        run.info.run_name, process)


def experiment_id(mlflow_client, name: str) -> str:
    found = mlflow_client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    from mlflow.exceptions import MlflowException

    try:
        return mlflow_client.create_experiment(name, artifact_location=artifact_location(mlflow_client, name))
    except MlflowException:          # created meanwhile by another process
        return mlflow_client.get_experiment_by_name(name).experiment_id


def artifact_location(mlflow_client, experiment: str) -> str | None:
    """Next to a SQLite store: MLflow's default (``./mlruns`` of whatever the working directory is) would scatter
    artifacts into Ray's per-run working directories. Other stores keep their server's default."""
    uri = mlflow_client.tracking_uri
    if not uri.startswith("sqlite:///"):
        return None
    return (Path(uri[len("sqlite:///"):]).parent / "mlartifacts" / experiment).resolve().as_uri()


def find_run(mlflow_client, experiment: str | None, run_key: str) -> str | None:
    """The id of the run recorded for ``run_key`` in ``experiment`` (None: in any experiment), or None."""
    if experiment is None:
        ids = [exp.experiment_id for exp in mlflow_client.search_experiments()]
    else:
        exp = mlflow_client.get_experiment_by_name(experiment)
        ids = [exp.experiment_id] if exp is not None else []
    if not ids:
        return None
    runs = mlflow_client.search_runs(ids, filter_string=f"tags.`{RUN_KEY_TAG}` = '{run_key}'",
                                     max_results=2, order_by=["attributes.start_time ASC"])
    return runs[0].info.run_id if runs else None


def open_run(mlflow_client, experiment: str, run_key: str, run_name: str, *, run_id: str | None = None,
             params: Mapping[str, Any] | None = None, tags: Mapping[str, str] | None = None,
             driver: Mapping[str, str] | None = None) -> tuple[str, bool]:
    """Continue the run recorded for ``run_key``, else ``run_id`` (the one a checkpoint names), else create one.

    The key comes first: a checkpoint copied from another run (``skipview ablation --warm-start``) names the run
    it was written by, not the run now resuming from it. Returns ``(run_id, resumed)``. Params are logged only on
    creation: MLflow refuses to change a logged param, and a resumed run keeps the settings it was started with.
    ``driver``: the process the run now depends on (``driver_tags``; default this one), recorded on creation and on
    every continuation, so ``close_orphans`` judges the run by its current driver. A new run whose ``tags`` name its
    data (``lineage.lineage_tags``) logs that data as its MLflow datasets (``datasets``).
    """
    from mlflow.entities import RunStatus, RunTag

    driver = dict(driver or driver_tags())
    run_id = find_run(mlflow_client, experiment, run_key) or run_id
    if run_id is not None:
        mlflow_client.log_batch(run_id, tags=[RunTag(key, value) for key, value in driver.items()])
        mlflow_client.update_run(run_id, status=RunStatus.to_string(RunStatus.RUNNING))
        return run_id, True
    run = mlflow_client.create_run(experiment_id(mlflow_client, experiment), run_name=run_name,
                                   tags={RUN_KEY_TAG: run_key, **(tags or {}), **driver})
    run_id = run.info.run_id
    log_params(mlflow_client, run_id, params or {})
    log_data(mlflow_client, run_id, tags or {})
    return run_id, False


def log_params(mlflow_client, run_id: str, params: Mapping[str, Any]) -> None:
    """``params`` flattened to dotted keys, in as few ``log_batch`` calls as MLflow allows."""
    from mlflow.entities import Param

    items = [Param(k, param_value(v)) for k, v in sorted(flatten(params).items())]
    for start in range(0, len(items), PARAMS_PER_BATCH):
        mlflow_client.log_batch(run_id, params=items[start: start + PARAMS_PER_BATCH])


def check_same_params(mlflow_client, experiment: str, run_key: str, params: Mapping[str, Any], *,
                      defaults: Mapping[str, Any] | None = None, may_differ: Iterable[str] = (),
                      what: str = "run") -> None:
    """Refuse to continue the run recorded for ``run_key`` with other settings than it was started with.

    ``open_run`` continues a recorded run and keeps its first params (MLflow refuses to change them), so a run
    restarted under the same name with new settings would log its curves under the old settings' params. Compared
    as ``settings_changes`` does (``defaults``: the settings' defaults, params-shaped). Raises ValueError, one line
    naming the differing keys."""
    run_id = find_run(mlflow_client, experiment, run_key)
    if run_id is None:
        return
    changes = settings_changes(mlflow_client.get_run(run_id).data.params, param_strings(params),
                               param_strings(defaults or {}), may_differ=may_differ)
    if changes:
        raise ValueError(f"{what}: MLflow run {run_id} in experiment {experiment!r} has this name and other settings "
                         f"({changes}); choose another --name, or delete that run and its checkpoints to start over")


def settings_changes(recorded: Mapping[str, str], planned: Mapping[str, str], defaults: Mapping[str, str], *,
                     may_differ: Iterable[str] = ()) -> str:
    """``param_changes`` between a recorded run's settings and a planned run's, over the keys EITHER side has:
    a key only the recorded run has is a setting the planned run drops (a per-module learning rate), a change;
    a key only the planned run has is a setting added to skipview since the run was recorded, which had its
    default then (``defaults``), so old runs can still be continued with today's code. Keys ending in one of
    ``may_differ`` (a budget a continued run may extend) are not compared."""
    allowed = set(may_differ)
    keys = [key for key in planned.keys() | recorded.keys() if key.rsplit(".", 1)[-1] not in allowed]
    return param_changes({**defaults, **recorded}, planned, keys)


def param_strings(params: Mapping[str, Any]) -> dict[str, str]:
    """Settings as MLflow records them: dotted keys, string values."""
    return {key: param_value(value) for key, value in flatten(params).items()}


def param_changes(recorded: Mapping[str, str], planned: Mapping[str, str], keys: Iterable[str]) -> str:
    """``key: recorded -> planned`` for the first four of ``keys`` whose values differ (a key one side lacks reads
    None), comma-separated; empty when none differs."""
    differing = sorted(key for key in keys if planned.get(key) != recorded.get(key))
    return ", ".join(f"{key}: {recorded.get(key)} -> {planned.get(key)}" for key in differing[:4])


def last_logged_step(mlflow_client, run_id: str, key: str) -> int:
    """The highest step at which ``key`` was logged in the run (-1 if never: a run opened before training, as a
    study opens its runs, has logged no step yet, step 0 included)."""
    return max((m.step for m in mlflow_client.get_metric_history(run_id, key)), default=-1)


def last_logged_value(mlflow_client, run_id: str, key: str) -> float:
    """The value of ``key`` at the highest step the run logged it (NaN if never)."""
    history = mlflow_client.get_metric_history(run_id, key)
    return max(history, key=lambda metric: metric.step).value if history else float("nan")


def trained_hours(mlflow_client, run_id: str, sentences_per_step: float) -> dict[int, float]:
    """Hours the training loop had trained at the end of each of its throughput windows, by the window's last step,
    over every attempt of the run: every ``log_every`` steps, and at each checkpoint's step, the loop logs
    ``sentences_per_s`` of the steps since the last (``window.py``; a checkpoint's writing and STS14 fall in the
    window after it), and a window lasted its sentences over that rate. A run stopped and resumed hours later trained
    for neither the span from its first step to its last (that holds the pause) nor its last attempt alone.
    Start-up and the final save are in no window, nor are steps a restart after a failure trained again (the loop
    does not log a step twice); empty when the run logged no window."""
    windows = sorted(mlflow_client.get_metric_history(run_id, "sentences_per_s"), key=lambda window: window.step)
    hours, seconds, last_step = {}, 0.0, 0
    for window in windows:
        seconds += (window.step - last_step) * sentences_per_step / window.value
        last_step = window.step
        hours[window.step] = seconds / 3600
    return hours


def log_metrics(mlflow_client, run_id: str, metrics: Mapping[str, float], step: int) -> None:
    log_metric_steps(mlflow_client, run_id, [(step, metrics)])


def log_metric_steps(mlflow_client, run_id: str, records: Iterable[tuple[int, Mapping[str, float]]]) -> None:
    """The metrics of many steps in as few ``log_batch`` calls as MLflow allows (each call is a database
    transaction: one per step would cost a training step a noticeable share of its time)."""
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    metrics = [Metric(k, float(v), now, step) for step, values in records for k, v in values.items()]
    for start in range(0, len(metrics), METRICS_PER_BATCH):
        mlflow_client.log_batch(run_id, metrics=metrics[start: start + METRICS_PER_BATCH])


def param_value(value: Any) -> str:
    text = str(value)
    return text if len(text) <= MAX_PARAM_LENGTH else text[: MAX_PARAM_LENGTH - 3] + "..."
