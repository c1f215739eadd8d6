"""The MLflow UI as the way into an experiment: a saved view of its runs page, and the links that open it.

MLflow 3's runs page keeps what it shows (columns, grouping) in the browser, except a *shared view*: an experiment
tag ``mlflow.sharedViewState.<key>`` holding the page's state as JSON, which the page applies when its URL carries
``?viewStateShareKey=<key>`` (MLflow's own Share button writes the same tag). ``save_view`` writes one, so a printed
link opens the runs grouped and with the chosen columns on any machine that opens the same store. The view names
columns and a grouping only, never run ids, so it stays right as runs are added. The compare page
(``#/compare-runs``) takes its runs and experiments in its URL and has no view to carry.
"""

from __future__ import annotations

import json
import urllib.parse

VIEW_TAG_PREFIX = "mlflow.sharedViewState."
VIEW_KEY_PARAM = "viewStateShareKey"
LOCAL_UI = "http://127.0.0.1:5000"              # where `mlflow ui` serves by default


def column(kind: str, key: str) -> str:
    """A runs-page column id as the page writes it: ``metrics.`summary/sts_avg```, ``tags.`seed```,
    ``attributes.`Dataset```."""
    return f"{kind}.`{key}`"


RUN_NAME, DATASET = column("attributes", "Run Name"), column("attributes", "Dataset")
CREATED, DURATION = "runDateAndNestInfo", "duration"         # the page's own ids of these two columns
METRIC_WIDTH, DATASET_WIDTH, RUN_NAME_WIDTH = 150, 720, 240   # pixels: a metric's digits, both datasets, a group


def grouped_view(group_tag: str, tags: list[str], metrics: list[str], order_by: str) -> dict:
    """The runs page grouped by the tag ``group_tag`` (one row per value with the mean of its runs, its runs
    below), sorted by the metric ``order_by``, best first. Its columns, in this order: the run's name, ``tags``,
    ``metrics``, its datasets, when it was created and how long it ran (the page itself would sort metrics by
    name and put tags last); the page keeps a column's width only for the columns an order names."""
    shown_tags, shown_metrics = [column("tags", t) for t in tags], [column("metrics", m) for m in metrics]
    return {"groupBy": {"aggregateFunction": "average", "groupByKeys": [{"mode": "tag", "groupByData": group_tag}]},
            "selectedColumns": [DATASET, *shown_tags, *shown_metrics],
            "columnOrder": [RUN_NAME, *shown_tags, *shown_metrics, DATASET, CREATED, DURATION],
            "columnWidths": {RUN_NAME: RUN_NAME_WIDTH, DATASET: DATASET_WIDTH,
                             **{key: METRIC_WIDTH for key in shown_metrics}},
            "runsHiddenMode": "SHOW_ALL",          # every group in the page's charts too, not its first ten
            "orderByKey": column("metrics", order_by), "orderByAsc": False}


def save_view(mlflow_client, experiment_id: str, key: str, view: dict) -> None:
    mlflow_client.set_experiment_tag(experiment_id, VIEW_TAG_PREFIX + key, json.dumps(view, sort_keys=True))


def address(tracking_uri: str) -> str:
    """Where the UI of ``tracking_uri`` is served: a tracking server serves its own; a local store is served by
    ``mlflow ui`` (``serve_command``) on its default address."""
    return tracking_uri.rstrip("/") if tracking_uri.startswith(("http://", "https://")) else LOCAL_UI


def serve_command(tracking_uri: str) -> str | None:
    """The command that serves a local store's UI at ``LOCAL_UI``; None for a tracking server."""
    if tracking_uri.startswith(("http://", "https://")):
        return None
    return f"mlflow ui --backend-store-uri {tracking_uri}"


def runs_page(base: str, experiment_id: str, view_key: str | None = None) -> str:
    """The experiment's runs page (the bare experiment URL opens its traces in MLflow 3), in the saved view."""
    query = f"?{VIEW_KEY_PARAM}={urllib.parse.quote(view_key)}" if view_key else ""
    return f"{base}/#/experiments/{experiment_id}/runs{query}"


def compare_page(base: str, experiment_id: str, run_ids: list[str]) -> str:
    """The compare page of ``run_ids``: parallel coordinates, then their params, metrics and tags side by side."""
    runs, experiments = (urllib.parse.quote(json.dumps(ids)) for ids in (run_ids, [experiment_id]))
    return f"{base}/#/compare-runs?runs={runs}&experiments={experiments}"
