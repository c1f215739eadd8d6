"""The MLflow UI's ways in: a saved view of the runs page (an experiment tag the page applies) and its links."""

from __future__ import annotations

import json
import urllib.parse

from skipview.platform.tracking import store, ui


def test_a_grouped_view_names_the_grouping_tag_and_orders_the_columns_as_given(tmp_path):
    view = ui.grouped_view("cell", ["seed"], ["summary/sts_avg", "summary/sts14"], order_by="summary/sts_avg")
    assert view["groupBy"] == {"aggregateFunction": "average", "groupByKeys": [{"mode": "tag", "groupByData": "cell"}]}
    assert view["selectedColumns"] == ["attributes.`Dataset`", "tags.`seed`", "metrics.`summary/sts_avg`",
                                       "metrics.`summary/sts14`"]
    # the study's order (the page's own would be alphabetical: sts14 before sts_avg), the seed beside the name
    assert view["columnOrder"][:4] == ["attributes.`Run Name`", "tags.`seed`", "metrics.`summary/sts_avg`",
                                       "metrics.`summary/sts14`"]
    assert set(view["columnWidths"]) <= set(view["columnOrder"])       # the page sizes only the columns it orders
    assert (view["orderByKey"], view["orderByAsc"]) == ("metrics.`summary/sts_avg`", False)

    client = store.client(f"sqlite:///{tmp_path}/m.db")
    experiment = store.experiment_id(client, "study")
    ui.save_view(client, experiment, "key", view)
    assert json.loads(client.get_experiment(experiment).tags["mlflow.sharedViewState.key"]) == view


def test_links_to_a_local_store_and_to_a_tracking_server():
    assert ui.address("sqlite:////data/mlflow.db") == "http://127.0.0.1:5000"
    assert ui.serve_command("sqlite:////data/mlflow.db") == "mlflow ui --backend-store-uri sqlite:////data/mlflow.db"
    assert ui.address("http://tracking:5000/") == "http://tracking:5000"
    assert ui.serve_command("http://tracking:5000/") is None                 # a server serves its own UI
    assert ui.runs_page("http://h", "7", "a view") == "http://h/#/experiments/7/runs?viewStateShareKey=a%20view"
    assert ui.runs_page("http://h", "7") == "http://h/#/experiments/7/runs"
    link = urllib.parse.urlparse(ui.compare_page("http://h", "7", ["a1", "b2"]).replace("#/", ""))
    query = urllib.parse.parse_qs(link.query)
    assert (link.path, json.loads(query["runs"][0]), json.loads(query["experiments"][0])) == (
        "/compare-runs", ["a1", "b2"], ["7"])
