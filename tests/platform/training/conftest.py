"""Fixtures for the trainer tests: a synthetic prepared corpus with word vectors, and one local Ray session per
module (``ray.init`` costs seconds on 2 cores)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from prepared_data import write_training_data

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory) -> tuple[Path, Path]:
    return write_training_data(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def ray_session():
    """A local Ray on 2 CPUs whose workers can import the test objective (they inherit PYTHONPATH)."""
    import ray

    from skipview.platform.training import driver

    paths = [str(HERE), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    sys.path.insert(0, str(HERE))
    driver.connect("local", cpus=2, log_to_driver=False)
    yield
    ray.shutdown()
