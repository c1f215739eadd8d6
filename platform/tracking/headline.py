"""The headline numbers ``dvc metrics show`` prints by default: a few per corpus, per model and for the ablation.

DVC prints every metrics file as one row of one table whose columns are the union of all their keys, so the full
records (a prepare run's statistics, an evaluation's hundreds of per-dataset scores, the ablation's every cell
and view) made a table thousands of columns wide. Those records stay committed as plain stage outputs (full
numbers: ``dvc metrics show metrics/eval/disc-gutenberg_novels.json``, ``dvc metrics diff <file>``); the default
metrics are the small files written here, with short keys shared across rows so the table fits 120 columns.

    python -m skipview.platform.tracking.headline corpus PREPARE.json WORDVECS.json OUT.json
    python -m skipview.platform.tracking.headline model TRAIN.json EVAL.json OUT.json
    python -m skipview.platform.tracking.headline ablation ABLATION_SUMMARY.json OUT.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from skipview.platform.files import write_json_aside


def corpus(prepare: dict[str, Any], wordvecs: dict[str, Any]) -> dict[str, Any]:
    """Size of the prepared corpus and the share of its running tokens that have a word vector."""
    return {"sentences": prepare["sentences"], "tokens": prepare["tokens"], "coverage": wordvecs["token_coverage"]}


def model(train: dict[str, Any], evaluation: dict[str, Any]) -> dict[str, Any]:
    """Steps trained and STS14 (mean Pearson x100, the score training reports at each checkpoint)."""
    return {"steps": train["metrics"]["step"], "sts14": evaluation["metrics"]["sts14.pearson.mean"]}


def ablation(summary: dict[str, Any]) -> dict[str, Any]:
    """How many of its claims (the paper's directions it checks) a study measured, and how many it reproduced."""
    return {"claims": summary["claims_measured"], "reproduced": summary["claims_reproduced"]}


KINDS = {"corpus": corpus, "model": model, "ablation": ablation}


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in KINDS or len(argv) != KINDS[argv[0]].__code__.co_argcount + 2:
        print(__doc__, file=sys.stderr)
        return 2
    *sources, out = (Path(a) for a in argv[1:])
    try:
        record = KINDS[argv[0]](*(json.loads(p.read_text()) for p in sources))
    except (OSError, ValueError, KeyError) as error:
        print(f"error: {' '.join(map(str, sources))}: not the expected record ({type(error).__name__}: {error})",
              file=sys.stderr)
        return 1
    write_json_aside(out, record)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
