"""The skipview sources as a plain directory ``skipview/{models,platform}``, the shape both a Ray ``py_modules``
entry and MLflow's ``code_paths`` need to make ``import skipview.models`` work without an install."""

from __future__ import annotations

import shutil
from pathlib import Path

import skipview.models
import skipview.platform


def stage_package(into: Path) -> Path:
    """Copy the Python sources of ``skipview.models`` and ``skipview.platform`` to ``into/skipview``."""
    root = into / "skipview"
    for package in (skipview.models, skipview.platform):
        source = Path(next(iter(package.__path__))).resolve()
        shutil.copytree(source, root / package.__name__.rsplit(".", 1)[-1],
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    return root
