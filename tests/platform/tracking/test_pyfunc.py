"""The encoder as an MLflow pyfunc model: logged, loaded back through its URI, and served over HTTP by
``mlflow models serve`` on 127.0.0.1 (a process without skipview on its path: the code ships in the model)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import mlflow
import numpy as np
import pytest
import torch

from skipview.models.encoder import SentenceEncoder
from skipview.models.text import Tokenizer
from skipview.models.views import LinearView
from skipview.models.vocab import SPECIALS, Vocab
from skipview.platform.tracking import store
from skipview.platform.tracking.pyfunc import load_encoder, log_encoder

SENTENCES = ["the cat sat on the mat .", "a dog barked ."]


def tiny_encoder() -> SentenceEncoder:
    torch.manual_seed(0)
    words = ["the", "cat", "sat", "on", "mat", ".", "a", "dog", "barked"]
    vocab = Vocab(list(SPECIALS) + words, [0] * 4 + [1] * len(words))
    vectors = np.random.default_rng(0).normal(size=(len(vocab), 6)).astype(np.float32)
    encoder = SentenceEncoder({"g": LinearView(6, 4)}, vocab, Tokenizer(), vectors, max_len=30)
    encoder.fit_postprocessing(["the cat barked .", "a mat sat on the dog .", "the dog sat ."])
    return encoder


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pyfunc")
    encoder = tiny_encoder()
    model_dir = encoder.save(tmp / "model")
    uri = f"sqlite:///{tmp}/mlflow.db"
    client = store.client(uri)
    run_id, _ = store.open_run(client, "serving", "k", "serving-test")
    model_uri = log_encoder(model_dir, run_id=run_id, tracking_uri=uri)
    return uri, f"runs:/{run_id}/encoder", model_uri, encoder.encode(SENTENCES)


def test_the_encoder_in_hand_is_logged_without_loading_a_second_copy(tmp_path, monkeypatch):
    """The training worker passes the encoder it saved: log_encoder must not load the model directory again (a
    second vocabulary and table map on rank 0), and the logged signature is the same."""
    encoder = tiny_encoder()
    model_dir = encoder.save(tmp_path / "model")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    run_id, _ = store.open_run(store.client(uri), "serving", "k", "in-hand")

    def refuse(*args, **kwargs):
        raise AssertionError("SentenceEncoder.load called although the encoder was given")

    monkeypatch.setattr(SentenceEncoder, "load", refuse)
    log_encoder(model_dir, run_id=run_id, tracking_uri=uri, encoder=encoder)
    monkeypatch.undo()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    logged = mlflow.models.get_model_info(f"runs:/{run_id}/encoder")
    assert tuple(logged.signature.outputs.to_dict()[0]["tensor-spec"]["shape"]) == (-1, 4)
    np.testing.assert_allclose(load_encoder(f"runs:/{run_id}/encoder").encode(SENTENCES), encoder.encode(SENTENCES),
                               rtol=1e-6)


def test_encoder_loads_from_an_mlflow_uri(logged, monkeypatch):
    uri, runs_uri, model_uri, expected = logged
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    for location in (runs_uri, model_uri):
        np.testing.assert_allclose(load_encoder(location).encode(SENTENCES), expected, rtol=1e-6)


@pytest.mark.slow
def test_mlflow_models_serve_answers_with_embeddings(logged, tmp_path):
    uri, runs_uri, _, expected = logged
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(MLFLOW_TRACKING_URI=uri, PATH=str(Path(sys.executable).parent) + os.pathsep + env["PATH"])
    server = subprocess.Popen([sys.executable, "-m", "mlflow", "models", "serve", "-m", runs_uri, "-h", "127.0.0.1",
                               "-p", str(port), "--env-manager", "local", "-w", "1"], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    # read as it prints, so a server that never answers can be shown in the failure and never blocks on a full pipe
    printed: list[str] = []
    reader = threading.Thread(target=lambda: printed.extend(server.stdout), daemon=True)
    reader.start()
    try:
        body = json.dumps({"dataframe_records": [{"sentence": s} for s in SENTENCES]}).encode()
        deadline, answer = time.time() + 120, None
        while time.time() < deadline and answer is None:
            if server.poll() is not None:
                reader.join(timeout=10)         # the last lines it printed
                pytest.fail("mlflow models serve exited:\n" + "".join(printed))
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}/invocations", data=body,
                                                 headers={"Content-Type": "application/json"})
                answer = json.loads(urllib.request.urlopen(request, timeout=10).read())
            except OSError:         # not listening yet: the next try in 0.1 s (an HTTP request costs little)
                time.sleep(0.1)
        assert answer is not None, "mlflow models serve did not answer /invocations in 120 s:\n" + "".join(printed)
        np.testing.assert_allclose(np.asarray(answer["predictions"], dtype=np.float32), expected, rtol=1e-5)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def test_the_logged_model_pins_what_serving_it_imports(logged, monkeypatch):
    """Given, not inferred (inference loads the model again in a subprocess for every logged model): each package
    the served encoder imports, at this environment's version, installable from an index (no local build tag)."""
    import mlflow

    from skipview.platform.tracking.pyfunc import SERVING_PACKAGES

    uri, runs_uri, _, _ = logged
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    requirements = Path(mlflow.artifacts.download_artifacts(f"{runs_uri}/requirements.txt")).read_text().split()
    pinned = {line.split("==")[0]: line.split("==")[1] for line in requirements if "==" in line}
    assert set(SERVING_PACKAGES) <= set(pinned) and "+" not in pinned["torch"]
    assert pinned["numpy"] == np.__version__ and torch.__version__.startswith(pinned["torch"])
