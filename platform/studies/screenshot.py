"""The MLflow UI as a browser shows it: ``mlflow server`` on 127.0.0.1 and headless Chromium (Debian's ``chromium``
package: ``apt-get install -y chromium``), as a PNG for reports or as the rendered page's text for tests.

    python -m skipview.platform.studies.screenshot --study table6_trained --out reports/table6_trained/mlflow_runs.png
    python -m skipview.platform.studies.screenshot --study table6_trained --from-records --out ...

``--view runs`` (default) is the experiment's runs page, in the study's view where the experiment has one
(``mlflow_view``: grouped by cell, a row per seed, the datasets and the report's columns); ``--view compare`` is the
compare page of every finished run (parallel coordinates, then params, metrics and tags side by side; use a tall
``--height``). ``--from-records`` shows the study's committed run records (``reports/<study>/runs/*.json``) where
this machine's store does not hold the study: each record becomes one finished run of a temporary store, with the
record's metrics, params, curves and lineage, the row's tags, its data as datasets (paths: the study's corpus and
word vectors), its start time, a duration of its ``train/hours``, and the tag ``skipview.record`` naming the file.
Chromium runs with a fresh profile and every background network feature off, so it talks only to the local server.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import defaultdict
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from mlflow.tracking import MlflowClient

from skipview.platform.files import write_aside
from skipview.platform.studies import mlflow_view
from skipview.platform.studies.matrix import EVALUATED_TAG, HOURS, Matrix, PlannedRun
from skipview.platform.studies.report import RECORDS, RunRecord, latest, read_records
from skipview.platform.tracking import datasets, store, ui
from skipview.platform.tracking.lineage import portable_path

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars")
# Now and then (three captures in about twenty here, Chromium 156) the page's virtual time never runs out and
# Chromium idles: past this many seconds it is stopped and started again, once, with a fresh profile.
ATTEMPT_S = 300.0
RECORD_TAG = "skipview.record"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def mlflow_server(tracking_uri: str, timeout_s: float = 600.0, artifacts: Path | None = None):
    """``mlflow server`` on 127.0.0.1 for the duration of the block; yields its base URL (its start-up has taken
    over two minutes on a loaded 2-core machine). ``artifacts``: where it stores the artifacts clients log through
    it (default: its own ./mlartifacts)."""
    port = free_port()
    log = tempfile.TemporaryFile()
    # one worker process: uvicorn's supervisor kills workers that miss its 5 s start-up health check, which the
    # default four miss on a loaded 2-core machine (they die and are restarted forever)
    # MLflow 3's job runner (a runner process and its huey consumers, seven of them seen per server, each importing
    # MLflow) serves jobs nothing here submits: off, none of them start beside the server
    process = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", tracking_uri, "--host", "127.0.0.1",
         "--port", str(port), "--workers", "1",
         *(["--artifacts-destination", str(artifacts)] if artifacts is not None else [])],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"mlflow server exited with {process.returncode}:\n"
                                   f"{log.read().decode(errors='replace')[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"mlflow server on {url} did not answer /health within {timeout_s:.0f} s")
            time.sleep(1)
        yield url
    finally:
        # the server forks uvicorn workers: end the whole session group it leads (only processes started here)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError("no chromium on PATH: apt-get install -y chromium")


def chromium(url: str, output: list[str], width: int, height: int, wait_ms: int, attempts: int = 2) -> str:
    """Run headless Chromium on ``url`` with a fresh profile and the ``output`` flags; return its stdout.
    ``--virtual-time-budget`` lets the single-page app fetch and draw its runs first (virtual time waits for
    pending network fetches, so on a loaded machine a page of many runs takes minutes of real time)."""
    for attempt in range(1, attempts + 1):
        with tempfile.TemporaryDirectory() as profile:
            command = [chromium_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                       f"--window-size={width},{height}", f"--virtual-time-budget={wait_ms}", *output, url]
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                       start_new_session=True)
            try:
                stdout, stderr = process.communicate(timeout=ATTEMPT_S)
            except subprocess.TimeoutExpired:
                # its renderer and GPU processes would outlive it, writing into the profile being removed
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                if attempt == attempts:
                    raise TimeoutError(f"chromium did not render {url} within {ATTEMPT_S:.0f} s, "
                                       f"{attempts} times") from None
                continue
        if process.returncode != 0:
            raise RuntimeError(f"chromium failed ({process.returncode}): {stderr[-2000:]}")
        return stdout
    raise ValueError(f"attempts must be at least 1, got {attempts}")


def screenshot(url: str, out: Path, width: int = 1700, height: int = 1000, wait_ms: int = 20000) -> None:
    """Render ``url`` and write a PNG of the window to ``out``."""
    def render(tmp: Path) -> None:
        chromium(url, [f"--screenshot={tmp}"], width, height, wait_ms)
        if not tmp.exists() or tmp.stat().st_size == 0:
            raise RuntimeError(f"chromium wrote no screenshot of {url}")

    write_aside(out, render)


@dataclass(frozen=True)
class Page:
    """What a page shows once its scripts have drawn it: its text, and the text of each row of its runs table by
    the table's row id (``tag.cell.disc-f`` for a group, ``tag.cell.disc-f.<run id>`` for a run in it)."""
    text: str
    rows: dict[str, list[str]]


class _PageText(HTMLParser):
    """The visible text of a DOM, and per table row (``role="row"`` with a ``row-id``: a row's cells are split
    over the table's pinned and scrolling parts, each a ``div`` of the same id) the text of its cells."""

    def __init__(self):
        super().__init__()
        self.text: list[str] = []
        self.rows: dict[str, list[str]] = defaultdict(list)
        self.skip = 0                           # inside <script> or <style>
        self.row: str | None = None
        self.depth = 0                          # <div> nesting inside the current row

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1
        elif tag == "div":
            found = dict(attrs)
            if self.row is None and found.get("role") == "row" and found.get("row-id"):
                self.row, self.depth = found["row-id"], 0
            elif self.row is not None:
                self.depth += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self.skip -= 1
        elif tag == "div" and self.row is not None:
            if self.depth == 0:
                self.row = None
            else:
                self.depth -= 1

    def handle_data(self, data):
        data = data.strip()
        if data and not self.skip:
            self.text.append(data)
            if self.row is not None:
                self.rows[self.row].append(data)


def rendered(url: str, width: int = 1700, height: int = 1000, wait_ms: int = 20000) -> Page:
    """The page at ``url`` as Chromium renders it (``--dump-dom``: the DOM after the app has drawn it)."""
    parser = _PageText()
    parser.feed(chromium(url, ["--dump-dom"], width, height, wait_ms))
    return Page(" ".join(parser.text), dict(parser.rows))


def page_url(base_url: str, client, experiment_id: str, view: str) -> str:
    """The runs page (in the study's view where the experiment has one) or the compare page of its finished runs."""
    if view == "runs":
        tags = client.get_experiment(experiment_id).tags
        saved = ui.VIEW_TAG_PREFIX + mlflow_view.VIEW_KEY in tags
        return ui.runs_page(base_url, experiment_id, mlflow_view.VIEW_KEY if saved else None)
    finished = client.search_runs([experiment_id], filter_string="attributes.status = 'FINISHED'",
                                  order_by=["tags.mlflow.runName ASC"])
    return ui.compare_page(base_url, experiment_id, [run.info.run_id for run in finished])


def capture_experiment(tracking_uri: str, experiment: str, out: Path, view: str = "runs", **kwargs) -> Path:
    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise LookupError(f"no MLflow experiment named {experiment!r} in {tracking_uri}")
    with mlflow_server(tracking_uri) as base_url:
        screenshot(page_url(base_url, client, found.experiment_id, view), out, **kwargs)
    return out


def store_from_records(tracking_uri: str, experiment: str, matrix: Matrix, report_dir: Path,
                       data: dict[str, str]) -> list[str]:
    """One finished run per committed record of the study (the latest of each cell and seed) in ``experiment`` of
    the store ``tracking_uri``, which must not hold it yet, and the study's view; return the run ids. ``data``:
    the lineage paths of the study's data (``corpus.path``, ``wordvecs.path``) for its datasets."""
    client = store.client(tracking_uri)
    if client.get_experiment_by_name(experiment) is not None:
        raise ValueError(f"{tracking_uri} already holds an experiment {experiment!r}: give an empty store")
    experiment_id = store.experiment_id(client, experiment)
    rows = {cell.name: cell for cell in matrix.rows(references=True)}
    run_ids = []
    for record in latest(read_records(report_dir)):
        if record.cell not in rows:
            continue                            # a row the study no longer has
        planned = PlannedRun(rows[record.cell], record.seed)
        run = client.create_run(experiment_id, start_time=record.start_time, run_name=planned.run_name, tags={
            **planned.tags, **record.lineage, EVALUATED_TAG: "true",
            RECORD_TAG: portable_path(report_dir / RECORDS / record.file_name)})
        run_id = run.info.run_id
        store.log_params(client, run_id, record.params)
        # the curves step by step; a curve's key in the record's metrics is its last value, already among them
        final = {key: value for key, value in record.metrics.items() if key not in record.curves}
        store.log_metric_steps(client, run_id, [*_curve_steps(record), (0, final)])
        datasets.log_data(client, run_id, {**data, **record.lineage})
        client.set_terminated(run_id, "FINISHED",
                              end_time=record.start_time + round(record.metrics.get(HOURS, 0.0) * 3.6e6))
        run_ids.append(run_id)
    mlflow_view.save_study_view(client, experiment, matrix)
    return run_ids


def _curve_steps(record: RunRecord) -> list[tuple[int, dict[str, float]]]:
    return [(step, {key: value}) for key, points in record.curves.items() for step, value in points]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--study", help="a study's name: its experiment, in its view")
    which.add_argument("--experiment", help="an MLflow experiment's name")
    parser.add_argument("--from-records", action="store_true",
                        help="show the study's committed run records (a temporary store), not this machine's runs")
    parser.add_argument("--tracking-uri", default=None, help="default: MLFLOW_TRACKING_URI or ./mlflow.db")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--view", choices=("runs", "compare"), default="runs")
    parser.add_argument("--width", type=int, default=1700)
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args(argv)
    size = {"width": args.width, "height": args.height}
    if args.from_records:
        if not args.study:
            parser.error("--from-records needs --study")
        from skipview.platform.studies.study import load_study, resolve

        study = load_study(resolve(args.study))
        with tempfile.TemporaryDirectory() as folder:
            uri = f"sqlite:///{Path(folder) / 'mlflow.db'}"
            data = {"corpus.path": study.base.corpus, "wordvecs.path": study.base.wordvecs}
            store_from_records(uri, study.name, study.matrix, study.report_dir,
                               {key: portable_path(path) for key, path in data.items() if path})
            out = capture_experiment(uri, study.name, args.out, args.view, **size)
    else:
        out = capture_experiment(args.tracking_uri or store.tracking_uri(), args.study or args.experiment, args.out,
                                 args.view, **size)
    print(out)


if __name__ == "__main__":
    main()
