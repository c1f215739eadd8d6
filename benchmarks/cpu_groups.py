"""CPU seconds of a process tree, counted by the kernel: a cpuacct control group (cgroup v1) that a process joins,
and every process it starts afterwards with it. Ray's processes count too (the raylet starts its workers, which
inherit the group), which ``getrusage`` misses (Ray reaps its own) and /proc sampling misses when they are short;
and nothing else on the machine counts, so a figure taken beside a training is the command's own.

Two uses:
- ``group()`` around a command (``benchmarks/test_suite.py``: the whole suite's own CPU);
- this module as a pytest plugin, ``-p cpu_groups`` with ``benchmarks/`` on PYTHONPATH: each test process (an
  xdist worker) gets a group of its own inside its parent's, and each test's CPU seconds (set-up, call and
  tear-down) go as one JSON line into ``$CPU_GROUPS_OUT/<worker>.jsonl``. A process a test left running counts to
  the next test of that worker.

Needs a writable cpuacct hierarchy (root on a machine with cgroup v1, as the project's 2-core machine has);
``available()`` says whether this one has it.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path("/sys/fs/cgroup/cpuacct")


def available() -> bool:
    return (ROOT / "cpuacct.usage").is_file() and os.access(ROOT, os.W_OK)


def own_group() -> Path:
    """The cpuacct group this process is in (``/proc/self/cgroup``: ``N:cpuacct:/path``)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            return ROOT / path.lstrip("/")
    return ROOT


def new_group(name: str) -> Path:
    """A fresh group inside this process's own (so the parent's count keeps including it)."""
    folder = own_group() / f"{name}-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    return folder


def join(folder: Path) -> None:
    (folder / "cgroup.procs").write_text(str(os.getpid()))


def cpu_s(folder: Path) -> float:
    return int((folder / "cpuacct.usage").read_text()) / 1e9


def remove(folder: Path) -> None:
    """Removed with the groups inside it; processes still in one (a straggler) are moved to its parent first."""
    for inner in [child for child in folder.iterdir() if child.is_dir()]:
        remove(inner)
    for pid in (folder / "cgroup.procs").read_text().split():
        try:
            (folder.parent / "cgroup.procs").write_text(pid)
        except OSError:             # ended meanwhile
            pass
    folder.rmdir()


@contextmanager
def group(name: str):
    """A new group for a command started inside the block: pass ``preexec`` to ``subprocess.Popen(preexec_fn=...)``;
    read ``cpu_s(folder)`` before the block ends."""
    folder = new_group(name)
    try:
        yield folder, lambda: join(folder)
    finally:
        remove(folder)


# --- the pytest plugin ---------------------------------------------------------------------------------------------

_plugin: dict = {}


def pytest_configure(config) -> None:
    controller = os.environ.get("PYTEST_XDIST_WORKER") is None and getattr(config.option, "dist", "no") != "no"
    if not available() or controller:       # the xdist controller runs no test; its workers each take a group
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    folder = new_group(f"pytest-{worker}")
    join(folder)
    out = Path(os.environ.get("CPU_GROUPS_OUT", "cpu_groups"))
    out.mkdir(parents=True, exist_ok=True)
    _plugin.update(folder=folder, lines=(out / f"{worker}.jsonl").open("a"))


def pytest_unconfigure(config) -> None:
    if _plugin:
        _plugin["lines"].close()
        (_plugin["folder"].parent / "cgroup.procs").write_text(str(os.getpid()))
        remove(_plugin["folder"])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _plugin:
        yield
        return
    cpu_before, wall_before = cpu_s(_plugin["folder"]), time.monotonic()
    yield
    line = {"test": item.nodeid, "cpu_s": round(cpu_s(_plugin["folder"]) - cpu_before, 2),
            "wall_s": round(time.monotonic() - wall_before, 2)}
    _plugin["lines"].write(json.dumps(line) + "\n")
    _plugin["lines"].flush()


def per_file(folder: Path, top: int = 20) -> list[dict]:
    """The plugin's lines summed per test file, most CPU first."""
    files: dict[str, dict] = {}
    for path in folder.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            test = json.loads(line)
            entry = files.setdefault(test["test"].split("::")[0], {"cpu_s": 0.0, "wall_s": 0.0, "tests": 0})
            entry["cpu_s"] += test["cpu_s"]
            entry["wall_s"] += test["wall_s"]
            entry["tests"] += 1
    ranked = sorted(files.items(), key=lambda kv: -kv[1]["cpu_s"])[:top]
    return [{"file": name, "cpu_s": round(e["cpu_s"], 1), "wall_s": round(e["wall_s"], 1), "tests": e["tests"]}
            for name, e in ranked]
