"""What every test process owns alone, so test files run side by side (pytest-xdist, ``-n`` in pyproject.toml) without
meeting: its own HOME (Ray's token in ~/.ray, caches) and its own Ray temporary folder (RAY_TMPDIR: Ray's sessions,
sockets and the "current cluster" record a bare ``ray.init()`` would join), made before any test module is imported.
Plus the one local Ray a test process shares across its modules (starting one costs seconds of both cores)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

TRAINING_TESTS = Path(__file__).resolve().parent / "platform" / "training"
PRIVATE_ROOT = pytest.StashKey[Path]()


def pytest_configure(config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    # short, under /tmp: Ray's socket paths below RAY_TMPDIR must fit in 107 bytes
    root = Path(tempfile.mkdtemp(prefix=f"sv-{worker}-", dir="/tmp"))
    config.stash[PRIVATE_ROOT] = root
    (root / "home").mkdir()
    (root / "ray").mkdir()
    os.environ.update(HOME=str(root / "home"), RAY_TMPDIR=str(root / "ray"))


def pytest_unconfigure(config) -> None:
    shutil.rmtree(config.stash[PRIVATE_ROOT], ignore_errors=True)


@pytest.fixture(scope="session")
def ray_session():
    """A private local Ray on 2 CPUs for this test process, started on first use and shared by every module that asks
    for it. ``address="local"`` never joins a cluster someone else left running on the machine (a bare ``ray.init``
    would, and then refuses ``num_cpus``). Its workers can import the training tests' objective (they inherit
    PYTHONPATH)."""
    import ray

    from skipview.platform.training import driver

    paths = [str(TRAINING_TESTS), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    sys.path.insert(0, str(TRAINING_TESTS))
    driver.connect("local", cpus=2, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="session")
def ray_address(ray_session) -> str:
    """The GCS address of this test process's shared local Ray (``ray_session``). A command run as a subprocess
    joins that Ray instead of starting one of its own (a local Ray costs about 13 CPU s and 5-8 s of a loaded
    machine's wall time) with ``ray_join_env`` in its environment, which holds this address: for the tests that do
    not examine how a command's own Ray starts or stops."""
    import ray

    return ray.get_runtime_context().gcs_address


@pytest.fixture(scope="session")
def ray_join_env(ray_address) -> dict[str, str]:
    """What a subprocess's environment needs to join ``ray_session``: ``RAY_ADDRESS`` alone is not enough. That Ray
    listens on 127.0.0.1 only (driver.LOOPBACK_ONLY), and a joining process that lacks the same switch rewrites a
    loopback address to the machine's own address before it connects (Ray's ``canonicalize_bootstrap_address``)
    and then waits without end on a port nothing listens on."""
    from skipview.platform.training import driver

    return {"RAY_ADDRESS": ray_address, **driver.LOOPBACK_ONLY}


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: one test process per core, plus one. On an idle machine two processes kept the two cores only
    69 % busy (the suite's every process counted by benchmarks/cpu_groups.py: 2,404 CPU s in 28.8 min): the rest is
    waiting on Ray's starts, servers and stopped commands, which a third process fills. ``--maxprocesses`` in
    pyproject.toml caps it."""
    return len(os.sched_getaffinity(0)) + 1


def pytest_collection_modifyitems(config, items) -> None:
    """Test files with end-to-end (``slow``) tests first, each file's tests in their written order: run side by side,
    the long files start at once instead of trailing behind the short ones."""
    def has_slow(item) -> bool:
        return item.get_closest_marker("slow") is not None

    slow_files = {item.path for item in items if has_slow(item)}
    items.sort(key=lambda item: item.path not in slow_files)        # a stable sort keeps each file's order
