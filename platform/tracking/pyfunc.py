"""The trained encoder as an MLflow pyfunc model, and loading an encoder from an MLflow model URI.

Why pyfunc and not ``mlflow.pytorch``: MLflow 3's default PyTorch format (``pt2``, torch.export) freezes the
traced sequence length, and a sentence encoder must take sentences of any length. The pyfunc wraps the model
directory (ARCHITECTURE.md section 2) as an artifact and calls ``SentenceEncoder.encode``, so ``mlflow models serve``
answers ``{"dataframe_records": [{"sentence": "..."}]}`` with one embedding per sentence.

The skipview sources travel inside the logged model (``code_paths``): a served model needs no skipview install.
"""

from __future__ import annotations

import tempfile
from importlib.metadata import version
from pathlib import Path

import mlflow
import numpy as np
from mlflow.models import ModelSignature
from mlflow.pyfunc import PythonModel
from mlflow.types import ColSpec, ParamSchema, ParamSpec, Schema, TensorSpec

from skipview.models.encoder import SentenceEncoder
from skipview.platform.cluster.package import stage_package

ENCODER_ARTIFACT = "encoder"
INPUT_COLUMN = "sentence"
MLFLOW_SCHEMES = ("runs:/", "models:/", "mlflow-artifacts:/")
# What a served encoder imports (skipview.models and this wrapper), pinned to this environment's versions. Given,
# MLflow does not infer them, which loads the model again in a subprocess for 10-15 s per logged model.
SERVING_PACKAGES = ("mlflow", "torch", "numpy", "scipy", "safetensors", "pydantic", "tqdm", "pandas")


class EncoderModel(PythonModel):
    """``predict(sentences) -> float32 array (n, dim)``; params ``mode`` and ``view`` as in ``encode``."""

    def load_context(self, context) -> None:
        self.encoder = SentenceEncoder.load(context.artifacts[ENCODER_ARTIFACT])

    def predict(self, context, model_input, params=None) -> np.ndarray:
        params = params or {}
        return np.asarray(self.encoder.encode(_sentences(model_input), mode=params.get("mode", "unsupervised"),
                                              view=params.get("view", "ensemble")), dtype=np.float32)


def _sentences(model_input) -> list[str]:
    if hasattr(model_input, "columns"):          # pandas DataFrame, as the scoring server delivers it
        column = INPUT_COLUMN if INPUT_COLUMN in model_input.columns else model_input.columns[0]
        return [str(s) for s in model_input[column].tolist()]
    if isinstance(model_input, str):
        return [model_input]
    return [str(s) for s in model_input]


def _signature(dim: int):
    return ModelSignature(inputs=Schema([ColSpec("string", INPUT_COLUMN)]),
                          outputs=Schema([TensorSpec(np.dtype(np.float32), (-1, dim))]),
                          params=ParamSchema([ParamSpec("mode", "string", "unsupervised"),
                                              ParamSpec("view", "string", "ensemble")]))


def log_encoder(model_dir: str | Path, *, run_id: str, tracking_uri: str, name: str = "encoder",
                sample_sentences: list[str] | None = None, encoder: SentenceEncoder | None = None) -> str:
    """Log ``model_dir`` as a pyfunc model in ``run_id``; returns the model URI. ``encoder``: the one saved in
    ``model_dir``, when the caller holds it (the training worker does); otherwise it is loaded to read its output
    width, a second vocabulary in memory (~180 B a word: 180 MB at a million words) besides the caller's."""
    sample = sample_sentences or ["a sentence to embed ."]
    dim = np.asarray((encoder or SentenceEncoder.load(model_dir)).encode(sample[:1])).shape[1]
    mlflow.set_tracking_uri(tracking_uri)
    with tempfile.TemporaryDirectory() as scratch, mlflow.start_run(run_id=run_id, nested=mlflow.active_run() is not None):
        info = mlflow.pyfunc.log_model(name=name, python_model=EncoderModel(),
                                       artifacts={ENCODER_ARTIFACT: str(model_dir)},
                                       code_paths=[str(stage_package(Path(scratch)))],
                                       signature=_signature(dim), pip_requirements=serving_requirements())
    return info.model_uri


def serving_requirements() -> list[str]:
    # torch's local build tag (2.13.0+cpu) is no version pip can install from PyPI
    return [f"{name}=={version(name).split('+')[0]}" for name in SERVING_PACKAGES]


def load_encoder(path_or_uri: str | Path):
    """``SentenceEncoder.load`` that also accepts MLflow model URIs (``runs:/<id>/encoder``,
    ``models:/<name>/<version>``, ``mlflow-artifacts:/...``) and logged model directories; models/ must not
    import mlflow, so the resolution lives here."""
    text = str(path_or_uri)
    if text.startswith(MLFLOW_SCHEMES) or (Path(text) / "MLmodel").is_file():
        return mlflow.pyfunc.load_model(text).unwrap_python_model().encoder
    return SentenceEncoder.load(text)
