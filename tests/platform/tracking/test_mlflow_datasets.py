"""A run's corpus and word vectors as MLflow datasets: named by their folders, digest DVC's hash, source the path."""

from __future__ import annotations

import json

import mlflow.data

from skipview.platform.tracking import datasets, store
from skipview.platform.tracking.lineage import lineage_tags


def test_a_new_run_logs_the_data_its_lineage_names(tmp_path):
    corpus, vectors = tmp_path / "novels" / "prepared", tmp_path / "novels" / "wordvecs"
    for folder, meta in ((corpus, {"sentences": 3}), (vectors, {"vectors_sha256": "ab" * 32})):
        folder.mkdir(parents=True)
        (folder / "meta.json").write_text(json.dumps(meta))
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages:\n  prepare:\n    outs:\n    - path: novels/prepared\n"
                                       "      md5: 0123456789abcdef0123456789abcdef.dir\n")
    tags = lineage_tags(corpus, vectors)
    client = store.client(f"sqlite:///{tmp_path}/m.db")
    run_id, _ = store.open_run(client, "study", "runs/a", "a", tags=tags)
    store.open_run(client, "study", "runs/a", "a", tags=tags)            # continued: no second input

    inputs = client.get_run(run_id).inputs.dataset_inputs
    found = {i.dataset.name: i for i in inputs}
    assert sorted(found) == ["novels/prepared", "novels/wordvecs"]
    prepared, wordvecs = found["novels/prepared"], found["novels/wordvecs"]
    assert prepared.dataset.digest == "0123456789abcdef0123456789abcdef"       # DVC's md5 (".dir" is DVC's suffix)
    assert wordvecs.dataset.digest == "ab" * 16                                 # no DVC hash: its SHA-256, cut
    assert json.loads(wordvecs.dataset.profile) == {"fingerprint": "vectors-sha256:" + "ab" * 32}
    assert mlflow.data.get_source(prepared).uri == str(corpus.resolve())     # MLflow reads the source back
    assert [(t.key, t.value) for t in prepared.tags] == [("mlflow.data.context", "corpus")]
    assert [(t.key, t.value) for t in wordvecs.tags] == [("mlflow.data.context", "word vectors")]


def test_a_run_without_data_lineage_logs_no_dataset_and_uris_keep_their_scheme(tmp_path):
    client = store.client(f"sqlite:///{tmp_path}/m.db")
    run_id, _ = store.open_run(client, "study", "runs/b", "b", tags={"seed": "0"})
    assert client.get_run(run_id).inputs.dataset_inputs == []
    (remote,) = datasets.dataset_inputs({"corpus.path": "s3://bucket/data/books/prepared",
                                         "corpus.hash": "dvc:" + "f" * 32})
    assert (remote.dataset.name, remote.dataset.source_type, remote.dataset.digest) == ("books/prepared", "s3", "f" * 32)
