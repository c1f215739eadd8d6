"""CPU seconds that a local Ray's own processes take per minute while `skipview train` trains, with Ray's defaults
for a local head against the reduced head `driver.connect` starts (issue 28).

    nice -n 19 python benchmarks/ray_overhead.py --pairs 2 --window 90 --out reports/benchmarks/ray_overhead.json

Each run is a real `skipview train` (its own process, as the CLI runs it) of the tests' tiny contrastive objective
(tests/platform/training/tiny_objective.py) on the tests' synthetic prepared corpus (tests/prepared_data.py), one
worker of one CPU on a local Ray. The worker trains as fast as it can, so the run is a busy one, as a real one is;
Ray's machinery is timer-driven and does not scale with the model. ``ray_defaults`` runs the same driver with
``driver.LOCAL_HEAD_ENV`` and ``driver.LOCAL_HEAD_CONFIG`` emptied, i.e. ``connect`` as it was before the reduction.

The processes counted are those the driver started: its descendants (Ray's agents keep a cleaned environment, so
they are found by ancestry) and every process carrying this run's marker variable (a worker Ray reparented), plus
the driver itself. The training worker (``ray::RayTrainWorker``) is what the run is for: it is reported apart and
left out of the totals. Each process's user + system CPU seconds are read every ``--poll`` seconds over a window
that opens once the worker trains; a process's share is its last reading minus its reading at the window's start
(zero for one started inside it), so one that ends inside the window keeps what it had used until its last
reading. CPU seconds, unlike wall time, hardly move with the rest of the machine's load; the load average is
written beside them. Configurations alternate (A B A B) so that a drift in the machine's load falls on both.
Writes one JSON document (also printed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

from emit import emit

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
TINY_OBJECTIVE_DIR = TESTS / "platform" / "training"
CONFIGURATIONS = ("ray_defaults", "reduced")
TRAIN_WORKER = "ray::RayTrainWorker"
# The driver, run as `python -m skipview.platform.cli` runs it; for ray_defaults the reduction is emptied first.
LAUNCH = """
import sys
from skipview.platform.training import driver
if sys.argv[1] == "ray_defaults":
    driver.LOCAL_HEAD_ENV, driver.LOCAL_HEAD_CONFIG = {}, {}
from skipview.platform import cli
sys.argv = ["skipview", *sys.argv[2:]]
cli.main()
"""


def label(process: psutil.Process) -> str:
    """What the process is: Ray's title for its workers and actors (``ray::Name``), the script or module for
    Python processes (``dashboard.py``, ``skipview.platform.training.watchdog``), the executable otherwise."""
    command = process.cmdline()
    if not command:
        return process.name()
    if command[0].startswith(("ray::", "ray-dashboard-")):         # titles Ray set: ray::Actor.method, module-0 (...)
        return command[0].split()[0].split(".")[0]
    if Path(command[0]).name.startswith("python"):
        for i, part in enumerate(command[1:], 1):
            if part in ("-m", "-c") and i + 1 < len(command):
                code = re.search(r"from (\S+) import", command[i + 1])     # multiprocessing's helpers run -c
                return command[i + 1] if part == "-m" else code.group(1) if code else "python -c"
            if part.endswith(".py"):
                return Path(part).name
    return Path(command[0]).name


def family(driver: int, marker: str) -> dict[tuple[int, float], psutil.Process]:
    """The driver and every process it started, keyed by (pid, start time) so a recycled pid is a new process."""
    found = [psutil.Process(driver), *psutil.Process(driver).children(recursive=True)]
    for process in psutil.process_iter():
        try:
            if process.environ().get("SKIPVIEW_BENCH_MARKER") == marker:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    processes = {}
    for process in found:
        try:
            processes[(process.pid, process.create_time())] = process
        except psutil.NoSuchProcess:
            continue
    return processes


def read(processes: dict[tuple[int, float], psutil.Process], driver: int) -> dict[tuple[int, float], tuple[str, float]]:
    """(label, user + system CPU seconds so far) of each process still there."""
    readings = {}
    for key, process in processes.items():
        try:
            with process.oneshot():
                times = process.cpu_times()
                name = "driver (skipview train)" if process.pid == driver else label(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        readings[key] = (name, times.user + times.system)
    return readings


def run(configuration: str, corpus: Path, wordvecs: Path, storage: Path, settle: float, window: float,
        poll: float) -> dict:
    marker = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TINY_OBJECTIVE_DIR), os.environ.get("PYTHONPATH", "")]),
           "MLFLOW_TRACKING_URI": f"sqlite:///{storage}/mlflow.db", "SKIPVIEW_BENCH_MARKER": marker}
    env.pop("RAY_ADDRESS", None)
    command = [sys.executable, "-c", LAUNCH, configuration, "train", "--objective", "tiny_objective:build",
               "--corpus", str(corpus), "--wordvecs", str(wordvecs), "--storage", str(storage / "runs"),
               "--name", f"{configuration}-{marker[:8]}", "--workers", "1", "--cpus-per-worker", "1",
               "--set", "max_steps=10000000", "--set", "batch_size=8"]
    started = time.time()
    log = storage / "driver.log"
    with open(log, "wb") as output:
        driver = subprocess.Popen(command, env=env, cwd=storage, stdin=subprocess.DEVNULL, stdout=output,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = started + 600
        while True:                                     # the worker has begun to train: every Ray process is up
            assert driver.poll() is None, (f"{configuration}: the run ended before it trained:\n"
                                           f"{log.read_text(errors='replace')[-3000:]}")
            assert time.time() < deadline, f"{configuration}: no training worker within 600 s"
            readings = read(family(driver.pid, marker), driver.pid)
            if any(name == TRAIN_WORKER and cpu > 5 for name, cpu in readings.values()):
                break
            time.sleep(poll)
        trained_after = time.time() - started
        time.sleep(settle)
        first = read(family(driver.pid, marker), driver.pid)
        load_before, opened = os.getloadavg(), time.perf_counter()
        last = dict(first)
        while (elapsed := time.perf_counter() - opened) < window:
            assert driver.poll() is None, f"{configuration}: the run ended inside the window"
            last.update(read(family(driver.pid, marker), driver.pid))
            time.sleep(min(poll, max(window - elapsed, 0)))
        last.update(read(family(driver.pid, marker), driver.pid))
        elapsed = time.perf_counter() - opened
    finally:
        driver.send_signal(signal.SIGTERM)              # the driver shuts its Ray down as on Ctrl-C
        try:
            driver.wait(timeout=120)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait()
        time.sleep(5)                                   # the watchdog ends what the driver left
        for process in psutil.process_iter():
            try:
                if process.environ().get("SKIPVIEW_BENCH_MARKER") == marker:
                    process.kill()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
    per_process: dict[str, float] = {}
    count: dict[str, int] = {}
    for key, (name, cpu) in last.items():
        used = cpu - first.get(key, (name, 0.0))[1]
        per_process[name] = per_process.get(name, 0.0) + used
        count[name] = count.get(name, 0) + 1
    per_minute = {name: round(seconds * 60 / elapsed, 2) for name, seconds in sorted(per_process.items(),
                                                                                   key=lambda item: -item[1])}
    worker = per_minute.pop(TRAIN_WORKER, None)
    total = sum(per_minute.values())
    return {"configuration": configuration, "window_s": round(elapsed, 1),
            "training_began_after_s": round(trained_after, 1),
            "cpu_s_per_minute_total": round(total, 2), "cores": round(total / 60, 3),
            "cpu_s_per_minute_by_process": per_minute, "processes_by_name": dict(sorted(count.items())),
            "training_worker_cpu_s_per_minute": worker,
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=2, help="runs of each configuration, alternated")
    parser.add_argument("--window", type=float, default=90.0, help="seconds measured in each run")
    parser.add_argument("--settle", type=float, default=15.0,
                        help="seconds between the worker's start of training and the window")
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between readings")
    parser.add_argument("--configurations", nargs="+", choices=CONFIGURATIONS, default=list(CONFIGURATIONS))
    parser.add_argument("--machine", default=None, help="words on the machine and its load, kept in the JSON")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    sys.path.insert(0, str(TESTS))
    from prepared_data import write_training_data

    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus, wordvecs = write_training_data(Path(tmp) / "data")
        for i in range(args.pairs):
            for configuration in args.configurations:
                storage = Path(tmp) / f"{configuration}-{i}"
                storage.mkdir()
                runs.append(run(configuration, corpus, wordvecs, storage, args.settle, args.window, args.poll))
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    summary = {}
    for configuration in args.configurations:
        totals = sorted(r["cpu_s_per_minute_total"] for r in runs if r["configuration"] == configuration)
        names = {name for r in runs if r["configuration"] == configuration for name in r["cpu_s_per_minute_by_process"]}
        by_process = {name: round(sum(r["cpu_s_per_minute_by_process"].get(name, 0.0) for r in runs
                                      if r["configuration"] == configuration) / len(totals), 2) for name in names}
        summary[configuration] = {"cpu_s_per_minute_totals": totals,
                                  "cpu_s_per_minute_by_process_mean": dict(sorted(by_process.items(),
                                                                                  key=lambda item: -item[1]))}
    document = {"benchmark": "CPU seconds per minute of a local Ray's own processes while skipview train trains "
                             "(issue 28): Ray's defaults for a local head against driver.connect's reduced head",
                "machine": args.machine or f"{platform.node()}: {os.cpu_count()} CPUs, {platform.processor()}",
                "command": shlex.join(["nice", "-n", str(os.nice(0)), "python", *sys.argv]),
                "protocol": __doc__.split("\n\n", 2)[2].strip(),
                "summary": summary, "runs": runs}
    emit(document, args.out)


if __name__ == "__main__":
    main()
