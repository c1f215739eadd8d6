"""Run every `skipview` command with a wrong path, a wrong key, a wrong value and a missing file; record what the
user sees (exit status, line count, the output) as JSON, and render two such records side by side as Markdown.

    python scripts/error_probes.py run OUT.json [TITLE]    # probes the skipview importable by this Python
                                                           # (TITLE: only probes whose title contains it)
    python scripts/error_probes.py render BEFORE.json AFTER.json reports/errors_before_after.md

The probes build their own small inputs (a synthetic prepared corpus from tests/prepared_data.py, a search space
and an ablation matrix with a typo) in a temporary folder; none of them reaches a training step.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHOWN_LINES = 12           # of a long output, the report shows the first lines and the last three
# The report's hand-written part, kept by `render`: faults in the middle of a run (a full disk, a cluster too
# small), which need a small file system, a Ray cluster or a training run that these probes do not start
MANUAL_PART = "\n## Faults in the middle of a run"


def fixtures(root: Path) -> dict[str, str]:
    sys.path.insert(0, str(REPO / "tests"))
    from prepared_data import write_training_data

    corpus, wordvecs = write_training_data(root / "data")
    (root / "not-a-model").mkdir()
    (root / "empty").mkdir()
    (root / "space.yaml").write_text("objective: disc\nsearch:\n  batch_sise: {choice: [8, 16]}\n")
    (root / "matrix.yaml").write_text("cells:\n  - name: gen\n    objectiv: gen\n")
    (root / "settings.yaml").write_text("batch_size: many\n")
    return {"corpus": str(corpus), "wordvecs": str(wordvecs), "root": str(root)}


def probes(f: dict[str, str]) -> list[tuple[str, list[str]]]:
    train = ["train", "--objective", "disc", "--corpus", f["corpus"], "--wordvecs", f["wordvecs"],
             "--storage", f"{f['root']}/runs", "--set", "max_steps=2"]
    ev = ["--senteval-dir", f"{f['root']}/empty"]
    return [
        ("train: wrong key in objective settings", [*train, "--set", "objective_settings.hidden_sise=8"]),
        ("train: wrong key", [*train, "--set", "batch_sise=8"]),
        ("train: wrong value", [*train, "--set", "batch_size=abc"]),
        ("train: wrong objective", [*train[:2], "disk", *train[3:]]),
        ("train: missing corpus directory", ["train", "--objective", "disc", "--corpus", f"{f['root']}/nope"]),
        ("train: a directory that is not a prepared corpus", [*train[:4], f"{f['root']}/empty", *train[5:]]),
        ("train: missing config file", [*train, "--config", f"{f['root']}/missing.yaml"]),
        ("train: wrong value in a config file", [*train, "--config", f"{f['root']}/settings.yaml"]),
        ("evaluate: missing model directory", ["evaluate", "--model", f"{f['root']}/nope", *ev]),
        ("evaluate: a directory that is not a model", ["evaluate", "--model", f"{f['root']}/not-a-model", *ev]),
        ("evaluate: wrong task name", ["evaluate", "--baseline", "avg", "--wordvecs", f["wordvecs"], *ev,
                                       "--tasks", "sts99"]),
        ("evaluate: missing SentEval directory", ["evaluate", "--baseline", "avg", "--wordvecs", f["wordvecs"],
                                                  "--senteval-dir", f"{f['root']}/nope", "--tasks", "sts14"]),
        ("neighbours: missing word-vector directory", ["neighbours", "words", "w1", "--wordvecs", f"{f['root']}/nope"]),
        ("data prepare: missing input", ["data", "prepare", f"{f['root']}/nope", f"{f['root']}/out"]),
        ("data wordvecs: not a prepared corpus", ["data", "wordvecs", f"{f['root']}/empty", f"{f['root']}/wv"]),
        ("data fetch: unknown source", ["data", "fetch", "nosuch://x", f"{f['root']}/fetched"]),
        ("tune: missing search space", ["tune", "--space", f"{f['root']}/missing.yaml", "--corpus", f["corpus"],
                                        *ev]),
        ("tune: wrong key in the search space", ["tune", "--space", f"{f['root']}/space.yaml", "--corpus",
                                                 f["corpus"], *ev]),
        ("ablation: wrong key in the matrix", ["ablation", "--corpus", f["corpus"], "--wordvecs", f["wordvecs"],
                                               *ev, "--matrix", f"{f['root']}/matrix.yaml"]),
        ("ablation: wrong key in objective settings", ["ablation", "--corpus", f["corpus"], "--wordvecs",
                                                       f["wordvecs"], *ev, "--storage", f"{f['root']}/runs",
                                                       "--set", "objective_settings.hidden_sise=8"]),
        ("submit: no cluster at the address", ["submit", "--address", "http://127.0.0.1:9", "--", "train",
                                               "--objective", "disc"]),
    ]


def run(out: Path, only: str | None = None) -> None:
    """Run every probe, or with ``only`` the probes whose title contains it, replacing their records in ``out``."""
    kept = [r for r in json.loads(out.read_text()) if only not in r["probe"]] if only and out.exists() else []
    records = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        f = fixtures(root)
        env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{root}/mlflow.db", "COLUMNS": "120"}
        env.pop("RAY_ADDRESS", None)
        for title, args in probes(f):
            if only and only not in title:
                continue
            done = subprocess.run([sys.executable, "-m", "skipview.platform.cli", *args], cwd=root, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
            text = done.stdout.replace(scratch, "$TMP")
            records.append({"probe": title, "command": "skipview " + " ".join(args).replace(scratch, "$TMP"),
                            "exit": done.returncode, "lines": len(text.splitlines()), "output": text})
            print(f"{done.returncode:4d} {len(text.splitlines()):5d}  {title}", flush=True)
    order = [title for title, _ in probes(f)]
    records = sorted(kept + records, key=lambda r: order.index(r["probe"]) if r["probe"] in order else len(order))
    out.write_text(json.dumps(records, indent=1) + "\n")


def shown(text: str) -> str:
    lines = text.rstrip("\n").splitlines()
    if len(lines) > SHOWN_LINES:
        lines = [*lines[:SHOWN_LINES - 4], f"... ({len(lines) - SHOWN_LINES + 1} lines left out) ...", *lines[-3:]]
    return "\n".join(lines)


def render(before: Path, after: Path, out: Path) -> None:
    old = {r["probe"]: r for r in json.loads(before.read_text())}
    rows, sections = [], []
    for r in json.loads(after.read_text()):
        b = old.get(r["probe"])
        rows.append(f"| {r['probe']} | {b['exit'] if b else '–'} / {b['lines'] if b else '–'} | "
                    f"{r['exit']} / {r['lines']} |")
        sections.append(f"### {r['probe']}\n\n`{r['command']}`\n")
        if b:
            sections.append(f"Before (exit {b['exit']}, {b['lines']} lines):\n\n```\n{shown(b['output'])}\n```\n")
        sections.append(f"After (exit {r['exit']}, {r['lines']} lines):\n\n```\n{shown(r['output'])}\n```\n")
    manual = out.read_text().partition(MANUAL_PART) if out.exists() else ("", "", "")
    out.write_text("# Error messages before and after\n\n"
                   "Made by `python scripts/error_probes.py run` on the code before (b38ca84) and after the change, "
                   "then `render`. `--debug` before the command (`skipview --debug train ...`) still prints the "
                   "traceback. Exit status / lines of output:\n\n"
                   "| probe | before | after |\n|---|---|---|\n" + "\n".join(rows) + "\n\n" + "\n".join(sections)
                   + manual[1] + manual[2])


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"] and len(sys.argv) in (3, 4):
        run(Path(sys.argv[2]), sys.argv[3] if len(sys.argv) == 4 else None)
    elif sys.argv[1:2] == ["render"] and len(sys.argv) == 5:
        render(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
    else:
        sys.exit(__doc__)
