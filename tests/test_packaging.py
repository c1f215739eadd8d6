"""Packaging: `platform/` never shadows the standard library, and the wheel carries every module of the tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCE_FOLDERS = {"models": "skipview/models", "platform": "skipview/platform"}


def test_numpy_torch_ray_import_with_the_repo_root_as_cwd_and_on_sys_path():
    code = ("import sys; sys.path.insert(0, %r); import numpy, torch, ray, platform; "
            "assert platform.__file__.endswith('platform.py'), platform.__file__; print(platform.system())")
    done = subprocess.run([sys.executable, "-c", code % str(REPO)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not (REPO / "platform" / "__init__.py").exists()


def test_the_command_line_loads_without_torch_ray_or_mlflow():
    # `skipview --help` and `skipview data prepare` must not pay for the training stack (prepare's peak RSS
    # stays what the corpus needs); each command imports what it uses when it runs (platform/cli.py).
    heavy = ("torch", "ray", "mlflow", "sklearn", "numpy", "pydantic", "yaml", "matplotlib", "pandas", "tqdm", "mteb",
             "sentence_transformers", "datasets")
    code = ("import sys, skipview.platform.cli; "
            f"print(sorted(m for m in {heavy!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_modules_commands_load_first_leave_ray_mlflow_and_sklearn_to_the_functions_that_use_them():
    # `skipview study index` loads the study modules and never uses Ray, MLflow or scikit-learn; `skipview train`
    # loads the driver and checks its inputs before it starts Ray or asks MLflow (platform/cli.py)
    modules = ["skipview.platform.studies.study", "skipview.platform.tuning.cli", "skipview.platform.training.driver",
               "skipview.platform.tuning.search", "skipview.platform.tracking.store"]
    code = (f"import importlib, sys; [importlib.import_module(m) for m in {modules!r}]; "
            "print(sorted(m for m in ('ray', 'mlflow', 'sklearn') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_training_worker_leaves_the_evaluation_suite_and_mlflows_model_flavour_to_rank_0_when_it_uses_them():
    # every Ray Train worker (and the driver and Ray Train's controller) imports the training loop; scikit-learn,
    # SciPy (its statistics, and the sparse eigensolver of the principal components) and MLflow's pyfunc flavour
    # cost each of them about 2 CPU s of start-up, and only rank 0 evaluates, post-processes or logs a model
    code = ("import sys, skipview.platform.training.loop; "
            "print(sorted(m for m in ('mlflow', 'sklearn', 'scipy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_wheel_contains_every_module_of_the_source_tree(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for folder in SOURCE_FOLDERS:
        shutil.copytree(REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "dist"), str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (tmp_path / "dist").glob("skipview-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())

    expected = {f"{SOURCE_FOLDERS[folder]}/{path.relative_to(REPO / folder).as_posix()}"
                for folder in SOURCE_FOLDERS for path in (REPO / folder).rglob("*")
                if path.suffix in (".py", ".yaml", ".json") and "__pycache__" not in path.parts}
    assert expected and expected <= names, f"missing from the wheel: {sorted(expected - names)}"
    assert "skipview/platform/__init__.py" not in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "skipview = skipview.platform.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
