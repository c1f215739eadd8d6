"""The MLflow UI screenshot against a real store: mlflow server on 127.0.0.1 and Debian's headless Chromium."""

from __future__ import annotations

import shutil
import struct

import pytest

from skipview.platform.studies.screenshot import capture_experiment

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("chromium") is None,
                                 reason="Debian's chromium is not installed (apt-get install -y chromium)")]


def test_runs_page_is_captured_as_a_png(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("shot", artifact_location=str(tmp_path / "artifacts"))
    for cell in ("disc-fg", "disc-f"):
        run = client.create_run(experiment, run_name=f"{cell}-seed0", tags={"cell": cell, "seed": "0"})
        client.log_metric(run.info.run_id, "ensemble/sts14.pearson.mean", 50.0)
        client.set_terminated(run.info.run_id)
    out = capture_experiment(uri, "shot", tmp_path / "shot.png", width=1200, height=700)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1200, 700)           # IHDR: the requested window size
    assert len(data) > 20_000, "a blank page compresses to a few KB: the UI did not render"
    assert not list(tmp_path.glob(".*partial*"))
    with pytest.raises(LookupError, match="no MLflow experiment named 'absent'"):
        capture_experiment(uri, "absent", tmp_path / "none.png")
