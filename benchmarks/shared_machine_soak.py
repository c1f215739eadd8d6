"""N `skipview train` runs sharing one machine and one MLflow store, started together on a fresh folder, some of
their drivers killed with SIGKILL mid-run and then resumed: is every run FINISHED, and every checkpoint accounted for?

    python benchmarks/shared_machine_soak.py --runs 6 --kill 2 --out reports/benchmarks/shared_machine_soak.json

Each run is a real `skipview train` process, as a user starts it: its own local Ray, the default store
(./mlflow.db of the fresh folder) and storage (./runs), the disc objective at toy size on the tests' synthetic
prepared corpus (tests/prepared_data.py). All N start within a second. The first ``--kill`` runs have their driver
killed (``kill -9`` of the driver alone, as a user or an out-of-memory killer does; the driver's watchdog ends its
Ray) once Ray has registered their first checkpoint, then the benchmark opens the store as the next command would
(which marks a run whose driver is gone KILLED) and relaunches them with the same command, all together.

Accounted for, per run: its MLflow run FINISHED, one per name in the one store; each step's loss logged exactly
once (1..steps, the steps replayed after a kill not logged again); its checkpoint folders on disk exactly those
Ray's snapshot registers (no stray upload of a killed run), the last one holding the final model; a killed run
resumed from a checkpoint, not from step 1. Writes one JSON document (also printed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from emit import emit

from skipview.platform.tracking import store
from skipview.platform.tracking.lineage import cpu
from skipview.platform.training import run_folder

REPO = Path(__file__).resolve().parents[1]


def registered(run_dir: Path) -> set[str]:
    """The checkpoint folders Ray's snapshot of the run registers (what a resume restores from)."""
    try:
        names = run_folder.registered_names((run_dir / run_folder.SNAPSHOT).read_text())
    except (OSError, ValueError):
        return set()
    return {name for name in names if Path(name).match(run_folder.CHECKPOINT_GLOB)}


def latest_step(run_dir: Path) -> int | None:
    try:
        latest = json.loads((run_dir / run_folder.SNAPSHOT).read_text()).get("latest_checkpoint_result")
    except (OSError, ValueError):
        return None
    return latest["metrics"]["step"] if latest else None


def launch(command: list[str], folder: Path, name: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RAY_ADDRESS")}
    with open(folder / f"{name}.log", "a") as log:
        return subprocess.Popen([*command, "--name", name], cwd=folder, stdout=log, stderr=subprocess.STDOUT, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--kill", type=int, default=2, help="how many of the runs have their driver killed")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--checkpoint-every", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds for each phase")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    sys.path.insert(0, str(REPO / "tests"))
    from prepared_data import write_training_data

    folder = Path(tempfile.mkdtemp(prefix="soak-"))
    corpus, wordvecs = write_training_data(folder / "data")
    command = [sys.executable, "-m", "skipview.platform.cli", "train", "--objective", "disc", "--corpus", str(corpus),
               "--wordvecs", str(wordvecs), "--cpus-per-worker", "0.5", "--experiment", "soak",
               "--set", "objective_settings.hidden_size=8", "--set", "batch_size=16",
               "--set", f"max_steps={args.steps}", "--set", f"checkpoint_every={args.checkpoint_every}"]
    names = [f"soak{i}" for i in range(args.runs)]
    runs = folder / "runs"
    began = time.monotonic()
    processes = {name: launch(command, folder, name) for name in names}
    spread = time.monotonic() - began

    killed: dict[str, int] = {}
    deadline = time.monotonic() + args.timeout
    for name in names[: args.kill]:
        while latest_step(runs / name) is None and processes[name].poll() is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: no checkpoint in {args.timeout:g} s")
            time.sleep(0.1)
        if processes[name].poll() is None:
            os.kill(processes[name].pid, signal.SIGKILL)
            processes[name].wait()
            killed[name] = latest_step(runs / name)
    first_exit = {name: p.wait(timeout=max(1.0, deadline - time.monotonic())) for name, p in processes.items()}

    # the next command to open the store closes the runs whose driver is gone
    client = store.client(f"sqlite:///{folder}/mlflow.db")
    experiment = client.get_experiment_by_name("soak").experiment_id
    status_after_kill = {r.info.run_name: r.info.status for r in client.search_runs([experiment])
                         if r.info.run_name in killed}
    resumed = {name: launch(command, folder, name) for name in killed}
    resume_exit = {name: p.wait(timeout=args.timeout) for name, p in resumed.items()}
    wall_s = time.monotonic() - began

    outcome = {}
    for name in names:
        found = client.search_runs([experiment], filter_string=f"attributes.run_name = '{name}'")
        steps = sorted(m.step for m in client.get_metric_history(found[0].info.run_id, "loss")) if found else []
        on_disk = sorted(p.name for p in (runs / name).glob(run_folder.CHECKPOINT_GLOB) if p.is_dir())
        log = (folder / f"{name}.log").read_text(errors="replace")
        resumed_at = re.findall(r"rank 0 resumed at step (\d+)", log)
        outcome[name] = {
            "mlflow_runs": len(found), "status": found[0].info.status if found else None,
            "loss_steps_each_once": steps == list(range(1, args.steps + 1)),
            "checkpoints_on_disk": len(on_disk), "checkpoints_registered": len(registered(runs / name)),
            "stray_or_missing_checkpoints": sorted(set(on_disk) ^ registered(runs / name)),
            "final_model": (runs / name / max(on_disk, default="none") / "model" / "config.json").is_file(),
            "killed_after_step": killed.get(name), "status_after_kill": status_after_kill.get(name),
            "resumed_at_step": int(resumed_at[-1]) if resumed_at else None,
            "exit": [first_exit[name], *([resume_exit[name]] if name in resume_exit else [])]}
    accounted = all(o["mlflow_runs"] == 1 and o["status"] == "FINISHED" and o["loss_steps_each_once"]
                    and not o["stray_or_missing_checkpoints"] and o["final_model"] for o in outcome.values())
    resumed_ok = all(outcome[n]["status_after_kill"] == "KILLED" and outcome[n]["resumed_at_step"] is not None
                     and outcome[n]["resumed_at_step"] >= killed[n] for n in killed)
    model, native_bf16 = cpu()
    document = {
        "benchmark": "shared_machine_soak", "command": " ".join(["python", *sys.argv]),
        "cpu": model, "native_bf16": native_bf16,
        "cores": len(os.sched_getaffinity(0)), "load_average_at_end": os.getloadavg(),
        "runs": args.runs, "killed": len(killed), "steps": args.steps, "checkpoint_every": args.checkpoint_every,
        "start_spread_s": round(spread, 3), "wall_s": round(wall_s, 1),
        "every_run_finished_and_every_checkpoint_accounted_for": accounted,
        "killed_runs_closed_then_resumed_from_their_checkpoint": resumed_ok,
        "per_run": outcome}
    emit(document, args.out)
    if not (accounted and resumed_ok):
        sys.exit(1)


if __name__ == "__main__":
    main()
