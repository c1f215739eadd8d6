"""A PNG of the MLflow UI's runs view of one experiment, for reports: ``mlflow server`` on 127.0.0.1 and
headless Chromium (Debian's ``chromium`` package: ``apt-get install -y chromium``).

    python -m skipview.platform.studies.screenshot --experiment ablation --out reports/mlflow_ablation.png

``--view runs`` (default) is ``#/experiments/<id>/runs`` (the bare experiment URL opens the traces page in
MLflow 3); ``--view compare`` is the run-comparison page of every finished run of the experiment (parallel
coordinates, then params, metrics and tags side by side; use a tall ``--height``). Chromium runs with a fresh
profile and every background network feature off, so it talks only to the local server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from mlflow.tracking import MlflowClient

from skipview.platform.files import write_aside
from skipview.platform.tracking import store

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def mlflow_server(tracking_uri: str, timeout_s: float = 120.0, artifacts: Path | None = None):
    """``mlflow server`` on 127.0.0.1 for the duration of the block; yields its base URL. ``artifacts``: where it
    stores the artifacts clients log through it (default: its own ./mlartifacts)."""
    port = free_port()
    log = tempfile.TemporaryFile()
    # one worker process: uvicorn's supervisor kills workers that miss its 5 s start-up health check, which the
    # default four miss on a loaded 2-core machine (they die and are restarted forever)
    process = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", tracking_uri, "--host", "127.0.0.1",
         "--port", str(port), "--workers", "1",
         *(["--artifacts-destination", str(artifacts)] if artifacts is not None else [])],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
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


def screenshot(url: str, out: Path, width: int = 1700, height: int = 1000, wait_ms: int = 20000) -> None:
    """Render ``url`` in headless Chromium (fresh profile) and write a PNG to ``out``."""
    with tempfile.TemporaryDirectory() as profile:
        def render(tmp: Path) -> None:
            # --virtual-time-budget lets the single-page app fetch and draw its runs before the capture
            command = [chromium_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                       f"--window-size={width},{height}", f"--virtual-time-budget={wait_ms}",
                       f"--screenshot={tmp}", url]
            done = subprocess.run(command, capture_output=True, text=True, timeout=180)
            if done.returncode != 0 or not tmp.exists() or tmp.stat().st_size == 0:
                raise RuntimeError(f"chromium failed ({done.returncode}): {done.stderr[-2000:]}")

        write_aside(out, render)


def page_url(base_url: str, experiment_id: str, view: str, run_ids: list[str]) -> str:
    if view == "runs":
        return f"{base_url}/#/experiments/{experiment_id}/runs"
    runs, experiments = (urllib.parse.quote(json.dumps(ids)) for ids in (run_ids, [experiment_id]))
    return f"{base_url}/#/compare-runs?runs={runs}&experiments={experiments}"


def capture_experiment(tracking_uri: str, experiment: str, out: Path, view: str = "runs", **kwargs) -> Path:
    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise LookupError(f"no MLflow experiment named {experiment!r} in {tracking_uri}")
    run_ids = [r.info.run_id for r in client.search_runs([found.experiment_id],
                                                         filter_string="attributes.status = 'FINISHED'",
                                                         order_by=["tags.mlflow.runName ASC"])]
    with mlflow_server(tracking_uri) as base_url:
        screenshot(page_url(base_url, found.experiment_id, view, run_ids), out, **kwargs)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", default="ablation", help="MLflow experiment name")
    parser.add_argument("--tracking-uri", default=None, help="default: MLFLOW_TRACKING_URI or ./mlflow.db")
    parser.add_argument("--out", type=Path, default=Path("reports/mlflow_ablation.png"))
    parser.add_argument("--view", choices=("runs", "compare"), default="runs")
    parser.add_argument("--width", type=int, default=1700)
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args(argv)
    out = capture_experiment(args.tracking_uri or store.tracking_uri(), args.experiment, args.out, args.view,
                             width=args.width, height=args.height)
    print(out)


if __name__ == "__main__":
    main()
