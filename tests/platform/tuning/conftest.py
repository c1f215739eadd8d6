"""Fixtures for the Tune tests: the training tests' synthetic corpus and local Ray session, plus a synthetic
STS14 over the same toy vocabulary (the real STS14 words are all out of this vocabulary, which would give
constant zero vectors and no correlation)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from prepared_data import write_training_data


@pytest.fixture(scope="module")
def ray_session():
    """A private local Ray on 2 CPUs: ``address="local"`` never joins a cluster someone else left running on a
    shared machine (a bare ``ray.init`` would, and then refuses ``num_cpus``)."""
    import ray

    from skipview.platform.training import driver

    driver.connect("local", cpus=2, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    return write_training_data(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def toy_senteval(tmp_path_factory) -> Path:
    """STS14's six subsets in SentEval's layout; gold = 5 x word overlap (Jaccard), so scores vary."""
    from skipview.platform.evaluation.datasets import STS_SUBSETS

    root = tmp_path_factory.mktemp("senteval")
    folder, subsets = STS_SUBSETS["sts14"]
    rng = np.random.default_rng(0)
    (root / "STS" / folder).mkdir(parents=True)
    for subset in subsets:
        pairs, gold = [], []
        for _ in range(40):
            a = set(rng.integers(0, 60, size=int(rng.integers(3, 8))))
            b = set(rng.choice(sorted(a), size=int(rng.integers(0, len(a) + 1)), replace=False))
            b |= set(rng.integers(0, 60, size=int(rng.integers(1, 5))))
            pairs.append(" ".join(f"w{i}" for i in sorted(a)) + "\t" + " ".join(f"w{i}" for i in sorted(b)))
            gold.append(f"{5 * len(a & b) / len(a | b):.3f}")
        (root / "STS" / folder / f"STS.input.{subset}.txt").write_text("\n".join(pairs) + "\n")
        (root / "STS" / folder / f"STS.gs.{subset}.txt").write_text("\n".join(gold) + "\n")
    return root
