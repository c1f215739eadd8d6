"""The data and training path at BookCorpus scale (issue 37): per stage, wall time, peak memory of every process,
disk written and files, at one corpus size ("point") per command. Writes JSON.

    # the corpus (once): copies of the novels with the news, see scale_corpus.py
    python benchmarks/scale_corpus.py /work/main/data/novels_news/prepared data/scale/pool --copies 26
    # one point: the first COPIES copies (1 = 1.18M sentences, 9 = 10.6M, 26 = 30.7M), every stage
    python benchmarks/scale.py --copies 26 --label after
    # only some stages, with another commit's code (a `pip install --no-deps --target DIR` of it) for a before run
    python benchmarks/scale.py --copies 26 --label before --stages train,evaluate --code /tmp/base-pkg

Stages (each a fresh process of the `skipview` command a user runs, sampled every 0.5 s with psutil):

* ``prepare``     `skipview data prepare --format lines` of the point's raw folder (symlinks into the pool).
* ``generate``    instead of prepare, where prepare would outlast the session on this loaded machine: the store
                  prepare makes of the point's copies, written directly by scale_corpus.py (--corpus generated).
* ``vocabulary``  the vocabulary prepare kept: size, file, what other cuts would keep, and a process that loads it.
* ``wordvecs``    every point imports one fastText model, trained once on the first 120k sentences with params.yaml's
                  novels settings (``--pretrained fasttext.bin --subword-oov``: every word, the new ones too, gets a
                  vector), and states fastText's training time on the point extrapolated from fastText's CPU time
                  per token on the first 30k sentences (which does not depend on the corpus size).
* ``startup``     one training worker's start-up without Ray (its own ``build``, batching plan, first batch), timed
                  in wall and CPU seconds, with its peak RSS.
* ``finalmodel``  rank 0's final-model step without Ray (post-processing fit, model directory, MLflow log_model into
                  a scratch SQLite store) on the untrained objective: per phase wall and CPU seconds and peak memory
                  by kind, anonymous apart from file pages (the mapped table and corpus).
* ``train``       `skipview train` with reports/tune_sif_claim/best_config.yaml (disc, h = 256, N = 512, bf16), two
                  DDP workers of one thread, ``--steps`` steps with a checkpoint half way; the workers' own log lines
                  give start-up (corpus opened, batching plan made, first batch read), steps, checkpoint and final
                  model, and each worker's start-up phases in wall and CPU seconds (built, DDP, resume, MLflow,
                  first batch).
* ``evaluate``    `skipview evaluate` of the final model on STS14.

Result schema (``--json``, default reports/benchmarks/scale.json; a point's entry is replaced, the rest kept)::

    {"machine": {...},
     "points": {"<label>/<copies>": {
         "label", "copies", "sentences", "tokens", "code", "started", "load_average",
         "stages": {"<stage>": {
             "wall_s", "command", "exit_code",
             "processes": [{"role", "pid", "peak_rss_mb", "peak_pss_mb", "peak_anon_mb", "write_mb"}],  # > 20 MB
             "peak_total_rss_mb", "peak_total_pss_mb", "write_mb",     # the process tree at its largest; io written
             "maxrss_mb", "cpu_s",      # wait4: largest RSS and CPU time of the command and the children it reaped
                                        # (on a loaded machine CPU time, not wall time, is what compares)
             "disk": {"path", "mb", "files"},                          # what the stage left on disk
             ...stage's own figures: prepare "us_per_sentence", "cpu_us_per_sentence"; vocabulary "cuts" (words and
                token coverage other cuts would keep); wordvecs "fasttext_train_s" (CPU s extrapolated from the sample);
                startup "phases" {"built_s", "built_cpu_s", "plan_and_first_batch_s", ..._cpu_s, "total_s",
                "total_cpu_s"}; finalmodel "phases" {"<phase>": {"wall_s", "cpu_s", "peak_rss_mb", "peak_pss_mb",
                "peak_anon_mb", "peak_file_mb"}}; train "phases": {"per_rank": {"rank<r>": {"built_s", "startup_s",
                "steps", "steps_s", "checkpoint_s", "startup_phases": {"<phase>": {"wall_s", "cpu_s"}}}},
                "final_model_s"}, "model_disk"; evaluate "sts14"}}}}}

PSS (proportional set size) splits a page shared by several processes between them: the memory-mapped corpus and
word vectors are counted once over the workers, while RSS counts them in full in each.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil

from emit import emit
from skipview.platform.tracking.lineage import cpu

REPOSITORY = Path(__file__).resolve().parents[1]
STAGES = ("prepare", "generate", "vocabulary", "wordvecs", "startup", "finalmodel", "train", "evaluate")
SOURCE = str(REPOSITORY / "data" / "novels_news" / "prepared")      # this checkout's prepared corpus
PROFILE = "reports/tune_sif_claim/best_config.yaml"
SENTEVAL = str(REPOSITORY.parent / "shared" / "data" / "senteval" / "downstream")   # ../shared beside the checkout
# params.yaml's novels settings (corpora.gutenberg_novels.wordvecs): what the real corpus's vectors were made with
FASTTEXT_SETTINGS = ("--method", "skipgram", "--dim", "300", "--epochs", "2", "--threads", "2")
TIMING_SENTENCES = 30_000       # fastText timed on these (its CPU time per token is flat in the corpus size)
MODEL_SENTENCES = 120_000       # the fastText model every point imports is trained on these
MB = 1 << 20
_SMALL_PROCESS_MB = 20          # Ray's helpers below this are left out of the record (they are always there)


class TreeSampler:
    """Peak RSS, PSS and bytes written of a process and all its descendants, sampled in a thread."""

    def __init__(self, pid: int, interval: float = 0.5):
        self.root, self.interval = psutil.Process(pid), interval
        self.peaks: dict[int, dict] = {}
        self.peak_rss = self.peak_pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "TreeSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        try:
            processes = [self.root, *self.root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        total_rss = total_pss = 0
        for process in processes:
            try:
                with process.oneshot():
                    memory = process.memory_full_info()
                    written = process.io_counters().write_bytes
                    role = _role(process, process is self.root)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            peak = self.peaks.setdefault(process.pid, {"role": role, "pid": process.pid, "rss": 0, "pss": 0,
                                                       "anon": 0, "written": 0})
            peak["role"] = role if role != "python" else peak["role"]     # Ray renames its workers once started
            peak["rss"], peak["pss"] = max(peak["rss"], memory.rss), max(peak["pss"], memory.pss)
            peak["anon"] = max(peak["anon"], _pss_anon(process.pid))
            peak["written"] = max(peak["written"], written)
            total_rss, total_pss = total_rss + memory.rss, total_pss + memory.pss
        self.peak_rss, self.peak_pss = max(self.peak_rss, total_rss), max(self.peak_pss, total_pss)

    def record(self) -> dict:
        processes = [{"role": p["role"], "pid": p["pid"], "peak_rss_mb": round(p["rss"] / MB, 1),
                      "peak_pss_mb": round(p["pss"] / MB, 1), "peak_anon_mb": round(p["anon"] / MB, 1),
                      "write_mb": round(p["written"] / MB, 1)}
                     for p in sorted(self.peaks.values(), key=lambda p: -p["rss"]) if p["rss"] >= _SMALL_PROCESS_MB * MB]
        return {"processes": processes, "peak_total_rss_mb": round(self.peak_rss / MB, 1),
                "peak_total_pss_mb": round(self.peak_pss / MB, 1),
                "write_mb": round(sum(p["written"] for p in self.peaks.values()) / MB, 1)}


def _pss_anon(pid: int) -> int:
    """A process's anonymous pages (what it allocated, apart from the mapped table and corpus), in bytes."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss_Anon:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _role(process: psutil.Process, is_root: bool) -> str:
    """What a process is: the stage's command (driver), a Ray process by its title, or a worker of the command."""
    if is_root:
        return "driver"
    title = " ".join(process.cmdline()) or process.name()
    if title.startswith("ray::"):
        return title.split()[0]
    for name in ("gcs_server", "raylet", "dashboard", "log_monitor", "runtime_env", "monitor.py"):
        if name in title:
            return f"ray {name}"
    return "python" if "python" in process.name() else process.name()


def run_stage(command: list[str], log_path: Path, env: dict, output: Path | None) -> dict:
    """Run ``command`` (its output to ``log_path``), sampled; wall time, memory, io and what it left on disk."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPOSITORY)
        with TreeSampler(process.pid) as sampler:
            # wait4's rusage: the largest resident set of the command or a child it waited for, which a command
            # shorter than the sampling interval would otherwise not show
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = code = os.waitstatus_to_exitcode(status)
    record = {"wall_s": round(time.perf_counter() - start, 2), "exit_code": code,
              "command": " ".join(_portable(c) for c in command), **sampler.record(),
              "maxrss_mb": round(usage.ru_maxrss / 1024, 1),
              "cpu_s": round(usage.ru_utime + usage.ru_stime, 1)}
    if output is not None and output.exists():
        record["disk"] = disk_usage(output)
    if code:
        raise SystemExit(f"{command[1:4]} exited with {code}: see {log_path}")
    return record


def disk_usage(path: Path) -> dict:
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    return {"path": _portable(str(path)), "mb": round(sum(p.stat().st_size for p in files) / MB, 1),
            "files": len(files)}


def _portable(text: str) -> str:
    """A recorded command or path as it reads from the checkout: the repository's paths relative, the shared folder
    beside it as ``../shared``, this machine's interpreter as ``python``."""
    return (text.replace(str(REPOSITORY) + "/", "").replace(str(REPOSITORY.parent / "shared"), "../shared")
            .replace(sys.executable, "python"))


def skipview(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "skipview.platform.cli", *arguments]


# --------------------------------------------------------------------------------------------------- stages


def raw_folder(work: Path, copies: int) -> Path:
    """The point's raw corpus: symlinks to the pool's first ``copies`` copies."""
    pool, folder = work / "pool", work / f"raw-{copies}"
    missing = [i for i in range(copies) if not (pool / f"copy-{i:04d}.txt").is_file()]
    if missing:
        raise SystemExit(f"{pool}: copy-{missing[0]:04d}.txt missing; run benchmarks/scale_corpus.py "
                         f"--copies {copies} first")
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(copies):
        link = folder / f"copy-{i:04d}.txt"
        if not link.exists():
            link.symlink_to((pool / link.name).resolve())
    return folder


def stage_prepare(point: dict, paths: dict, env: dict, args) -> dict:
    out = paths["prepared"]
    record = run_stage(skipview("data", "prepare", str(raw_folder(args.work, args.copies)), str(out),
                                "--format", "lines", "--no-progress", "--overwrite", *args.prepare_args),
                       paths["logs"] / "prepare.txt", env, out)
    meta = json.loads((out / "meta.json").read_text())
    point.update(sentences=meta["sentences"], tokens=meta["tokens"])
    return {**record, "sentences": meta["sentences"], "tokens": meta["tokens"], "vocab_size": meta["vocab_size"],
            "us_per_sentence": round(record["wall_s"] / meta["sentences"] * 1e6, 2),
            "cpu_us_per_sentence": round(record["cpu_s"] / meta["sentences"] * 1e6, 2)}


def stage_generate(point: dict, paths: dict, env: dict, args) -> dict:
    out = paths["generated"]
    record = run_stage([sys.executable, "benchmarks/scale_corpus.py", args.source, str(out), "--copies",
                        str(args.copies), "--prepared"], paths["logs"] / "generate.txt", env, out)
    meta = json.loads((out / "meta.json").read_text())
    point.update(sentences=meta["sentences"], tokens=meta["tokens"])
    return {**record, "sentences": meta["sentences"], "tokens": meta["tokens"], "vocab_size": meta["vocab_size"]}


def stage_vocabulary(point: dict, paths: dict, env: dict, args) -> dict:
    prepared = paths["prepared"]
    probe = "from skipview.models.vocab import Vocab; import sys; Vocab.load(sys.argv[1])"
    record = run_stage([sys.executable, "-c", probe, str(prepared / "vocab.tsv")], paths["logs"] / "vocabulary.txt",
                       env, prepared / "vocab.tsv")
    meta = json.loads((prepared / "meta.json").read_text())
    counts = _counts(prepared / "vocab.tsv")
    total = counts.sum()
    cuts = {f"min_count_{m}": _cut(counts >= m, counts, total) for m in (2, 5)}
    cuts.update({f"top_{n}": _cut(np.arange(len(counts)) < n, counts, total) for n in (20_000, 100_000, 1_000_000)})
    return {**record, "vocab_size": meta["vocab_size"], "word_types_seen": meta["word_types_seen"],
            "options": meta.get("options"), "cuts": cuts}


def _counts(vocab_tsv: Path) -> np.ndarray:
    with open(vocab_tsv, encoding="utf-8") as f:
        return np.array([int(line.rsplit("\t", 1)[1]) for line in f], dtype=np.int64)[4:]


def _cut(kept: np.ndarray, counts: np.ndarray, total: int) -> dict:
    return {"words": int(kept.sum()), "token_coverage": round(float(counts[kept].sum() / max(total, 1)), 5)}


def stage_wordvecs(point: dict, paths: dict, env: dict, args) -> dict:
    out = paths["wordvecs"]
    meta = json.loads((paths["prepared"] / "meta.json").read_text())
    timing = args.work / f"fasttext-timing-{TIMING_SENTENCES}.json"
    if not timing.is_file():
        timing.write_text(json.dumps(fasttext_on_sample(args, env, TIMING_SENTENCES), indent=2) + "\n")
    measured = json.loads(timing.read_text())
    model = args.fasttext_bin or args.work / f"sample-{MODEL_SENTENCES}" / "wordvecs" / "fasttext.bin"
    if not model.is_file():
        fasttext_on_sample(args, env, MODEL_SENTENCES)
    record = run_stage(skipview("data", "wordvecs", str(paths["prepared"]), str(out), "--pretrained", str(model),
                                "--subword-oov", "--overwrite"),
                       paths["logs"] / "wordvecs.txt", env, out)
    # CPU time, not wall time: the sample's wall time says more about the machine's load than about fastText
    cpu_per_token = measured["cpu_s"] / measured["tokens"]
    record["fasttext_train_s"] = {
        "extrapolated_cpu_s": round(cpu_per_token * meta["tokens"], 1),
        "extrapolated_wall_s_2_idle_cores": round(cpu_per_token * meta["tokens"] / 2, 1),
        "from": f"fastText on the first {measured['sentences']} sentences ({measured['tokens']} tokens): "
                f"{measured['cpu_s']} CPU s, {measured['wall_s']} s wall, {measured['command']}"}
    return record


def fasttext_on_sample(args, env: dict, sentences: int) -> dict:
    """fastText trained on the first ``sentences`` sentences of the pool's first copy (whole documents) with the
    novels' settings of params.yaml, in data/scale/sample-N/; its run record with the sample's size."""
    folder = args.work / f"sample-{sentences}"
    folder.mkdir(parents=True, exist_ok=True)
    with open(args.work / "pool" / "copy-0000.txt", encoding="utf-8") as source, \
            open(folder / "sample.txt", "w", encoding="utf-8") as sample:
        written = 0
        for line in source:
            if not line.strip() and written >= sentences:
                break
            written += bool(line.strip())
            sample.write(line)
    subprocess.run(skipview("data", "prepare", str(folder / "sample.txt"), str(folder / "prepared"), "--format",
                            "lines", "--no-progress", "--overwrite"), check=True, env=env, cwd=REPOSITORY)
    record = run_stage(skipview("data", "wordvecs", str(folder / "prepared"), str(folder / "wordvecs"),
                                *FASTTEXT_SETTINGS, "--no-progress", "--overwrite"),
                       folder / "wordvecs.txt", env, folder / "wordvecs")
    meta = json.loads((folder / "prepared" / "meta.json").read_text())
    return {**record, "sentences": meta["sentences"], "tokens": meta["tokens"]}


_PHASES = {
    "built_s": re.compile(r"rank (\d+): corpus, word vectors and objective built in ([0-9.]+) s"),
    "startup_s": re.compile(r"rank (\d+): start-up \(.*\) took ([0-9.]+) s"),
    "steps_s": re.compile(r"rank (\d+): (\d+) steps in ([0-9.]+) s"),
    "checkpoint_s": re.compile(r"rank (\d+): checkpoint at step \d+ reported in ([0-9.]+) s"),
}
_FINAL = re.compile(r"final model saved and logged in ([0-9.]+) s")
_STARTUP_PHASES = re.compile(r"rank (\d+): start-up phases, wall/CPU s: (.*)")


def stage_train(point: dict, paths: dict, env: dict, args) -> dict:
    run_dir = paths["point"] / "runs"
    model = paths["point"] / "model"
    env = {**env, "MLFLOW_TRACKING_URI": f"sqlite:///{paths['point'] / 'mlflow.db'}"}
    record = run_stage(skipview("train", "--objective", "disc", "--config", PROFILE, "--corpus",
                                str(paths["prepared"]), "--wordvecs", str(paths["wordvecs"]), "--workers", "2",
                                "--cpus-per-worker", "1", "--set", f"max_steps={args.steps}",
                                "--set", f"checkpoint_every={max(args.steps // 2, 1)}", "--set", "precision=bf16",
                                "--set", "senteval_dir=null", "--storage", str(run_dir),
                                "--name", f"scale-{args.label}-{args.copies}-{int(time.time())}", "--output", str(model)),
                       paths["logs"] / "train.txt", env, run_dir)
    # the workers' lines are in the run's own log beside its folder (the driver's output names it), not on stdout
    run_logs = sorted(run_dir.glob("*.log"), key=lambda log: log.stat().st_mtime)[-1:]      # this run's
    text = "".join(log.read_text(errors="replace") for log in [paths["logs"] / "train.txt", *run_logs])
    record["phases"] = train_phases(text)
    record["model_disk"] = disk_usage(model)
    return record


def train_phases(text: str) -> dict:
    """Each rank's start-up, steps and checkpoints, and the final model's time, from the training's log lines."""
    ranks: dict[str, dict] = {}
    for key, pattern in _PHASES.items():
        for match in pattern.finditer(text):
            phases = ranks.setdefault(f"rank{match.group(1)}", {})
            if key == "steps_s":
                phases["steps"], phases[key] = int(match.group(2)), float(match.group(3))
            else:
                phases[key] = phases.get(key, 0.0) + float(match.group(2)) if key == "checkpoint_s" else \
                    float(match.group(2))
    for match in _STARTUP_PHASES.finditer(text):
        ranks.setdefault(f"rank{match.group(1)}", {})["startup_phases"] = {
            phase: dict(zip(("wall_s", "cpu_s"), map(float, figures.split("/"))))
            for phase, figures in (item.split() for item in match.group(2).split(", "))}
    final = _FINAL.search(text)
    return {"per_rank": ranks, "final_model_s": float(final.group(1)) if final else None}


def stage_startup(point: dict, paths: dict, env: dict, args) -> dict:
    record = run_stage([sys.executable, "benchmarks/scale.py", "--probe-startup", str(paths["prepared"]),
                        str(paths["wordvecs"])], paths["logs"] / "startup.txt", env, None)
    record["phases"] = json.loads((paths["logs"] / "startup.txt").read_text().splitlines()[-1])
    return record


def probe_startup(corpus: str, wordvecs: str) -> dict:
    """One training worker's start-up without Ray, timed in wall and CPU seconds (CPU time is what compares on a
    loaded machine): the worker's own ``build`` (corpus opened, vocabulary, word vectors, objective), then its
    batching plan and first batch as rank 0 of 2."""
    from skipview.platform.training.config import load_settings
    from skipview.platform.training.objectives import build

    settings = load_settings(PROFILE, {"corpus": corpus, "wordvecs": wordvecs, "senteval_dir": None}, [])
    clocks = [(time.perf_counter(), time.process_time())]
    built = build(settings)
    clocks.append((time.perf_counter(), time.process_time()))
    next(iter(built.batches(rank=0, world_size=2, epoch=0, start_batch=0)))
    clocks.append((time.perf_counter(), time.process_time()))
    phases = {}
    for name, (start, end) in zip(("built", "plan_and_first_batch"), zip(clocks, clocks[1:])):
        phases[f"{name}_s"], phases[f"{name}_cpu_s"] = round(end[0] - start[0], 3), round(end[1] - start[1], 3)
    phases["total_s"], phases["total_cpu_s"] = (round(clocks[-1][0] - clocks[0][0], 2),
                                                 round(clocks[-1][1] - clocks[0][1], 2))
    return phases


def stage_finalmodel(point: dict, paths: dict, env: dict, args) -> dict:
    record = run_stage([sys.executable, "benchmarks/scale.py", "--probe-final-model", str(paths["prepared"]),
                        str(paths["wordvecs"])], paths["logs"] / "finalmodel.txt", env, None)
    record["phases"] = json.loads((paths["logs"] / "finalmodel.txt").read_text().splitlines()[-1])
    return record


class OwnMemory:
    """This process's peak resident memory by kind, from /proc/self/smaps_rollup sampled in a thread: anonymous
    pages (what the process allocated itself) apart from file pages (the memory-mapped corpus, word vectors and
    model files: page cache, shared with every process that maps the same file)."""

    FIELDS = {"Rss": "rss", "Pss": "pss", "Pss_Anon": "anon", "Pss_File": "file"}

    def __init__(self, interval: float = 0.1):
        self.interval, self.peak = interval, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def now(self) -> dict:
        values = {}
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in self.FIELDS:
                values[self.FIELDS[name]] = int(rest.split()[0]) * 1024
        return values

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        for key, value in self.now().items():
            self.peak[key] = max(self.peak.get(key, 0), value)

    def phase_peak(self) -> dict:
        """The peak since the last call (in MB), then start the next phase's."""
        self.sample()
        peak, self.peak = self.peak, {}
        return {f"peak_{key}_mb": round(value / MB, 1) for key, value in peak.items()}


def probe_final_model(corpus: str, wordvecs: str) -> dict:
    """Rank 0's final-model step without Ray (``save_final_model``: the post-processing fit, the model directory
    written, MLflow's ``log_model`` into a scratch SQLite store), each phase's wall and CPU seconds and peak memory
    by kind (anonymous: what the target of issue 37 is about; file: the mapped table and corpus)."""
    import tempfile

    import mlflow
    import torch

    from skipview.platform.tracking.pyfunc import log_encoder
    from skipview.platform.training.config import load_settings
    from skipview.platform.training.objectives import build

    torch.set_num_threads(1)
    memory = OwnMemory()
    settings = load_settings(PROFILE, {"corpus": corpus, "wordvecs": wordvecs, "senteval_dir": None}, [])
    phases, clock = {}, (time.perf_counter(), time.process_time())

    def phase(name: str) -> None:
        nonlocal clock
        now = (time.perf_counter(), time.process_time())
        phases[name] = {"wall_s": round(now[0] - clock[0], 2), "cpu_s": round(now[1] - clock[1], 2),
                        **memory.phase_peak()}
        clock = now

    with tempfile.TemporaryDirectory() as scratch:
        built = build(settings)
        phase("built")
        encoder = built.finished_encoder(torch.device("cpu"))
        phase("postprocessing_fit")
        model_dir = encoder.save(Path(scratch) / "model")
        phase("model_directory_saved")
        uri = f"sqlite:///{scratch}/mlflow.db"
        client = mlflow.MlflowClient(uri)
        # the artifacts (a copy of the model directory) in the scratch folder too, not MLflow's default ./mlruns
        experiment = client.create_experiment("probe", artifact_location=(Path(scratch) / "artifacts").as_uri())
        run_id = client.create_run(experiment).info.run_id
        log_encoder(model_dir, run_id=run_id, tracking_uri=uri, encoder=encoder)     # as save_final_model
        phase("logged_to_mlflow")
    return phases


def stage_evaluate(point: dict, paths: dict, env: dict, args) -> dict:
    scores = paths["point"] / "eval.json"
    record = run_stage(skipview("evaluate", "--model", str(paths["point"] / "model"), "--tasks", "sts14",
                                "--senteval-dir", SENTEVAL, "--device", "cpu", "--output", str(scores)),
                       paths["logs"] / "evaluate.txt", env, scores)
    record["sts14"] = json.loads(scores.read_text())["metrics"]["sts14.pearson.mean"]    # the project's headline
    return record


STAGE_RUNNERS = {"prepare": stage_prepare, "generate": stage_generate, "vocabulary": stage_vocabulary,
                 "wordvecs": stage_wordvecs, "startup": stage_startup, "train": stage_train,
                 "finalmodel": stage_finalmodel, "evaluate": stage_evaluate}


# ----------------------------------------------------------------------------------------------------- main


def _point_record(args, label: str, copies: int) -> dict:
    document = json.loads(args.json.read_text()) if args.json.exists() else {}
    return document.get("points", {}).get(f"{label}/{copies}", {})


def machine() -> dict:
    model, native_bf16 = cpu()
    return {"cpu": model, "native_bf16": native_bf16, "cpus": len(os.sched_getaffinity(0)),
            "memory_gb": round(psutil.virtual_memory().total / 2**30),
            "python": platform.python_version(), "torch": _version("torch"), "ray": _version("ray"),
            "note": "two long one-thread trainings (and other sessions' work) ran beside every measurement"}


def _version(package: str) -> str:
    from importlib.metadata import version
    return version(package)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--table", action="store_true", help="print the curve of --json as a markdown table")
    parser.add_argument("--probe-startup", nargs=2, metavar=("CORPUS", "WORDVECS"), help=argparse.SUPPRESS)
    parser.add_argument("--probe-final-model", nargs=2, metavar=("CORPUS", "WORDVECS"), help=argparse.SUPPRESS)
    parser.add_argument("--copies", type=int, help="copies of the source corpus (1 = 1.18M sentences)")
    parser.add_argument("--label", default="after", help="the point's name: before (old code) or after")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, of {', '.join(STAGES)}")
    parser.add_argument("--steps", type=int, default=50, help="training steps (a checkpoint half way)")
    parser.add_argument("--corpus", choices=("prepared", "generated"), default="prepared",
                        help="the store the stages after prepare read: prepare's, or the one the generate stage "
                             "writes directly (the same files but meta.json; for sizes whose prepare takes hours)")
    parser.add_argument("--source", default=SOURCE, help="the prepared corpus the pool was made from")
    parser.add_argument("--fasttext-bin", type=Path,
                        help="fastText model every point imports (default: the one timed on the sample)")
    parser.add_argument("--code", type=Path, help="run the skipview commands with this package folder first on "
                                                  "PYTHONPATH (another commit's code, `pip install --target`)")
    parser.add_argument("--work", type=Path, default=REPOSITORY / "data/scale", help="corpora, runs and logs")
    parser.add_argument("--json", type=Path, default=REPOSITORY / "reports/benchmarks/scale.json")
    parser.add_argument("prepare_args", nargs="*", help="extra options for `skipview data prepare` (after --)")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.json.read_text())))
        return
    if args.probe_startup:
        print(json.dumps(probe_startup(*args.probe_startup)))
        return
    if args.probe_final_model:
        print(json.dumps(probe_final_model(*args.probe_final_model)))
        return
    if args.copies is None:
        parser.error("--copies is required (or --table)")
    stages = args.stages.split(",")
    unknown = set(stages) - set(STAGES)
    if unknown:
        parser.error(f"unknown stage(s) {', '.join(sorted(unknown))}; choose from {', '.join(STAGES)}")

    # the data is the point's, whichever code trains on it; runs, models and logs are the label's
    size = args.work / str(args.copies)
    paths = {"point": size / args.label, "logs": size / args.label / "logs", "generated": size / "generated",
             "prepared": size / args.corpus, "wordvecs": size / f"wordvecs-{args.corpus}"}
    env = {**os.environ, "PYTHONPATH": str(args.code)} if args.code else dict(os.environ)
    point = {**_point_record(args, args.label, args.copies), "label": args.label, "copies": args.copies,
             "corpus": args.corpus,
             "code": _portable(str(args.code)) if args.code else "this checkout", "load_average": os.getloadavg(),
             "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    point.setdefault("stages", {})
    for stage in stages:
        print(f"{args.label}/{args.copies}: {stage} ...", file=sys.stderr, flush=True)
        point["stages"][stage] = STAGE_RUNNERS[stage](point, paths, env, args)
        save(args, point)


def table(document: dict) -> str:
    """The curve as a markdown table, one column per point (what reports/benchmarks/scale.md shows)."""
    def stage(point, name, *keys):
        value = point.get("stages", {}).get(name, {})
        for key in keys:
            value = value.get(key, {}) if isinstance(value, dict) else {}
        return value if value != {} else None

    def workers(point, key):
        # "RayTrainWo": Linux cuts long process titles
        found = [p[key] for p in stage(point, "train", "processes") or [] if "RayTrainWo" in p["role"] and key in p]
        return " / ".join(f"{v:.0f}" for v in found) or None

    def ranks(point, key):
        per_rank = stage(point, "train", "phases", "per_rank") or {}
        return " / ".join(f"{r.get(key, float('nan')):.1f}" for _, r in sorted(per_rank.items())) or None

    rows = {
        "sentences (M)": lambda p: p.get("sentences") and p["sentences"] / 1e6,
        "tokens (M)": lambda p: p.get("tokens") and p["tokens"] / 1e6,
        "vocabulary (words)": lambda p: stage(p, "vocabulary", "vocab_size"),
        "prepare wall (s)": lambda p: stage(p, "prepare", "wall_s"),
        "prepare CPU (µs/sentence)": lambda p: stage(p, "prepare", "cpu_us_per_sentence"),
        "prepare peak RSS, driver (MB)": lambda p: stage(p, "prepare", "maxrss_mb"),
        "prepared store (MB)": lambda p: stage(p, "prepare", "disk", "mb") or stage(p, "generate", "disk", "mb"),
        "vocabulary load, peak RSS (MB)": lambda p: stage(p, "vocabulary", "maxrss_mb"),
        "word vectors import wall (s)": lambda p: stage(p, "wordvecs", "wall_s"),
        "word vectors import peak RSS (MB)": lambda p: stage(p, "wordvecs", "maxrss_mb"),
        "word vectors on disk (MB)": lambda p: stage(p, "wordvecs", "disk", "mb"),
        "fastText training, extrapolated (CPU s)": lambda p: stage(p, "wordvecs", "fasttext_train_s",
                                                                   "extrapolated_cpu_s"),
        "start-up probe: built (s wall / CPU)": lambda p: _pair(stage(p, "startup", "phases"), "built"),
        "start-up probe: plan and first batch (s wall / CPU)": lambda p: _pair(stage(p, "startup", "phases"),
                                                                              "plan_and_first_batch"),
        "start-up probe peak RSS (MB)": lambda p: stage(p, "startup", "maxrss_mb"),
        "final-model probe: peak anonymous MB (built / fit / saved / logged)":
            lambda p: _phases(stage(p, "finalmodel", "phases"), "peak_anon_mb"),
        "final-model probe: peak file pages MB (built / fit / saved / logged)":
            lambda p: _phases(stage(p, "finalmodel", "phases"), "peak_file_mb"),
        "final-model probe: CPU s (built / fit / saved / logged)":
            lambda p: _phases(stage(p, "finalmodel", "phases"), "cpu_s", "{:.1f}"),
        "train wall (s)": lambda p: stage(p, "train", "wall_s"),
        "built: corpus, vectors, objective (s, rank 0 / 1)": lambda p: ranks(p, "built_s"),
        "start-up to first batch (s, rank 0 / 1)": lambda p: ranks(p, "startup_s"),
        "start-up phases, rank 0, wall / CPU s (built, DDP, resume, MLflow, first batch)":
            lambda p: _startup_phases(stage(p, "train", "phases", "per_rank", "rank0", "startup_phases")),
        "start-up phases, rank 1, wall / CPU s (built, DDP, resume, MLflow, first batch)":
            lambda p: _startup_phases(stage(p, "train", "phases", "per_rank", "rank1", "startup_phases")),
        "steps (s, rank 0 / 1)": lambda p: ranks(p, "steps_s"),
        "checkpoints, the final one included (s, rank 0 / 1)": lambda p: ranks(p, "checkpoint_s"),
        "final model (s)": lambda p: stage(p, "train", "phases", "final_model_s"),
        "train driver peak RSS (MB)": lambda p: next((x["peak_rss_mb"] for x in stage(p, "train", "processes") or []
                                                     if x["role"] == "driver"), None),
        "train workers peak RSS (MB)": lambda p: workers(p, "peak_rss_mb"),
        "train workers peak PSS (MB)": lambda p: workers(p, "peak_pss_mb"),
        "train workers peak anonymous PSS (MB)": lambda p: workers(p, "peak_anon_mb"),
        "train process tree peak PSS (MB)": lambda p: stage(p, "train", "peak_total_pss_mb"),
        "run folder (checkpoints, MB)": lambda p: stage(p, "train", "disk", "mb"),
        "model directory (MB)": lambda p: stage(p, "train", "model_disk", "mb"),
        "evaluate wall (s)": lambda p: stage(p, "evaluate", "wall_s"),
        "evaluate peak RSS (MB)": lambda p: stage(p, "evaluate", "maxrss_mb"),
        "STS14": lambda p: stage(p, "evaluate", "sts14"),
    }
    points = document.get("points", {})
    lines = ["| | " + " | ".join(points) + " |", "|---" * (len(points) + 1) + "|"]
    for name, value in rows.items():
        cells = [value(p) for p in points.values()]
        lines.append(f"| {name} | " + " | ".join("" if c is None else f"{c:,.2f}".rstrip("0").rstrip(".")
                                                 if isinstance(c, float) else f"{c:,}" if isinstance(c, int)
                                                 else str(c) for c in cells) + " |")
    return "\n".join(lines)


def _phases(phases: dict | None, key: str, form: str = "{:,.0f}") -> str | None:
    return " / ".join(form.format(phase[key]) for phase in phases.values()) if phases else None


def _startup_phases(phases: dict | None) -> str | None:
    return ", ".join(f"{v['wall_s']:.1f}/{v['cpu_s']:.1f}" for v in phases.values()) if phases else None


def _pair(phases: dict | None, name: str) -> str | None:
    return f"{phases[name + '_s']:.2f} / {phases[name + '_cpu_s']:.2f}" if phases else None


def save(args, point: dict) -> None:
    document = json.loads(args.json.read_text()) if args.json.exists() else {}
    document["machine"] = machine()
    document.setdefault("points", {})[f"{point['label']}/{point['copies']}"] = point
    document["points"] = dict(sorted(document["points"].items(), key=lambda kv: (kv[0].split("/")[0],
                                                                                 int(kv[0].split("/")[1]))))
    emit(document, args.json)


if __name__ == "__main__":
    main()
