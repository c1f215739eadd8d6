"""How long the test suite takes from a fresh clone, and whether it passes: the README's full command, the fast tier,
or `.ci/run` as CI runs it, at any commit, with what ran beside it.

    python benchmarks/test_suite.py --ref 7965e15 --tier full --label before-full \
        --out reports/benchmarks/test_suite.json
    python benchmarks/test_suite.py --tier ci --label after-ci --beside "nothing" --out ...

Each run clones the commit into a scratch folder with `../shared` beside it (as CI lays it out), runs
`scripts/setup.sh` (timed apart, except for the `ci` tier, whose `.ci/run` sets up itself), then the tier's command
with a JUnit report, from which it reads the counts and the slowest tests. The document holds one entry per label, so
runs made at different times (before and after a change, idle and loaded) land in one file; `--markdown` renders
that file as the table beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from contextlib import nullcontext, suppress
from pathlib import Path

import cpu_groups
from emit import emit
from skipview.platform.files import write_text_aside
from skipview.platform.tracking.lineage import cpu

REPOSITORY = Path(__file__).resolve().parents[1]
SHARED = REPOSITORY.parent / "shared"
# The README's two test commands (its quick start), run in the clone after scripts/setup.sh; and what CI runs.
TIERS = {
    "full": [".venv/bin/python", "-m", "pytest"],
    "fast": [".venv/bin/python", "-m", "pytest", "-m", "not slow"],
    "ci": ["bash", ".ci/run"],
}
SLOWEST = 20


def machine() -> dict:
    model, native_bf16 = cpu()
    return {"model": model, "cores": os.cpu_count(), "native_bf16": native_bf16}


def clone(ref: str, scratch: Path) -> tuple[Path, str]:
    """A fresh clone of ``ref`` with ``../shared`` beside it, as CI lays out its clone."""
    checkout = scratch / "skipview"
    subprocess.run(["git", "clone", "--quiet", "--no-local", str(REPOSITORY), str(checkout)], check=True)
    subprocess.run(["git", "checkout", "--quiet", ref], cwd=checkout, check=True)
    (scratch / "shared").symlink_to(SHARED.resolve())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True,
                            check=True).stdout.strip()
    return checkout, commit


def busy_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy (user, nice, system, interrupts) since boot, from /proc/stat."""
    user, nice, system, _idle, _iowait, irq, softirq = map(int, Path("/proc/stat").read_text().split()[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def timed(command: list[str], cwd: Path, log: Path, env: dict[str, str]) -> dict:
    """Wall seconds of ``command``; CPU seconds of it and its descendants that were waited for (``user_s``,
    ``sys_s``: Ray's processes, reaped by others, are missing from them), of every process it started
    (``own_cpu_s``, from a cpuacct group where the machine has one: Ray's included, nothing beside it) and of the
    whole machine (``machine_cpu_s``: everything, what ran beside it included); its output kept in ``log``."""
    before, busy_before = resource.getrusage(resource.RUSAGE_CHILDREN), busy_cpu_s()
    start = time.monotonic()
    with log.open("w") as out, (cpu_groups.group("suite") if cpu_groups.available() else nullcontext()) as group:
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True, preexec_fn=group[1] if group else None)
        try:
            code = process.wait()
        except BaseException:
            stop_group(process)
            raise
        own = {"own_cpu_s": round(cpu_groups.cpu_s(group[0]), 1)} if group else {}
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"exit_code": code, "wall_s": round(wall, 1), "user_s": round(after.ru_utime - before.ru_utime, 1),
            "sys_s": round(after.ru_stime - before.ru_stime, 1), **own,
            "machine_cpu_s": round(busy_cpu_s() - busy_before, 1)}


def stop_group(process: subprocess.Popen, grace_s: float = 10) -> None:
    """A stopped benchmark stops what it runs: SIGINT to the command's session (pytest tears its fixtures down, as on
    Ctrl-C), SIGKILL to what is left of it after the grace (pip, under setup.sh, may not answer SIGINT at once)."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def junit_results(report: Path) -> dict:
    """Counts and the slowest tests from pytest's JUnit report (one ``testcase`` per test, its set-up included)."""
    cases = ElementTree.parse(report).getroot().iter("testcase")
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    durations, failures = [], []
    for case in cases:
        name = f"{case.get('classname', '')}::{case.get('name')}"
        outcome = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        kind = {"failure": "failed", "error": "errors", "skipped": "skipped"}[outcome[0]] if outcome else "passed"
        counts[kind] += 1
        if kind in ("failed", "errors"):
            failures.append(name)
        durations.append((float(case.get("time", 0)), name))
    durations.sort(reverse=True)
    return {"counts": counts, "failures": failures,
            "slowest": [{"test": name, "seconds": round(seconds, 1)} for seconds, name in durations[:SLOWEST]]}


def closing_line(log: Path) -> str:
    """pytest's last summary line (``== 510 passed in 812.3s ==``), as printed."""
    lines = [line for line in log.read_text(errors="replace").splitlines() if re.match(r"^=+ .* in [\d.]+s", line)]
    return lines[-1].strip("= ") if lines else ""


def measure(ref: str, tier: str, beside: str, keep: Path, label: str | None) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="suite-"))
    try:
        checkout, commit = clone(ref, scratch)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
        entry = {"commit": commit, "tier": tier, "command": " ".join(TIERS[tier]), "beside": beside,
                 "machine": machine(), "load_average_at_start": os.getloadavg(),
                 "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        keep.mkdir(parents=True, exist_ok=True)
        name = label or f"{tier}-{commit}"                 # the files this run keeps in ``keep``
        report, per_test = scratch / "junit.xml", scratch / "cpu_per_test"
        # the JUnit report and, where the machine has cpuacct groups, each test's CPU (benchmarks/cpu_groups.py,
        # this checkout's copy: a clone of an older commit may not have it) reach pytest through PYTEST_ADDOPTS
        addopts = [f"--junitxml={report}"]
        if cpu_groups.available():
            plugins = scratch / "plugins"
            plugins.mkdir()
            shutil.copy(Path(cpu_groups.__file__), plugins)
            env.update(PYTHONPATH=str(plugins), CPU_GROUPS_OUT=str(per_test))
            addopts += ["-p", "cpu_groups"]
        if tier == "ci":
            # .ci/run is run as it is
            env.update(CI="true", PYTEST_ADDOPTS=" ".join(addopts))
            entry["run"] = timed(TIERS[tier], checkout, keep / f"{name}.log", env)
        else:
            entry["setup"] = timed(["scripts/setup.sh"], checkout, keep / f"{name}.setup.log", env)
            entry["run"] = timed(TIERS[tier], checkout, keep / f"{name}.log", {**env, "PYTEST_ADDOPTS": " ".join(addopts)})
        entry["pytest_summary"] = closing_line(keep / f"{name}.log")
        if report.exists():
            entry.update(junit_results(report))
            shutil.copy(report, keep / f"{name}.junit.xml")
        if per_test.is_dir():
            entry["cpu_by_file"] = cpu_groups.per_file(per_test)
        return entry
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def markdown(document: dict) -> str:
    rows = ["| label | commit | tier | beside | wall | CPU, waited-for processes | CPU, every process of the run "
            "| CPU, whole machine | passed | failed | errors | skipped | pytest |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, e in document["runs"].items():
        c, run = e.get("counts", {}), e["run"]
        machine, own = (f"{run[key] / 60:.1f} min" if key in run else "not measured"
                        for key in ("machine_cpu_s", "own_cpu_s"))
        rows.append(f"| {label} | {e['commit']} | {e['tier']} (`{e['command']}`) | {e['beside']} | "
                    f"{run['wall_s'] / 60:.1f} min | {(run['user_s'] + run['sys_s']) / 60:.1f} min | {own} | {machine} | "
                    f"{c.get('passed', '')} | {c.get('failed', '')} | {c.get('errors', '')} | {c.get('skipped', '')} | "
                    f"{e['pytest_summary']} |")
    machines = {json.dumps(e["machine"], sort_keys=True) for e in document["runs"].values()}
    out = ["# The test suite's wall time from fresh clones", "",
           f"Written by `python benchmarks/test_suite.py --markdown {document.get('path', '')}`; each row was measured "
           "by the command in its `measured_by` field of the JSON, from a fresh clone. Machine(s): "
           + "; ".join(f"{m['model']}, {m['cores']} cores, native bf16: {m['native_bf16']}"
                       for m in map(json.loads, machines)) + ".", "", *rows, "", *document.get("notes", []), ""]
    for label, e in document["runs"].items():
        if e.get("slowest"):
            out += [f"## {label}: the {SLOWEST} slowest tests (set-up included)", "",
                    *[f"- {s['seconds']:.1f} s `{s['test']}`" for s in e["slowest"]], ""]
        if e.get("cpu_by_file"):
            out += [f"## {label}: the test files that took the most CPU (every process of their tests)", "",
                    "| file | CPU s | wall s, summed over its tests | tests |", "|---|---|---|---|",
                    *[f"| `{f['file']}` | {f['cpu_s']:.0f} | {f['wall_s']:.0f} | {f['tests']} |"
                      for f in e["cpu_by_file"]], ""]
        if e.get("failures"):
            out += [f"{label} failed: " + ", ".join(f"`{f}`" for f in e["failures"]), ""]
    return "\n".join(out)


def write_markdown(json_path: Path, document: dict) -> None:
    write_text_aside(json_path.with_suffix(".md"), markdown({**document, "path": json_path}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default="HEAD", help="the commit to clone and test (default HEAD)")
    parser.add_argument("--tier", choices=sorted(TIERS), default="full")
    parser.add_argument("--label", help="the entry's key in --out (default TIER-COMMIT)")
    parser.add_argument("--beside", default="nothing (idle machine)", help="what else ran on the machine")
    parser.add_argument("--out", type=Path, help="the JSON to add this run to (a .md is written beside it)")
    parser.add_argument("--logs", type=Path, default=Path(tempfile.gettempdir()) / "test_suite_logs",
                        help="where each run's setup and pytest output is kept")
    parser.add_argument("--markdown", type=Path, metavar="JSON", help="only render JSON's table beside it")
    args = parser.parse_args()
    if args.markdown:
        write_markdown(args.markdown, json.loads(args.markdown.read_text()))
        return
    # SIGTERM as Ctrl-C: the run's command is stopped and the scratch clone removed (measure's finally)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        entry = measure(args.ref, args.tier, args.beside, args.logs, args.label)
    except KeyboardInterrupt:
        sys.exit("stopped: the run's command was ended and its clone removed; no result was written")
    entry["measured_by"] = "python benchmarks/test_suite.py " + shlex.join(sys.argv[1:])
    document = json.loads(args.out.read_text()) if args.out and args.out.exists() else {"runs": {}}
    document["runs"][args.label or f"{args.tier}-{entry['commit']}"] = entry
    emit(document, args.out)
    if args.out:
        write_markdown(args.out, document)
    sys.exit(0 if entry["run"]["exit_code"] == 0 else 1)


if __name__ == "__main__":
    main()
