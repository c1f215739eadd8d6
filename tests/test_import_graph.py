"""The import graph of skipview's own modules has no cycle, deferred imports included, and loading a model imports
the modules that define its views, not the training objectives."""

from __future__ import annotations

import ast
import functools
import graphlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from skipview.models.encoder import SentenceEncoder
from skipview.models.skipthought.view import SkipThoughtView
from skipview.models.text import Tokenizer
from skipview.models.views import BiGRUView, LinearView
from skipview.models.vocab import Vocab

REPO = Path(__file__).resolve().parents[1]
SOURCE_FOLDERS = {"models": "skipview.models", "platform": "skipview.platform"}


def module_files() -> dict[str, Path]:
    """Module name -> file, for every module of the source folders (packages by their ``__init__.py``)."""
    modules = {}
    for folder, package in SOURCE_FOLDERS.items():
        for path in (REPO / folder).rglob("*.py"):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((package, *parts))] = path
    return modules


def imported_names(module: str, path: Path) -> set[str]:
    """Every module name the file imports: each ``import`` and ``from ... import`` anywhere in it (top level, in
    functions: a deferred import closes a loop as surely as a top-level one, only later), and each string that is a
    module name or ``module:attribute`` in a module that imports ``importlib`` (a table of modules to import by name,
    as ``registry.OBJECTIVES``). Imports
    under ``if TYPE_CHECKING:`` never run and are left out. ``from a import b`` names ``a`` and ``a.b``; the caller
    keeps those that are modules."""
    tree = ast.parse(path.read_text(), filename=str(path))
    type_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If) and
                 ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                 for statement in block.body for node in ast.walk(statement)}
    is_package = path.name == "__init__.py"
    # strings count in a module that imports by name; elsewhere one is a command line (``python -m skipview...``)
    imports_by_name = "importlib" in {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                                      for alias in node.names}
    names = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:       # relative: resolved against this module's package
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("skipview.")
              and imports_by_name):
            names.add(node.value.partition(":")[0])
    return names


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the skipview modules it imports. Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__``
    first, so those packages count as imported too, except a module's own enclosing packages: Python has begun
    importing those before the module runs, so they never close a loop."""
    files = module_files()
    graph = {}
    for module, path in files.items():
        targets = set()
        for name in imported_names(module, path):
            parts = name.split(".")
            targets.update(prefix for prefix in (".".join(parts[:i]) for i in range(1, len(parts) + 1))
                           if prefix in files)
        enclosing = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
        graph[module] = targets - {module} - enclosing
    return graph


def test_the_import_graph_holds_deferred_and_by_name_imports():
    # the graph the next test sorts is real: a top-level import, a deferred one (a function's) and imports by name
    graph = import_graph()
    assert "skipview.models.views" in graph["skipview.models.skipthought.view"]
    assert "skipview.platform.tuning.search" in graph["skipview.platform.tuning.cli"]                  # deferred
    assert "skipview.models.discriminative" in graph["skipview.models.registry"]                    # OBJECTIVES
    assert "skipview.models.skipthought.view" in graph["skipview.models.encoder"]                   # VIEW_MODULES
    assert "skipview.platform.cli" not in graph["skipview.platform.cluster.submit"]       # a command line's string


def test_no_module_imports_in_a_cycle():
    try:
        tuple(graphlib.TopologicalSorter(import_graph()).static_order())
    except graphlib.CycleError as error:
        raise AssertionError(f"import cycle: {' -> '.join(error.args[1])}") from None


def test_models_import_nothing_from_the_platform():
    graph = import_graph()
    leaks = {module: sorted(t for t in targets if t.startswith("skipview.platform"))
             for module, targets in graph.items() if module.startswith("skipview.models")}
    assert not {module: targets for module, targets in leaks.items() if targets}


TRAINING_MODULES = ("skipview.models.registry", "skipview.models.discriminative", "skipview.models.generative",
                    "skipview.models.skipthought.objective")


def load_in_fresh_process(directory: Path) -> dict:
    code = textwrap.dedent(f"""
        import json, sys
        from skipview.models.encoder import SentenceEncoder
        model = SentenceEncoder.load({str(directory)!r})
        vectors = model.encode(["a b", "b c a"], postprocessing="none")
        print(json.dumps({{"modules": sorted(m for m in sys.modules if m.startswith("skipview")),
                          "shape": list(vectors.shape)}}))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_loading_a_model_imports_its_views_modules_and_no_objective(tmp_path):
    vocab = Vocab.from_counts({"a": 3, "b": 2, "c": 1})
    vectors = np.random.default_rng(0).standard_normal((len(vocab), 4)).astype(np.float32)
    multiview = SentenceEncoder({"f": BiGRUView(4, 3), "g": LinearView(4, 6)}, vocab, Tokenizer(), vectors)
    skipthought = SentenceEncoder({"uni": SkipThoughtView("uni", len(vocab), 4, 5)}, vocab, Tokenizer())

    loaded = load_in_fresh_process(multiview.save(tmp_path / "multiview"))
    assert loaded["shape"] == [2, 6]
    assert not set(TRAINING_MODULES) & set(loaded["modules"]), loaded["modules"]
    assert not any(m.startswith("skipview.models.skipthought") for m in loaded["modules"]), loaded["modules"]

    loaded = load_in_fresh_process(skipthought.save(tmp_path / "skipthought"))
    assert loaded["shape"] == [2, 5]
    assert not set(TRAINING_MODULES) & set(loaded["modules"]), loaded["modules"]
    assert "skipview.models.skipthought.view" in loaded["modules"]
