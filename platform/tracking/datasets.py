"""A run's data as MLflow datasets: its prepared corpus and word vectors, logged with ``log_inputs`` so the MLflow
UI's Dataset column names them and its runs can be grouped and filtered by them.

A dataset is made from the lineage a run already records (``lineage.lineage_tags``): its name is the data's folder
as the repository lays it out (``novels_news/prepared``, ``novels_news/wordvecs``), its source the path or URI, its
digest the hash DVC recorded (``dvc:<md5>`` -> the md5). MLflow caps a digest at 36 characters, so data DVC does not
track (``vectors-sha256:...``, ``meta-sha256:...``) gets the first 32 hex digits of its SHA-256 as digest, and its
whole fingerprint as the dataset's profile.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import PurePosixPath
from urllib.parse import urlparse

# the lineage tag prefix of each input and the context MLflow shows beside its name
INPUTS = (("corpus", "corpus"), ("wordvecs", "word vectors"))
DIGEST_LENGTH = 32               # an md5's hex digits; MLflow allows 36


def dataset_name(path: str) -> str:
    """The data's last two folders (``data/novels_news/prepared`` -> ``novels_news/prepared``): the corpus and
    what was made of it, short enough for a table column."""
    parts = PurePosixPath(urlparse(path).path if "://" in path else path).parts
    return "/".join(parts[-2:])


def digest(fingerprint: str) -> str:
    """The hash part of a ``lineage.data_fingerprint`` (``dvc:<md5>`` -> ``<md5>``), cut to an md5's length."""
    return fingerprint.rpartition(":")[2][:DIGEST_LENGTH]


def source(path: str) -> tuple[str, str]:
    """``(source_type, source JSON)`` as MLflow's artifact dataset sources write them (``mlflow.data.get_source``
    reads them back): ``local`` for a path, the scheme for a URI (``s3``)."""
    kind = urlparse(path).scheme if "://" in path else "local"
    return kind, json.dumps({"uri": path})


def dataset_inputs(lineage: Mapping[str, str]) -> list:
    """The ``DatasetInput`` of every input the lineage names with a path and a hash (``corpus.path`` and
    ``corpus.hash``, ``wordvecs.path`` and ``wordvecs.hash``)."""
    from mlflow.entities import Dataset, DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    inputs = []
    for prefix, context in INPUTS:
        path, fingerprint = lineage.get(f"{prefix}.path"), lineage.get(f"{prefix}.hash")
        if not path or not fingerprint:
            continue
        kind, where = source(path)
        dataset = Dataset(name=dataset_name(path), digest=digest(fingerprint), source_type=kind, source=where,
                          profile=json.dumps({"fingerprint": fingerprint}))
        inputs.append(DatasetInput(dataset, tags=[InputTag(MLFLOW_DATASET_CONTEXT, context)]))
    return inputs


def log_data(mlflow_client, run_id: str, lineage: Mapping[str, str]) -> None:
    """Log the run's data as its datasets; MLflow keeps one input per (name, digest), so logging again is a no-op."""
    inputs = dataset_inputs(lineage)
    if inputs:
        mlflow_client.log_inputs(run_id, datasets=inputs)
