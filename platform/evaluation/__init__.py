"""SentEval-compatible evaluation: ``run_tasks`` (flat metrics), ``evaluate`` (metrics + protocol record) and the
tuning objective ``sts14``. See DESIGN.md section 4."""

from skipview.platform.evaluation.suite import PROTOCOLS, TASKS, evaluate, run_tasks, sts14

__all__ = ["PROTOCOLS", "TASKS", "evaluate", "run_tasks", "sts14"]
