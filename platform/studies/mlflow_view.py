"""A study in the MLflow UI: its experiment's runs page as the study's matrix, and the links that open it.

The runs page in the study's saved view (``tracking.ui``) groups the runs by their ``cell`` tag: one row per cell
with the mean over its seeds of each report column, and below it one row per seed, with the run's datasets, its
seed and the report's columns (``summary/<column>``, logged by the runner), sorted by the study's first column.
The grouping reads tags the runs already carry, so it holds whatever the store holds: one run per (cell, seed),
since a rerun skips a finished run and a resumed one continues its MLflow run (found by its run key).

``skipview study run`` saves the view as the study starts and prints the links at its end, as ``skipview study
report`` does; the compare page is that of the finished runs the report reads (the latest per cell and seed).
"""

from __future__ import annotations

from skipview.platform.studies.matrix import CELL_TAG, EVALUATED_TAG, SEED_TAG, STUDY, STUDY_TAG, SUMMARY, Matrix
from skipview.platform.tracking import ui

VIEW_KEY = "skipview-study"


def study_view(matrix: Matrix) -> dict:
    columns = [f"{SUMMARY}/{column.name}" for column in matrix.columns]
    return ui.grouped_view(CELL_TAG, [SEED_TAG], columns, order_by=columns[0])


def save_study_view(client, experiment: str, matrix: Matrix) -> str | None:
    """Save the study's view on its experiment; return the experiment's id (None: no such experiment here)."""
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    ui.save_view(client, found.experiment_id, VIEW_KEY, study_view(matrix))
    return found.experiment_id


def finished_runs(client, experiment_id: str) -> list[str]:
    """The ids of the study's finished, evaluated runs, the latest of each (cell, seed), by cell and seed."""
    runs = client.search_runs([experiment_id], filter_string=(f"tags.`{STUDY_TAG}` = '{STUDY}' and "
                                                              f"tags.`{EVALUATED_TAG}` = 'true' and "
                                                              "attributes.status = 'FINISHED'"),
                              order_by=["attributes.start_time ASC"], max_results=5000)
    latest = {(run.data.tags.get(CELL_TAG), run.data.tags.get(SEED_TAG)): run.info.run_id for run in runs}
    return [latest[key] for key in sorted(latest, key=lambda k: (str(k[0]), str(k[1])))]


def links(client, experiment: str, matrix: Matrix) -> list[str]:
    """What to open: the command serving a local store, the runs page in the study's view and the compare page
    of its finished runs; saves the view first. Empty when this store has no experiment of the study."""
    experiment_id = save_study_view(client, experiment, matrix)
    if experiment_id is None:
        return []
    base = ui.address(client.tracking_uri)
    serve = ui.serve_command(client.tracking_uri)
    lines = [f"MLflow UI ({serve}):" if serve else "MLflow UI:",
             f"  the study's runs, one row per cell, its seeds below: {ui.runs_page(base, experiment_id, VIEW_KEY)}"]
    finished = finished_runs(client, experiment_id)
    if finished:
        lines.append(f"  its {len(finished)} finished runs compared: {ui.compare_page(base, experiment_id, finished)}")
    return lines
