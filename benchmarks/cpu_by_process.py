"""Where a command's CPU goes, by kind of process: every process on the machine is sampled from /proc while the
command runs, and each one's CPU seconds are summed under its kind (``ray::TrainController``, ``raylet``, the
dashboard's modules, ``skipview`` commands, ``dvc``, ``pytest``, ...). Made for the test suite, which is bound by CPU
on two cores and starts thousands of short Ray, MLflow and DVC processes that ``getrusage`` never sees (Ray reaps
its own), but it takes any command:

    python benchmarks/cpu_by_process.py --out reports/benchmarks/test_suite_cpu.json -- .venv/bin/python -m pytest

A process that starts and ends between two samples (``--interval``) is missed: ``sampled_cpu_s`` against
``machine_cpu_s`` (every busy CPU second of the machine, /proc/stat) says how much the samples cover, and what
ran beside the command counts in both.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from collections import defaultdict
from pathlib import Path

from emit import emit
from skipview.platform.tracking.lineage import cpu
from test_suite import busy_cpu_s

TICK = os.sysconf("SC_CLK_TCK")
# a process's kind: the first of these its command line holds, else its program's name
KINDS = ("ray::", "ray-dashboard-", "dashboard/dashboard.py", "dashboard/agent.py", "log_monitor.py",
         "autoscaler/_private/monitor.py", "runtime_env/agent", "gcs_server", "raylet", "skipview.platform.cli",
         "skipview", "pytest", "execnet", "mlflow", "dvc", "chromium", "fasttext", "pip")


def kind(command: str) -> str:
    for name in KINDS:
        if name in command:
            if name in ("ray::", "ray-dashboard-"):         # the actor's or module's own name: ray::TrainController
                return command[command.index(name):].split()[0].split(".")[0].rstrip("-0123456789")
            return name
    program = command.split()[0] if command.split() else "?"
    return Path(program).name


def sample(seen: dict[tuple[str, str], tuple[str, float]]) -> None:
    """Each live process's (kind, CPU seconds so far), keyed by pid and start time (a pid may be reused)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:                 # ended between the listing and the read
            continue
        name_end = stat.rfind(")")
        fields = stat[name_end + 2:].split()
        key = (pid, fields[19])
        seen[key] = (kind(command or stat[stat.find("(") + 1:name_end]), (int(fields[11]) + int(fields[12])) / TICK)


def profile(command: list[str], interval: float) -> dict:
    before: dict = {}
    sample(before)
    busy, start = busy_cpu_s(), time.monotonic()
    seen = dict(before)
    process = subprocess.Popen(command)
    while process.poll() is None:
        sample(seen)
        time.sleep(interval)
    sample(seen)
    wall, machine_cpu = time.monotonic() - start, busy_cpu_s() - busy
    totals, counts = defaultdict(float), defaultdict(int)
    for key, (name, cpu_s) in seen.items():
        used = cpu_s - (before[key][1] if key in before else 0.0)
        if used > 0:
            totals[name] += used
            counts[name] += 1
    by_kind = sorted(totals, key=totals.get, reverse=True)
    model, native_bf16 = cpu()
    return {"command": " ".join(command), "exit_code": process.returncode, "wall_s": round(wall, 1),
            "machine_cpu_s": round(machine_cpu, 1), "sampled_cpu_s": round(sum(totals.values()), 1),
            "interval_s": interval, "machine": {"model": model, "cores": os.cpu_count(), "native_bf16": native_bf16},
            "cpu_s_by_kind": {name: {"cpu_s": round(totals[name], 1), "processes": counts[name]} for name in by_kind}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interval", type=float, default=0.3, help="seconds between samples of /proc")
    parser.add_argument("--out", type=Path, help="write the JSON here too")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    emit(profile(command, args.interval), args.out)


if __name__ == "__main__":
    main()
