"""The trained profile end to end, as a whole process at a given commit, and the before/after table of such runs
(issue 28: the three-epoch novels-with-news disc (f, g) model, the disc-fg cell of studies/table6_trained.yaml).

    # one run: the code of COMMIT (a worktree and its package installed aside), the data of this checkout
    python benchmarks/profile_e2e.py run --commit HEAD --label before --out-dir /tmp/prof
    python benchmarks/profile_e2e.py run --commit HEAD --label after_2x1 --out-dir /tmp/prof \\
        --workers 2 --cpus-per-worker 1 [--seed 1]
    # the table: every run under --out-dir, its phases (run_phases.py) and scores, against the runs labelled before*
    python benchmarks/profile_e2e.py collect --out-dir /tmp/prof --json reports/benchmarks/profile_e2e.json

Runs are whole processes one after another on an idle machine: each times ``skipview study run`` of the profile
around the process and keeps its MLflow store, log and report in ``OUT_DIR/LABEL/`` (``time.json`` says what ran).
The profile is the study file's, not restated here: the run's study is the commit's own
``studies/table6_trained.yaml`` with its disc-fg cell alone, no reference rows, and the worker layout given. A run's
code is its commit's, installed with ``pip install --target`` and put first on ``PYTHONPATH``, so an old commit is
measured with the same interpreter and dependencies as a new one (commits from the one-home study files on: older
ones had another study schema; their runs are in reports/benchmarks/profile_e2e.json with their commands).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml
from run_phases import phases

REPOSITORY = Path(__file__).resolve().parents[1]
PROFILE_STUDY = "table6_trained"


def run(args: argparse.Namespace) -> None:
    out = (args.out_dir / args.label).resolve()
    if (out / "time.json").exists():
        raise SystemExit(f"{out / 'time.json'}: this label has run already; choose another --label")
    out.mkdir(parents=True, exist_ok=True)
    tree, package = out / "tree", out / "package"
    commit = subprocess.run(["git", "-C", str(REPOSITORY), "rev-parse", "--short", args.commit],
                            capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "add", "--detach", str(tree), commit], check=True)
    try:
        record = timed_run(args, out, tree, package, commit)
    finally:                                # a failed run (a full disk) must not leave the label's worktree behind
        subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "remove", "--force", str(tree)], check=True)
    print(json.dumps(record))
    if record["exit_code"]:
        raise SystemExit(f"the profile exited with {record['exit_code']}: {out / 'log.txt'}")


def timed_run(args: argparse.Namespace, out: Path, tree: Path, package: Path, commit: str) -> dict:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--upgrade", "--no-deps",
                    "--no-build-isolation", "--target", str(package), str(tree)], check=True)
    name = f"prof-{args.label.replace('_', '-')}"
    study = yaml.safe_load((tree / "studies" / f"{PROFILE_STUDY}.yaml").read_text())
    study.update(cells=["disc-fg"], references=False, workers=args.workers, cpus_per_worker=args.cpus_per_worker)
    study.pop("analyses", None)
    (tree / "studies" / f"{name}.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    (tree / "data").symlink_to((REPOSITORY / "data").resolve())
    arguments = ["study", "run", name, "--first-seed", str(args.seed), "--seeds", "1", "--storage", f"{out}/runs"]
    command = [str(Path(sys.executable).with_name("skipview")), *arguments]
    # the record names the run's folder as a reader would give it, not this machine's path
    portable = shlex.join(["skipview", *arguments[:-1], "OUT_DIR/LABEL/runs"]) + \
        f"  # studies/{PROFILE_STUDY}.yaml, cells [disc-fg], workers {args.workers}, cpus_per_worker {args.cpus_per_worker}"
    environment = {**os.environ, "PYTHONPATH": str(package), "MLFLOW_TRACKING_URI": f"sqlite:///{out}/mlflow.db"}
    load_before = os.getloadavg()
    start = time.time()
    with open(out / "log.txt", "w") as log:
        code = subprocess.run(command, cwd=tree, env=environment, stdout=log, stderr=subprocess.STDOUT).returncode
    end = time.time()
    if (tree / "reports" / name).is_dir():          # the worktree goes after the run; its report stays
        shutil.copytree(tree / "reports" / name, out / "report")
    record = {"label": args.label, "commit": commit, "layout": f"--workers {args.workers} --cpus-per-worker "
                                                                 f"{args.cpus_per_worker}", "seed": args.seed,
              "command": portable, "tracking_uri": environment["MLFLOW_TRACKING_URI"],
              "run_name": f"{name}-disc-fg-seed{args.seed}", "start": start, "end": end,
              "wall_s": round(end - start, 1), "exit_code": code, "load_average_before": load_before,
              "load_average_after": os.getloadavg()}
    (out / "time.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def collect(args: argparse.Namespace) -> None:
    previous = json.loads(args.json.read_text()) if args.json.exists() else {}
    runs = {}
    for record_file in sorted(args.out_dir.glob("*/time.json")):
        record = json.loads(record_file.read_text())
        report = record_file.parent / "report" / "ablation_summary.json"
        if record["exit_code"] or not report.exists():
            continue
        log_text = (record_file.parent / "log.txt").read_text(errors="replace")
        breakdown = phases(record["tracking_uri"], record["run_name"], log_text, record["start"], record["end"])
        cell = json.loads(report.read_text())["cells"]["disc-fg"]
        scores = {view: {task: round(v["mean"], 2) for task, v in cell[view].items()}
                  for view in ("f", "g", "ensemble")}
        # what a reader wrote beside a run (e.g. its windows) is kept; what is measured is taken anew
        runs[record["label"]] = {
            **previous.get("runs", {}).get(record["label"], {}),
            **{k: record[k] for k in ("commit", "layout", "seed", "command", "exit_code")},
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record["start"])),
            "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record["end"])),
            **breakdown, "scores": scores}
    # the baseline is the mean of every run labelled before*: this machine's speed drifts (by up to 20 % within
    # an hour), so a before run on each side of the after runs brackets them
    befores = [r for label, r in runs.items() if label.startswith("before")]
    if not befores:
        raise SystemExit(f"{args.out_dir}: no finished run labelled before* to compare with")
    before_wall = statistics.mean(r["wall_s"] for r in befores)
    before_steps = statistics.mean(r["phases_s"]["steps"] for r in befores)
    for run_ in runs.values():
        run_["wall_over_before"] = round(run_["wall_s"] / before_wall, 3)
        run_["steps_speedup_over_before"] = round(before_steps / run_["phases_s"]["steps"], 3)
    # the description of the study (machine, protocol, target, seeds' spread) is kept; the runs are measured anew
    args.json.write_text(json.dumps({**previous, "runs": runs}, indent=2) + "\n")
    print(json.dumps({label: (r["wall_s"], r["wall_over_before"], r["scores"]["ensemble"]["sts_avg"])
                      for label, r in runs.items()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("run", help="one whole profile run at a commit, timed")
    one.add_argument("--commit", required=True, help="the code to run (any git revision of this repository)")
    one.add_argument("--label", required=True,
                     help="the run's name in the table (before, before_2, ...: the baseline, their mean)")
    one.add_argument("--out-dir", type=Path, required=True, help="where the runs' folders go")
    one.add_argument("--workers", type=int, default=1, help="Ray Train workers of the model")
    one.add_argument("--cpus-per-worker", type=int, default=2, help="CPUs (torch threads) per worker")
    one.add_argument("--seed", type=int, default=0, help="the model's seed (the target is seed 0)")
    one.set_defaults(handler=run)
    table = commands.add_parser("collect", help="the before/after table of the runs under --out-dir")
    table.add_argument("--out-dir", type=Path, required=True)
    table.add_argument("--json", type=Path, default=REPOSITORY / "reports/benchmarks/profile_e2e.json",
                       help="the table (its description fields are kept, its runs replaced)")
    table.set_defaults(handler=collect)
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    main()
