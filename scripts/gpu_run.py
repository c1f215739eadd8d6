"""skipview's platform on a GPU machine without network access, from the offline bundle, in two commands
(issue 40; the plan and its figures: reports/benchmarks/gpu_platform.md).

    scripts/gpu_run.sh install       # first, sent with .gpu_bundle/packages: the packages into .gpu_work/site
    scripts/gpu_run.sh run           # second, sent with .gpu_bundle/data, on the same machine: the run

The packages and the data do not fit one transfer's 64 MiB (gpu_bundle.py), so the first command unpacks the
packages into the git-ignored ``.gpu_work/``, which the machine keeps between the commands, and runs a preflight
that imports what training needs and names the one that fails, and checks CUDA. The second command's phases, each
under its own time guard so that a phase cut short still leaves what came before (``PLAN``):

1. unpack: the corpus, vectors and SentEval data (``gpu_bundle.unpack``);
2. profile: ``skipview train`` itself (Ray Train, the loop, checkpoints with STS14, MLflow to a SQLite file) for the
   novels-with-news profile (the disc (f, g) search's best settings, h 256, N 512) at ``--gpus-per-worker 1``,
   ``--profile-steps`` steps; ``benchmarks/run_phases.py`` then splits its wall time into start-up, steps,
   evaluations, checkpoints and the final model, with the steps' sentences/s;
3. compare: ``skipview study run`` of a study file it writes: the multi-view (f, g) model and f trained alone (cells disc-fg, disc-f) at
   h 1024, the paper's size, with the profile's settings otherwise; as many steps as the guard leaves, sized from
   the profile's measured rate and overhead, three epochs at most; every view evaluated on STS12-14, STS-B and
   SICK-R beside the CPU table (reports/table6_trained/, h 256);
4. collect: ``gpu_platform.json`` (the figures, machine-readable: the device as CUDA names it, torch and CUDA
   versions, the profile's sentences/s and share of time outside steps, each view's scores beside the CPU table's
   and uSIF's on the same vectors, the commands), ``summary.json`` (everything the phases measured) and
   ``results.tar.gz`` (MLflow's SQLite store and artifacts, the comparison's report; no weights) into OUT,
   rewritten after every phase.

OUT (the folder whose files are brought back) stays flat and small, eight files at most: install.json (the first
command), or gpu_platform.json, summary.json, results.tar.gz and one log per phase (the second). Back here,

    python3 scripts/gpu_run.py report --from FOLDER      # FOLDER: where OUT's files came back

puts gpu_platform.json beside reports/benchmarks/gpu_platform.md and writes the figures into the Markdown's
results block.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import yaml

import gpu_bundle

REPOSITORY = Path(__file__).resolve().parents[1]
# Seconds per phase of the second command, 540 in all. The plan's 15 minutes on the GPU machine pay its start (a
# minute or more), the first command (its transfer and INSTALL_S), the gap between the commands (under 30 s) and
# the second command's transfer, so the second command gets 540 of its 600 s (~765 s in all, the time plan
# in gpu_platform.md). A phase's guard is its share or what is left of the 540 s after the phases before it,
# whichever is less. The profile's 2,306 steps are one epoch (1.18M sentences / 512), ~35 s at the bare step's
# 34,600-44,200 sentences/s (gpu.md, H100, fp32, N 512), plus Ray's start, five STS14 evaluations and the final
# model; the comparison's two models at h 1024 get the rest.
PLAN = {"unpack": 30, "profile": 150, "compare": 340, "collect": 20}
INSTALL_S = 45      # the first command: the packages' unpacking (~10 s) and the preflight's imports, its guard 120 s
PROFILE_CONFIG = "reports/tune_sif_claim/best_config.yaml"
CPU_TABLE = "reports/table6_trained/ablation_summary.json"
COMPARE_CELLS = "disc-fg,disc-f"      # the multi-view (f, g) model and f trained alone
BASELINE = "fasttext-usif"            # uSIF on the same (bundled) vectors: no training, seconds of evaluation
TASKS = "sts12,sts13,sts14,stsb_unsup,sickr_unsup"
# when the profile leaves no measurement: the bare step's rate (gpu.md, fp32, N 512) and a minute per model
FALLBACK_RATE, FALLBACK_OVERHEAD_S = 34_638, 60.0
EXCLUDED_FROM_RESULTS = (".safetensors", ".npy", ".pt", ".bin", ".pkl")   # weights and vectors: too large to return


class Runner:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.out, self.work = args.out.resolve(), args.work.resolve()
        self.run_dir = self.work / "run"          # the second command's: data, MLflow store, checkpoints, report
        self.data = self.run_dir / "data"
        self.summary: dict = {"plan_s": PLAN, "command": " ".join(["scripts/gpu_run.sh", *args.argv]),
                              "settings": {k: str(v) for k, v in vars(args).items() if k != "argv"}, "phases": {}}
        self.env = dict(os.environ)
        self.env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(self.work / "site"), skipview_source(self.work),
                                                               os.environ.get("PYTHONPATH")])),
                        MLFLOW_TRACKING_URI=f"sqlite:///{self.run_dir / 'mlflow.db'}", PYTHONUNBUFFERED="1")

    # ------------------------------------------------------------------ the first command

    def install(self) -> int:
        """The packages into WORK/site and the preflight; WORK/install.json, which the second command needs, only
        when both succeed."""
        self.out.mkdir(parents=True, exist_ok=True)
        (self.work / "install.json").unlink(missing_ok=True)
        shutil.rmtree(self.work / "site", ignore_errors=True)          # a rerun of the first command
        record = {"plan_s": INSTALL_S, "command": self.summary["command"],
                  "unpack_s": gpu_bundle.unpack(self.args.bundle, self.work)}
        try:
            record["preflight"] = json.loads(self.python(PREFLIGHT, str(self.args.gpus_per_worker),
                                                         timeout=120 * self.args.plan_scale))
        except PhaseFailed as error:
            record["preflight_failed"] = str(error)
        (self.out / "install.json").write_text(json.dumps(record, indent=2) + "\n")
        if "preflight_failed" in record:
            print(f"error: gpu_run install: the preflight failed: {one_line(record['preflight_failed'])}",
                  file=sys.stderr)
            return 1
        (self.work / "install.json").write_text(json.dumps(record, indent=2) + "\n")
        print(json.dumps(record))
        return 0

    # ------------------------------------------------------------------ the second command's phases

    def unpack(self) -> None:
        self.summary["unpack"] = gpu_bundle.unpack(self.args.bundle, self.run_dir)
        self.summary["bundle"] = json.loads((self.args.bundle / "manifest.json").read_text())["data"]

    def profile(self) -> None:
        command = [*self.skipview("train"), "--objective", "disc", "--config", PROFILE_CONFIG,
                   "--set", f"max_steps={self.args.profile_steps}", "--set", "epochs=null",
                   "--set", f"checkpoint_every={max(self.args.profile_steps // 4, 1)}",
                   *self.common_settings(), *sets(self.args.profile_set),
                   "--storage", str(self.run_dir / "runs"), "--name", "gpu-profile", "--experiment", "gpu-profile",
                   "--metrics", str(self.run_dir / "profile_metrics.json")]
        start = time.time()
        code = self.run_logged("profile", command)
        end = time.time()
        if code:
            raise PhaseFailed(f"skipview train exited {code}")
        breakdown = self.python_file(REPOSITORY / "benchmarks" / "run_phases.py", [
            "--tracking-uri", self.env["MLFLOW_TRACKING_URI"], "--run-name", "gpu-profile",
            "--log", str(self.out / "profile.log"), "--start", str(start), "--end", str(end),
            "--label", "gpu_run profile"])
        profile = self.summary["profile"] = json.loads(breakdown)
        profile["share_outside_steps"] = round(1 - profile["phases_s"]["steps"] / profile["wall_s"], 3)

    def compare(self) -> None:
        steps, epochs = self.compare_budget()
        study = self.compare_study(steps, epochs)
        command = [*self.skipview("study"), "run", study.stem, "--storage", str(self.run_dir / "runs")]
        code = self.run_logged("compare", command, cwd=study.parents[1])
        reported = study.parents[1] / "reports" / study.stem
        if (reported / "ablation_summary.json").exists():
            shutil.copytree(reported, self.run_dir / "report_compare", dirs_exist_ok=True)     # what collect returns
            self.summary["compare"]["scores"] = beside_cpu_table(
                json.loads((reported / "ablation_summary.json").read_text()))
        if code:
            raise PhaseFailed(f"skipview study run exited {code}")

    def compare_study(self, steps: int, epochs: int | None) -> Path:
        """The comparison as a study file of its own, in a folder laid out as a checkout (studies/ with the
        catalogue, data/<corpus> and data/senteval linked to the unpacked bundle): the profile's base at the paper's
        d, the compared rows of the catalogue and uSIF on the same vectors (a reference row, run after them), one
        seed."""
        folder = self.run_dir / "compare_study"
        (folder / "studies").mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPOSITORY / "studies" / "catalogue.yaml", folder / "studies" / "catalogue.yaml")
        (folder / "data").mkdir(exist_ok=True)
        for link, target in (("gpu", self.data), ("senteval", self.data / "senteval")):
            if not (folder / "data" / link).exists():
                (folder / "data" / link).symlink_to(target)
        budget = {"max_steps": None, "epochs": epochs} if epochs else {"max_steps": steps, "epochs": None}
        settings = {"objective_settings.hidden_size": self.args.hidden, **budget,
                    "checkpoint_every": max(steps // 3, 1), "precision": self.args.precision,
                    "batch_size": self.args.batch_size, "postprocessing_sentences": 5000,
                    **{key: yaml.safe_load(value) for key, _, value in
                       (word.partition("=") for word in self.args.compare_set.split())}}
        study = {"question": f"The multi-view f against f alone at d {self.args.hidden} on a GPU (issue 40)",
                 "corpus": "gpu", "config": str(REPOSITORY / PROFILE_CONFIG), "settings": settings,
                 "cells": [*self.args.cells.split(","), self.args.baseline], "claims": ["table6"], "seeds": 1,
                 "tasks": TASKS.split(","), "protocol": "fast", "component_fit": "subset",
                 "gpus_per_worker": self.args.gpus_per_worker, "cpus_per_worker": self.args.cpus_per_worker}
        path = folder / "studies" / "gpu_compare.yaml"
        path.write_text(yaml.safe_dump(study, sort_keys=False))
        return path

    def compare_budget(self) -> tuple[int, int | None]:
        """Steps per model that fit the compare phase, from the profile's measured rate and its time outside
        steps (start-up, evaluations, final model; at h 1024 the host still sets the pace, gpu.md); and the epochs
        when all ``--epochs`` fit."""
        measured = self.summary.get("profile", {})
        rate = measured.get("sentences_per_s_of_steps") or FALLBACK_RATE
        overhead = measured.get("wall_s", 0) - measured.get("phases_s", {}).get("steps", 0) or FALLBACK_OVERHEAD_S
        batch = self.args.batch_size
        models = len(self.args.cells.split(","))
        per_model_s = (self.guard("compare") - 45) / models - overhead   # 45 s: uSIF's evaluation, the report
        fit = max(int(rate * per_model_s * 0.9 / batch), 1)           # 10 % margin: a model's rate varies
        sentences = int(json.loads((self.data / "prepared" / "meta.json").read_text())["sentences"])
        full = self.args.epochs * (sentences // batch)
        steps = min(fit, full)
        self.summary["compare"] = {"rate_assumed": rate, "overhead_assumed_s": round(overhead, 1),
                                   "steps_per_model": steps,
                                   "epochs_fit": round(steps / max(full / self.args.epochs, 1), 2)}
        return steps, self.args.epochs if fit >= full else None

    # ------------------------------------------------------------------ helpers

    def common_settings(self) -> list[str]:
        return ["--corpus", str(self.data / "prepared"), "--wordvecs", str(self.data / "wordvecs"),
                "--senteval-dir", str(self.data / "senteval" / "downstream"),
                "--set", f"precision={self.args.precision}", "--set", f"batch_size={self.args.batch_size}",
                "--set", "postprocessing_sentences=5000",
                "--gpus-per-worker", str(self.args.gpus_per_worker), "--cpus-per-worker",
                str(self.args.cpus_per_worker)]

    def skipview(self, command: str) -> list[str]:
        return [sys.executable, "-m", "skipview.platform.cli", command]

    def run_logged(self, phase: str, command: list[str], cwd: Path = REPOSITORY) -> int:
        """Run a phase's command under its guard, its output into OUT/<phase>.log; the whole process group is
        interrupted at the guard (Ray's driver shuts its local cluster down), then killed 20 s later."""
        self.summary["phases"].setdefault(phase, {})["command"] = " ".join(command)
        with open(self.out / f"{phase}.log", "w") as log:
            process = subprocess.Popen(command, cwd=cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            try:
                return process.wait(timeout=self.guard(phase))
            except subprocess.TimeoutExpired:
                for stop, grace in ((signal.SIGINT, 20), (signal.SIGKILL, None)):
                    os.killpg(process.pid, stop)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(timeout=grace)
                        break
                raise PhaseFailed(f"cut at its guard of {self.guard(phase):.0f} s")

    def guard(self, phase: str) -> float:
        scale = self.args.plan_scale
        left = sum(PLAN.values()) * scale - (time.time() - self.started) - PLAN["collect"] * scale
        return max(min(PLAN[phase] * scale, left), 1.0)

    def python(self, code: str, *arguments: str, timeout: float) -> str:
        try:
            result = subprocess.run([sys.executable, "-c", code, *arguments], cwd=REPOSITORY, env=self.env,
                                    capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise PhaseFailed(f"{code.split(';')[0].strip()[:60]}... took over {timeout:.0f} s") from None
        if result.returncode:
            raise PhaseFailed((result.stderr.strip().splitlines() or ["(no output)"])[-1])
        return result.stdout

    def python_file(self, path: Path, arguments: list[str]) -> str:
        return self.python(f"import runpy, sys; sys.argv = {[str(path), *arguments]!r}; "
                           f"runpy.run_path({str(path)!r}, run_name='__main__')", timeout=120 * self.args.plan_scale)

    def collect(self) -> None:
        """gpu_platform.json, summary.json and results.tar.gz into OUT (rewritten after every phase: a cut run
        keeps what it has)."""
        (self.out / "gpu_platform.json").write_text(json.dumps(platform_record(self.summary), indent=2) + "\n")
        (self.out / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")
        with tempfile.NamedTemporaryFile(dir=self.out, suffix=".partial", delete=False) as partial:
            with tarfile.open(fileobj=partial, mode="w:gz") as tar:
                for name in ("mlflow.db", "mlartifacts", "report_compare", "profile_metrics.json", "summary.json"):
                    path = self.out / name if name == "summary.json" else self.run_dir / name
                    if path.exists():
                        tar.add(path, arcname=name, filter=small_files)
        os.replace(partial.name, self.out / "results.tar.gz")

    def run(self) -> int:
        self.started = time.time()
        self.out.mkdir(parents=True, exist_ok=True)
        installed = self.work / "install.json"
        if not installed.is_file():
            print(f"error: {installed}: no packages installed on this machine: run scripts/gpu_run.sh install (the "
                  "first command) on it first; a fresh machine has no .gpu_work/", file=sys.stderr)
            return 1
        self.summary["install"] = json.loads(installed.read_text())
        shutil.rmtree(self.run_dir, ignore_errors=True)               # a rerun of the second command
        failed = False
        for phase in ("unpack", "profile", "compare"):
            start = time.time()
            try:
                getattr(self, phase)()
                status = "ok"
            except Exception as error:     # a phase's failure, whatever it is, keeps what the phases before left
                status, failed = f"failed: {type(error).__name__}: {error}", True
                if phase == "unpack":        # nothing can run without the data
                    self.record(phase, start, status)
                    self.collect()
                    print(f"error: gpu_run {phase}: {one_line(str(error))}", file=sys.stderr)
                    return 1
            self.record(phase, start, status)
            self.collect()
        print(json.dumps(self.headline()))
        return 1 if failed else 0

    def headline(self) -> dict:
        """The figures that matter, as the output's last line (which is seen even if no file of OUT comes back)."""
        profile = self.summary.get("profile", {})
        scores = self.summary.get("compare", {}).get("scores", {})
        return {"phases": {p: v["status"] for p, v in self.summary["phases"].items()},
                "device": self.summary["install"]["preflight"]["device"],
                "profile": {k: profile.get(k) for k in ("wall_s", "sentences_per_s_of_steps", "share_outside_steps")},
                "compare_steps_per_model": self.summary.get("compare", {}).get("steps_per_model"),
                "sts_avg": {row: tasks.get("sts_avg") for row, tasks in scores.items()}}

    def record(self, phase: str, start: float, status: str) -> None:
        self.summary["phases"].setdefault(phase, {}).update(seconds=round(time.time() - start, 1), status=status)
        print(f"gpu_run: {phase} {status} after {time.time() - start:.0f} s", flush=True)


class PhaseFailed(Exception):
    pass


def one_line(text: str) -> str:
    return " ".join(text.split())


def small_files(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return None if member.isfile() and member.name.endswith(EXCLUDED_FROM_RESULTS) else member


def sets(words: str) -> list[str]:
    return [part for word in words.split() for part in ("--set", word)]


def skipview_source(work: Path) -> str:
    """The checkout's source folders as the package ``skipview`` (mapped as setup.py maps them), so the code that
    runs is the checkout's own without installing it; linked again by each command (its checkout may be a fresh
    copy)."""
    package = work / "source" / "skipview"
    package.mkdir(parents=True, exist_ok=True)
    for folder in ("models", "platform"):
        (package / folder).unlink(missing_ok=True)
        (package / folder).symlink_to(REPOSITORY / folder)
    return str(package.parent)


def beside_cpu_table(report: dict) -> dict:
    """Each view's scores of the compared cells beside the same cell and view of the CPU table (h 256)."""
    cpu = json.loads((REPOSITORY / CPU_TABLE).read_text())["cells"]
    out = {}
    for cell, views in report["cells"].items():
        for view in ("f", "g", "ensemble"):
            if view not in views:
                continue
            out[f"{cell}/{view}"] = {
                task: {"gpu": round(score["mean"], 2) if score.get("mean") is not None else None,
                       "cpu_h256": round(cpu[cell][view][task]["mean"], 2)
                       if cell in cpu and view in cpu[cell] and cpu[cell][view].get(task, {}).get("mean") is not None
                       else None}
                for task, score in views[view].items() if task in (*TASKS.split(","), "sts_avg")}
    return out


def platform_record(summary: dict) -> dict:
    """The run's figures as reports/benchmarks/gpu_platform.json keeps them: what ran where, the profile's rate and
    share of time outside steps, and each compared view's scores beside the CPU table's (h 256) and uSIF's."""
    preflight = summary.get("install", {}).get("preflight", {})
    profile, compare, phases = summary.get("profile", {}), summary.get("compare", {}), summary.get("phases", {})
    return {
        "device": preflight.get("device"), "torch": preflight.get("torch"), "cuda": preflight.get("cuda"),
        "python": preflight.get("python"), "ray": preflight.get("ray"), "mlflow": preflight.get("mlflow"),
        "commands": {"install": summary.get("install", {}).get("command"), "run": summary.get("command"),
                     **{phase: phases.get(phase, {}).get("command") for phase in ("profile", "compare")}},
        "phases": {phase: {k: v for k, v in record.items() if k != "command"} for phase, record in phases.items()},
        "profile": {"config": PROFILE_CONFIG, "batch_size": int(summary["settings"]["batch_size"]),
                    **{k: profile.get(k) for k in ("steps", "wall_s", "sentences_per_s_of_steps",
                                                   "share_outside_steps", "phases_s", "mlflow_run")}},
        "compare": {"hidden_size": int(summary["settings"]["hidden"]),
                    **{k: compare.get(k) for k in ("steps_per_model", "epochs_fit", "scores")}},
    }


RESULTS_BEGIN = "<!-- gpu results: written by `scripts/gpu_run.py report` from gpu_platform.json; do not edit -->"
RESULTS_END = "<!-- end of gpu results -->"


def results_markdown(record: dict) -> str:
    """gpu_platform.json's figures as the Markdown's results block."""
    profile, compare = record["profile"], record["compare"]
    lines = [f"Measured on **{record['device']}** (torch {record['torch']}, CUDA {record['cuda']}, Python "
             f"{record['python']}, Ray {record['ray']}, MLflow {record['mlflow']}); phases: "
             + ", ".join(f"{p} {v.get('status')} in {v.get('seconds')} s" for p, v in record["phases"].items()) + ".",
             "",
             f"**The profile** (`{profile['config']}`, N {profile['batch_size']}): {profile['steps']} steps, "
             f"{profile['sentences_per_s_of_steps']} sentences/s of steps; {profile['share_outside_steps']} of the "
             f"{profile['wall_s']} s of wall time outside steps; phases (s): "
             + ", ".join(f"{k} {v}" for k, v in (profile.get("phases_s") or {}).items()) + ".",
             "",
             f"**The comparison at h {compare['hidden_size']}**: {compare['steps_per_model']} steps per model "
             f"({compare['epochs_fit']} epochs); Pearson ×100 on this run's vectors, (in brackets) the CPU table's "
             "h 256 mean over its seeds on the full vectors.", ""]
    scores = compare.get("scores") or {}
    tasks = [*TASKS.split(","), "sts_avg"]
    lines += ["| row/view | " + " | ".join(tasks) + " |", "|---|" + "---:|" * len(tasks)]
    for row, by_task in scores.items():
        cells = [f"{shown(by_task.get(t, {}).get('gpu'))} ({shown(by_task.get(t, {}).get('cpu_h256'))})"
                 for t in tasks]
        lines.append(f"| `{row}` | " + " | ".join(cells) + " |")
    lines += ["", "The commands:", ""] + [f"- {k}: `{v}`" for k, v in record["commands"].items() if v]
    return "\n".join(lines)


def shown(score: float | None) -> str:
    return "–" if score is None else str(score)


def report(source: Path, markdown: Path) -> int:
    """Back here: OUT's gpu_platform.json beside the Markdown, and its figures into the Markdown's results block
    (each file replaced whole, so a failed call leaves both as they were)."""
    record_path = source / "gpu_platform.json"
    if not record_path.is_file():
        raise SystemExit(f"error: {record_path}: no gpu_platform.json there (the folder where the second "
                         "command's OUT came back)")
    try:
        record = json.loads(record_path.read_text())
    except json.JSONDecodeError as error:
        raise SystemExit(f"error: {record_path}: line {error.lineno}: not JSON ({error.msg}); a cut transfer?") from None
    text = markdown.read_text()
    begin, end = text.find(RESULTS_BEGIN), text.find(RESULTS_END)
    if begin < 0 or end < begin:
        raise SystemExit(f"error: {markdown}: no results block (the lines {RESULTS_BEGIN!r} and {RESULTS_END!r})")
    block = f"{RESULTS_BEGIN}\n{results_markdown(record)}\n"
    for path, content in ((markdown.with_suffix(".json"), json.dumps(record, indent=2) + "\n"),
                          (markdown, text[:begin] + block + text[end:])):
        partial = path.with_name(path.name + ".partial")
        partial.write_text(content)
        os.replace(partial, path)
    print(f"gpu_run report: {markdown.with_suffix('.json')} and the results block of {markdown}")
    return 0


# imports what the phases need, in their order, and names the first that fails; checks the GPU when one is asked for
PREFLIGHT = """
import importlib, json, sys
versions = {}
for module in ("torch", "numpy", "pydantic", "typer", "mlflow", "ray", "ray.train.torch", "ray.dashboard.optional_deps",
               "skipview.platform.cli", "skipview.platform.training.driver", "skipview.platform.studies.runner"):
    try:
        imported = importlib.import_module(module)
    except Exception as error:
        sys.exit(f"{module}: {type(error).__name__}: {error}")
    versions[module] = getattr(imported, "__version__", "")
import torch
if float(sys.argv[1]) > 0 and not torch.cuda.is_available():
    sys.exit("--gpus-per-worker > 0 but torch sees no CUDA device")
versions["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
versions["cuda"] = torch.version.cuda
versions["python"] = sys.version.split()[0]
versions["ray_from"] = importlib.import_module("ray").__file__
print(json.dumps(versions))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu_run_out")))
    common.add_argument("--work", type=Path, default=REPOSITORY / ".gpu_work",
                        help="git-ignored, so the machine keeps it from the first command to the second")
    common.add_argument("--gpus-per-worker", type=float, default=1)
    common.add_argument("--plan-scale", type=float, default=1.0, help="multiplies every guard (a slow CPU)")
    calls = parser.add_subparsers(dest="call", required=True)
    install = calls.add_parser("install", parents=[common], help="the first command: the packages and the preflight")
    install.add_argument("--bundle", type=Path, default=REPOSITORY / ".gpu_bundle" / "packages")
    run = calls.add_parser("run", parents=[common], help="the second command: the data, the profile, the comparison")
    run.add_argument("--bundle", type=Path, default=REPOSITORY / ".gpu_bundle" / "data")
    run.add_argument("--cpus-per-worker", type=float, default=8, help="also the worker's torch threads")
    run.add_argument("--precision", default="fp32", help="fp32: faster than bf16 at N 512 on the H100 (gpu.md)")
    run.add_argument("--batch-size", type=int, default=512)
    run.add_argument("--hidden", type=int, default=1024, help="h of the compared models (the paper's)")
    run.add_argument("--profile-steps", type=int, default=2306, help="one epoch of the corpus at N 512")
    run.add_argument("--epochs", type=int, default=3, help="the most epochs the compared models train")
    run.add_argument("--cells", default=COMPARE_CELLS, help="the compared rows of studies/catalogue.yaml")
    run.add_argument("--baseline", default=BASELINE, help="the reference row evaluated on the same vectors")
    run.add_argument("--profile-set", default="", help="extra settings for the profile, 'key=value ...'")
    run.add_argument("--compare-set", default="", help="extra settings for the compared models")
    back = calls.add_parser("report", help="back here: OUT's gpu_platform.json beside the Markdown, its figures into it")
    back.add_argument("--from", dest="source", metavar="FOLDER", type=Path, required=True,
                      help="the folder OUT's files were copied back to")
    back.add_argument("--markdown", type=Path, default=REPOSITORY / "reports" / "benchmarks" / "gpu_platform.md",
                      help="the Markdown with the results block; the JSON goes beside it (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.call == "report":
        return report(args.source, args.markdown)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    manifest = args.bundle / "manifest.json"
    if not manifest.is_file():
        raise SystemExit(f"error: {manifest}: no bundle part there (make the bundle with scripts/gpu_bundle.py "
                         "build and send this part: reports/benchmarks/gpu_platform.md)")
    part, wanted = json.loads(manifest.read_text()).get("part"), {"install": "packages", "run": "data"}[args.call]
    if part != wanted:
        raise SystemExit(f"error: {manifest}: the bundle's {part} part, but gpu_run.sh {args.call} takes its "
                         f"{wanted} part (.gpu_bundle/{wanted})")
    runner = Runner(args)
    return runner.install() if args.call == "install" else runner.run()


if __name__ == "__main__":
    sys.exit(main())
