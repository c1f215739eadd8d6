"""SentEval-compatible evaluation: ``run_tasks`` (flat metrics), ``evaluate`` (metrics + protocol record) and the
tuning objective ``sts14``. See ARCHITECTURE.md section 4."""

import importlib

__all__ = ["PROTOCOLS", "TASKS", "evaluate", "run_tasks", "sts14"]


def __getattr__(name: str):
    # The suite imports torch and scikit-learn (~400 MB, ~3 s). Resolving these names on first use keeps that cost
    # out of every `skipview` command that only registers the evaluation sub-commands (e.g. `skipview data prepare`).
    if name in __all__:
        return getattr(importlib.import_module("skipview.platform.evaluation.suite"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
