"""Run every `skipview` command with a wrong path, a wrong key, a wrong value and a missing file, and a few runs
that fail or are killed mid-way; record what the user sees (exit status, line count, the output) as JSON, and render
two such records side by side as Markdown.

    python scripts/error_probes.py run OUT.json [TITLE]    # probes the skipview importable by this Python
                                                           # (TITLE: only probes whose title contains it)
    python scripts/error_probes.py render BEFORE.json AFTER.json reports/errors_before_after.md

To probe another checkout with this one's script, put a folder on PYTHONPATH whose ``skipview/models`` and
``skipview/platform`` link to that checkout's ``models/`` and ``platform/`` (it comes before the editable install).

The probes build their own small inputs (a synthetic prepared corpus and word vectors from tests/prepared_data.py,
generated books, a search space and an ablation matrix with a typo) in a temporary folder. A few train a toy model
for a few seconds (a divergence, a run's progress); one kills `skipview data prepare` mid-run with `kill -9` and
lists what is left of it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
SHOWN_LINES = 12           # of a long output, the report shows the first lines and the last three
# The report's hand-written part, kept by `render`: faults in the middle of a run (a full disk, a cluster too
# small), which need a small file system, a Ray cluster or a training run that these probes do not start
MANUAL_PART = "\n## Faults in the middle of a run"


@dataclass
class Probe:
    title: str
    args: list[str]                                         # skipview's command line
    env: dict[str, str] = field(default_factory=dict)       # beside the probes' environment
    kill_with_children: int | None = None                   # kill -9 the command 1 s after it has this many
                                                            # child processes, and list what is left of it
    count: str | None = None                                # the report counts the lines with it (e.g. "…")


KILLED_GRACE_S = 5.0


def fixtures(root: Path) -> dict[str, str]:
    sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "platform" / "data")]
    from data_samples import write_generated_books
    from prepared_data import write_training_data

    corpus, wordvecs = write_training_data(root / "data")
    write_generated_books(root / "books", books=8, sentences_per_book=60_000)     # prepare is busy for seconds
    cut = root / "cut-wordvecs"
    cut.mkdir()
    for name in ("vocab.tsv", "meta.json"):
        (cut / name).write_bytes((wordvecs / name).read_bytes())
    (cut / "vectors.npy").write_bytes((wordvecs / "vectors.npy").read_bytes()[:90])     # inside NumPy's header
    (root / "not-a-model").mkdir()
    (root / "empty").mkdir()
    (root / "space.yaml").write_text("objective: disc\nsearch:\n  batch_sise: {choice: [8, 16]}\n")
    (root / "matrix.yaml").write_text("cells:\n  - name: gen\n    objectiv: gen\n")
    (root / "settings.yaml").write_text("batch_size: many\n")
    return {"corpus": str(corpus), "wordvecs": str(wordvecs), "root": str(root)}


def probes(f: dict[str, str]) -> list[Probe]:
    train = ["train", "--objective", "disc", "--corpus", f["corpus"], "--wordvecs", f["wordvecs"],
             "--storage", f"{f['root']}/runs", "--set", "max_steps=2"]
    toy = ["train", "--objective", "disc", "--corpus", f["corpus"], "--wordvecs", f["wordvecs"],
           "--storage", f"{f['root']}/runs", "--set", "objective_settings.hidden_size=16", "--set", "batch_size=32"]
    ev = ["--senteval-dir", f"{f['root']}/empty"]
    return [Probe(title, args) for title, args in [
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
        ("train: a cut vectors.npy", [*train[:6], f"{f['root']}/cut-wordvecs", *train[7:]]),
        ("evaluate: a cut vectors.npy", ["evaluate", "--baseline", "avg", "--wordvecs", f"{f['root']}/cut-wordvecs",
                                         *ev, "--tasks", "sts14"]),
        ("neighbours: a query in capitals, the corpus lower-cased", ["neighbours", "words", "W1", "W2",
                                                                    "--wordvecs", f["wordvecs"], "--k", "2"]),
        ("train: the run diverges before its first checkpoint", [*toy, "--name", "div1", "--set", "max_steps=20",
                                                                 "--set", "optimizer.lr=1e30"]),
        ("train: a run's progress", [*toy, "--name", "progress", "--set", "max_steps=200",
                                     "--set", "checkpoint_every=100"]),
    ]] + [
        Probe("train --help in 80 columns", ["train", "--help"], env={"COLUMNS": "80"}, count="…"),
        Probe("data prepare: kill -9 mid-run", ["data", "prepare", f"{f['root']}/books", f"{f['root']}/prepared",
                                                "--workers", "2", "--no-progress"], kill_with_children=2),
    ]


def run_probe(probe: Probe, root: Path, env: dict[str, str]) -> tuple[int, str, str | None]:
    """The probe's exit status, output (stdout and stderr together, as a terminal shows them) and what the report
    counts. A killed command's output ends with what is left of it ``KILLED_GRACE_S`` later."""
    command = [sys.executable, "-m", "skipview.platform.cli", *probe.args]
    if probe.kill_with_children is None:
        done = subprocess.run(command, cwd=root, env={**env, **probe.env}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=600)
        counted = probe.count and f"{sum(probe.count in line for line in done.stdout.splitlines())} with {probe.count}"
        return done.returncode, done.stdout, counted
    # a file, not a pipe: orphaned children would hold a pipe open, and reading it would wait for them
    with tempfile.TemporaryFile("w+") as captured:
        started = subprocess.Popen(command, cwd=root, env={**env, **probe.env}, stdout=captured,
                                   stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 120
        while (len(psutil.Process(started.pid).children(recursive=True)) < probe.kill_with_children
               and started.poll() is None and time.time() < deadline):
            time.sleep(0.1)
        time.sleep(1.0)                                     # mid-run: batches in flight
        children = psutil.Process(started.pid).children(recursive=True)
        started.send_signal(signal.SIGKILL)
        started.wait()
        time.sleep(KILLED_GRACE_S)
        captured.seek(0)
        output = captured.read()
    left = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    parents = sorted({c.ppid() for c in left})
    output += (f"[kill -9 of the command 1 s after its workers started; {KILLED_GRACE_S:g} s later {len(left)} of its "
               f"{len(children)} child processes alive{f' (parent PID {parents})' if left else ''}; left beside its "
               f"output: {sorted(p.name for p in root.iterdir() if p.name.startswith('.prepared'))}]\n")
    for child in left:
        child.kill()
    return started.returncode, output, f"{len(left)} of {len(children)} child processes left"


def run(out: Path, only: str | None = None) -> None:
    """Run every probe, or with ``only`` the probes whose title contains it, replacing their records in ``out``."""
    kept = [r for r in json.loads(out.read_text()) if only not in r["probe"]] if only and out.exists() else []
    records = []
    checkout = probed_checkout()
    commit = commit_of(checkout)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        f = fixtures(root)
        env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{root}/mlflow.db", "COLUMNS": "120"}
        env.pop("RAY_ADDRESS", None)
        for probe in probes(f):
            if only and only not in probe.title:
                continue
            status, output, counted = run_probe(probe, root, env)
            text = output.replace(scratch, "$TMP").replace(str(checkout), "<checkout>")
            settings = "".join(f"{k}={v} " for k, v in probe.env.items())
            record = {"probe": probe.title, "commit": commit, "exit": status,
                      "command": settings + "skipview " + " ".join(probe.args).replace(scratch, "$TMP"),
                      "lines": len(text.splitlines()), "output": text}
            if counted:
                record["counted"] = counted
            records.append(record)
            print(f"{status:4d} {len(text.splitlines()):5d}  {probe.title}", flush=True)
    order = [probe.title for probe in probes(f)]
    records = sorted(kept + records, key=lambda r: order.index(r["probe"]) if r["probe"] in order else len(order))
    out.write_text(json.dumps(records, indent=1) + "\n")


def probed_checkout() -> Path:
    """The checkout whose skipview this Python imports (its ``platform/`` folder's parent)."""
    done = subprocess.run([sys.executable, "-c", "import skipview.platform.cli as c; print(c.__file__)"],
                          capture_output=True, text=True, check=True)
    return Path(done.stdout.strip()).resolve().parents[1]


def commit_of(checkout: Path) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True)
    dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return done.stdout.strip() + (" with uncommitted changes" if dirty else "")


def shown(text: str) -> str:
    lines = text.rstrip("\n").splitlines()
    if len(lines) > SHOWN_LINES:
        lines = [*lines[:SHOWN_LINES - 4], f"... ({len(lines) - SHOWN_LINES + 1} lines left out) ...", *lines[-3:]]
    return "\n".join(lines)


def render(before: Path, after: Path, out: Path) -> None:
    old = {r["probe"]: r for r in json.loads(before.read_text())}
    new = json.loads(after.read_text())
    rows, sections = [], []
    for r in new:
        b = old.get(r["probe"])
        rows.append(f"| {r['probe']} | {summary(b) if b else '–'} | {summary(r)} |")
        sections.append(f"### {r['probe']}\n\n`{r['command']}`\n")
        if b:
            sections.append(f"Before ({summary(b)}):\n\n```\n{shown(b['output'])}\n```\n")
        sections.append(f"After ({summary(r)}):\n\n```\n{shown(r['output'])}\n```\n")
    manual = out.read_text().partition(MANUAL_PART) if out.exists() else ("", "", "")
    commits = [sorted({r.get("commit", "an earlier commit") for r in records}) for records in (old.values(), new)]
    out.write_text("# Error messages before and after\n\n"
                   f"Made by `python scripts/error_probes.py run` on the code before ({', '.join(commits[0])}) and "
                   f"after the change ({', '.join(commits[1])}), then `render`; `<checkout>` is the probed checkout. "
                   "`--debug` before the command (`skipview --debug train ...`) still prints the traceback (and Ray's "
                   "and the workers' logs). Each cell: exit status and lines of output:\n\n"
                   "| probe | before | after |\n|---|---|---|\n" + "\n".join(rows) + "\n\n" + "\n".join(sections)
                   + manual[1] + manual[2])


def summary(record: dict) -> str:
    """``exit 1, 81 lines`` (and what the probe counts)."""
    lines = f"{record['lines']} line{'s' if record['lines'] != 1 else ''}"
    return ", ".join([f"exit {record['exit']}", lines, *filter(None, [record.get("counted")])])


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"] and len(sys.argv) in (3, 4):
        run(Path(sys.argv[2]), sys.argv[3] if len(sys.argv) == 4 else None)
    elif sys.argv[1:2] == ["render"] and len(sys.argv) == 5:
        render(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
    else:
        sys.exit(__doc__)
