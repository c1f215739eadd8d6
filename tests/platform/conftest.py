"""Fixtures for the Tune and study tests (training/ has its own Ray session, which also exports its test objective):
the training tests' synthetic corpus and a local Ray session, plus a synthetic
STS14 over the same toy vocabulary (the real STS14 words are all out of this vocabulary, which would give
constant zero vectors and no correlation)."""

from __future__ import annotations

from pathlib import Path

import pytest
from prepared_data import write_toy_sts14, write_training_data


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
    return write_toy_sts14(tmp_path_factory.mktemp("senteval"))
