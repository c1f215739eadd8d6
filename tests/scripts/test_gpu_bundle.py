"""The GPU bundle and runner (scripts/gpu_bundle.py, scripts/gpu_run.sh) at toy size, on this CPU.

The end-to-end test builds a real bundle for this Python (the same pinned packages, resolved and installed by pip as
for the GPU machine's 3.12) from a toy corpus, then runs the runner against it with this venv's interpreter, but
with every module that neither the GPU image nor the bundle provides made unimportable (a ``sitecustomize`` on
PYTHONPATH, so Ray's worker processes have it too): what imports here would import there. What it cannot check
here is the image's own package versions; the runner's preflight names the first import that fails there.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from prepared_data import write_prepared_corpus, write_toy_sts14, write_training_data
from skipview.models.corpus import PreparedCorpus
from skipview.models.vocab import SPECIALS, Vocab

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY / "scripts"))
import gpu_bundle  # noqa: E402

PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


def test_data_round_trip_keeps_every_token_training_reads(tmp_path):
    """Sentences cut at max_len, ids above 65,535 restored, shipped vectors within int8 rounding, the rest zero."""
    words = [f"w{i}" for i in range(70_000)]
    vocab = Vocab(list(SPECIALS) + words, [0] * len(SPECIALS) + list(range(70_000, 0, -1)))
    rng = np.random.default_rng(0)
    documents = [[[words[i] for i in rng.integers(0, len(words), int(rng.integers(1, 45)))] for _ in range(30)]
                 for _ in range(4)]
    corpus = write_prepared_corpus(tmp_path / "prepared", documents, vocab)
    wordvecs = tmp_path / "wordvecs"
    wordvecs.mkdir()
    vectors = rng.normal(size=(len(vocab), 6)).astype(np.float32)
    np.save(wordvecs / "vectors.npy", vectors)
    vocab.save(wordvecs / "vocab.tsv")
    (wordvecs / "meta.json").write_text("{}")

    changes = gpu_bundle.pack_data(corpus.path, None, tmp_path / "packed", max_len=30)
    gpu_bundle.pack_vectors(vectors, np.arange(100), wordvecs, tmp_path / "packed" / "wordvecs")
    gpu_bundle.decode_data(tmp_path / "packed", tmp_path / "data")

    after = PreparedCorpus(tmp_path / "data" / "prepared")
    assert after.num_sentences == corpus.num_sentences
    assert np.array_equal(after.doc_index, corpus.doc_index) and after.vocab.words == corpus.vocab.words
    for i in range(corpus.num_sentences):
        assert np.array_equal(after.sentence(i), corpus.sentence(i)[:30])
    assert changes["ids_above_65535"] > 0 and changes["sentences_truncated"] > 0

    decoded = np.load(tmp_path / "data" / "wordvecs" / "vectors.npy")
    assert np.abs(decoded[:100] - vectors[:100]).max() <= np.abs(vectors[:100]).max() / 254 + 1e-6
    assert not decoded[100:].any()


def test_vectors_fill_the_room_left_and_no_more(tmp_path):
    """Without --rows, the most frequent words' vectors fill the bytes the transfer has left, counted before writing."""
    corpus, wordvecs = write_training_data(tmp_path / "toy", documents=2, sentences_per_doc=5, dim=12)
    per_row, headers = 12 + 4 + 4, 64 * 1024
    room = headers + 30 * per_row + per_row // 2
    packed = gpu_bundle.vectors_archive(corpus, wordvecs, None, tmp_path / "vectors.tar", rows=None, room=room,
                                        scratch=tmp_path / "scratch")
    assert packed["most_frequent_rows"] == 30 == packed["vector_rows_shipped"]
    assert (tmp_path / "vectors.tar").stat().st_size <= room
    with pytest.raises(SystemExit) as stopped:
        gpu_bundle.vectors_archive(corpus, wordvecs, None, tmp_path / "none.tar", rows=None, room=headers - 1,
                                   scratch=tmp_path / "scratch2")
    assert "\n" not in str(stopped.value) and "none.tar" in str(stopped.value)


def test_a_bundle_for_another_python_fails_in_one_line(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"part": "packages", "python": "3.99",
                                                        "site_archive": "site-cp399.tar.xz"}))
    with pytest.raises(SystemExit) as stopped:
        gpu_bundle.unpack(tmp_path, tmp_path / "work")
    message = str(stopped.value)
    assert "\n" not in message and "Python 3.99" in message and f"--python {PYTHON}" in message
    assert not (tmp_path / "work").exists()


def test_a_call_given_the_other_part_fails_in_one_line(tmp_path):
    import gpu_run

    (tmp_path / "manifest.json").write_text(json.dumps({"part": "data"}))
    with pytest.raises(SystemExit) as stopped:
        gpu_run.main(["install", "--bundle", str(tmp_path), "--work", str(tmp_path / "work")])
    assert "\n" not in str(stopped.value) and ".gpu_bundle/packages" in str(stopped.value)
    assert not (tmp_path / "work").exists()


def test_report_puts_the_record_beside_the_markdown_and_fills_its_results_block(tmp_path):
    """``gpu_run.py report``: OUT's gpu_platform.json beside the Markdown, its figures in the results block; a folder
    without the record, a cut record or a Markdown without the block fails in one line and changes nothing."""
    import gpu_run

    summary = {"command": "scripts/gpu_run.sh run", "settings": {"batch_size": "512", "hidden": "1024"},
               "install": {"command": "scripts/gpu_run.sh install",
                           "preflight": {"device": "NVIDIA H200", "torch": "2.13.0", "cuda": "13.0",
                                         "python": "3.12.3", "ray": "2.60.0", "mlflow": "3.17.2"}},
               "phases": {"unpack": {"seconds": 12.0, "status": "ok"},
                          "profile": {"command": "python -m skipview.platform.cli train", "seconds": 95.1,
                                      "status": "ok"}},
               "profile": {"steps": 2306, "wall_s": 95.1, "sentences_per_s_of_steps": 40123.4,
                           "share_outside_steps": 0.68, "phases_s": {"steps": 30.4}},
               "compare": {"steps_per_model": 2000, "epochs_fit": 0.87,
                           "scores": {"disc-fg/f": {"sts14": {"gpu": 61.2, "cpu_h256": 58.3}},
                                      "fasttext-usif/ensemble": {"sts14": {"gpu": 63.0, "cpu_h256": 63.1}}}}}
    out = tmp_path / "back"
    out.mkdir()
    (out / "gpu_platform.json").write_text(json.dumps(gpu_run.platform_record(summary)))
    markdown = tmp_path / "gpu_platform.md"
    page = f"# title\n\n{gpu_run.RESULTS_BEGIN}\nNot yet run.\n{gpu_run.RESULTS_END}\n\nafter\n"
    markdown.write_text(page)

    (tmp_path / "empty").mkdir()
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "gpu_platform.json").write_text('{"device": "NVIDIA H')
    for source, text, wanted in ((tmp_path / "empty", page, "no gpu_platform.json"),
                                 (tmp_path / "cut", page, "gpu_platform.json: line 1: not JSON"),
                                 (out, "# no block\n", "gpu_platform.md: no results block")):
        markdown.write_text(text)
        with pytest.raises(SystemExit) as stopped:
            gpu_run.main(["report", "--from", str(source), "--markdown", str(markdown)])
        assert "\n" not in str(stopped.value) and wanted in str(stopped.value)
        assert markdown.read_text() == text and not markdown.with_suffix(".json").exists()

    markdown.write_text(page)
    assert gpu_run.main(["report", "--from", str(out), "--markdown", str(markdown)]) == 0
    record = json.loads(markdown.with_suffix(".json").read_text())
    assert record["device"] == "NVIDIA H200" and record["cuda"] == "13.0"
    assert record["profile"] == {"config": gpu_run.PROFILE_CONFIG, "batch_size": 512, "steps": 2306, "wall_s": 95.1,
                                 "sentences_per_s_of_steps": 40123.4, "share_outside_steps": 0.68,
                                 "phases_s": {"steps": 30.4}, "mlflow_run": None}
    assert record["phases"]["profile"] == {"seconds": 95.1, "status": "ok"}     # its command is under commands
    text = markdown.read_text()
    assert text.startswith("# title\n") and text.endswith(f"{gpu_run.RESULTS_END}\n\nafter\n")
    assert "Not yet run" not in text and "**NVIDIA H200** (torch 2.13.0, CUDA 13.0" in text
    assert "40123.4 sentences/s of steps" in text and "| `disc-fg/f` | – (–) | – (–) | 61.2 (58.3) | – (–) |" in text
    assert "| `fasttext-usif/ensemble` | – (–) | – (–) | 63.0 (63.1) |" in text


def image_blocker(folder: Path, bundled: set[str]) -> Path:
    """A sitecustomize that hides every top-level module of this venv's distributions that are
    neither on the GPU image nor in the bundle (skipview comes from the checkout, as on the machine)."""
    allowed = gpu_bundle.IMAGE_HAS | bundled | {"skipview"}
    blocked, kept = set(), set()
    for dist in importlib.metadata.distributions():
        names = {Path(str(f)).parts[0].removesuffix(".py") for f in dist.files or ()
                 if not str(f).startswith(("..", "/")) and not Path(str(f)).parts[0].endswith((".dist-info", ".pth"))}
        names = {n for n in names if n.isidentifier() and n != "__pycache__"}
        (kept if gpu_bundle.canonical(dist.metadata["Name"]) in allowed else blocked).update(names)
    folder.mkdir()
    # hidden from the path finder of this venv's site-packages, not refused: MLflow asks importlib.util.find_spec
    # whether SQLAlchemy is there, which must answer None as on the machine
    (folder / "sitecustomize.py").write_text(
        "import sys, sysconfig\n"
        f"BLOCKED = {sorted(blocked - kept)!r}\n"
        "SITE = sysconfig.get_paths()['purelib']\n"
        "class HidingFinder:\n"
        "    def __init__(self, path):\n"
        "        if path != SITE:\n"
        "            raise ImportError('only the venv site-packages')\n"
        "        for hook in sys.path_hooks[1:]:\n"
        "            try:\n"
        "                self.inner = hook(path)\n"
        "                break\n"
        "            except ImportError:\n"
        "                continue\n"
        "    def find_spec(self, name, target=None):\n"
        "        return None if name.partition('.')[0] in BLOCKED else self.inner.find_spec(name, target)\n"
        "    def invalidate_caches(self):\n"
        "        self.inner.invalidate_caches()\n"
        "sys.path_hooks.insert(0, HidingFinder)\n"
        "sys.path_importer_cache.pop(SITE, None)\n")
    return folder


@pytest.mark.slow
def test_toy_bundle_builds_and_the_runner_trains_and_evaluates_offline(tmp_path):
    corpus, wordvecs = write_training_data(tmp_path / "toy", documents=12, sentences_per_doc=60)
    senteval = write_toy_sts14(tmp_path / "senteval")
    bundle = tmp_path / "bundle"
    subprocess.run([sys.executable, str(REPOSITORY / "scripts" / "gpu_bundle.py"), "build", "--corpus", str(corpus),
                    "--wordvecs", str(wordvecs), "--senteval", str(senteval), "--python", PYTHON, "--out", str(bundle),
                    "--rows", "40", "--preset", "0"], check=True, timeout=900)
    packages = json.loads((bundle / "packages" / "manifest.json").read_text())
    data = json.loads((bundle / "data" / "manifest.json").read_text())
    assert packages["python"] == PYTHON and packages["part"] == "packages" and data["part"] == "data"
    assert sorted(packages["bytes"]) == [f"site-cp{PYTHON.replace('.', '')}.tar.xz"]
    assert sorted(data["bytes"]) == ["data.tar.xz", "vectors.tar"]
    assert all(m["call_bytes"] <= gpu_bundle.DEVICE_LIMIT_BYTES for m in (packages, data))   # each transfer fits
    for needed in ("ray", "mlflow-skinny", "sqlalchemy", "alembic", "pydantic", "pydantic-core", "typer"):
        assert needed in packages["packages"]
    assert not set(packages["packages"]) & gpu_bundle.LEAVE_OUT and "torch" not in packages["packages"]
    with tarfile.open(bundle / "packages" / packages["site_archive"], "r:xz") as tar:
        names = tar.getnames()
    assert "ray/_raylet.so" in names and not any(n.startswith(("ray/jars", "ray/rllib", "bin/")) for n in names)
    assert data["data"]["senteval_folders"] == ["STS/STS14-en-test"]
    assert data["data"]["vector_rows_shipped"] == 64 and data["data"]["rows_zeroed"] == 0   # toy: all fit

    out, work = tmp_path / "out", tmp_path / "work"      # OUT: emptied before each command on the GPU machine
    blocker = image_blocker(tmp_path / "blocker", set(packages["packages"]))
    environment = {**os.environ, "PYTHONPATH": str(blocker), "OUT": str(out),
                   "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    runner = [str(REPOSITORY / "scripts" / "gpu_run.sh")]
    common = ["--work", str(work), "--gpus-per-worker", "0", "--plan-scale", "3"]     # guards for a loaded CPU
    toy = "objective_settings.hidden_size=8 log_every=2"

    # the second command on a machine that did not run the first (a fresh one): one line, nothing run
    early = subprocess.run([*runner, "run", "--bundle", str(bundle / "data"), *common], env=environment,
                           capture_output=True, text=True, timeout=120)
    assert early.returncode == 1 and "gpu_run.sh install" in early.stderr and len(early.stderr.splitlines()) == 1
    assert not (work / "run").exists()

    installed = subprocess.run([*runner, "install", "--bundle", str(bundle / "packages"), *common,
                                "--out", str(tmp_path / "out_install")], env=environment,
                               capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    preflight = json.loads((work / "install.json").read_text())["preflight"]
    assert preflight["ray_from"].startswith(str(work / "site")) and preflight["device"] == "cpu"
    assert sorted(p.name for p in (tmp_path / "out_install").iterdir()) == ["install.json"]

    result = subprocess.run(
        [*runner, "run", "--bundle", str(bundle / "data"), *common, "--cpus-per-worker", "1", "--batch-size", "16",
         "--hidden", "12", "--profile-steps", "24", "--epochs", "1", "--profile-set", toy, "--compare-set", toy,
         # one compared model: the second (f alone) is the same code path again, ~100 s on this loaded CPU; SIF for
         # the default uSIF, whose a needs words more frequent than this toy vocabulary of 60 has (uSIF's own tests:
         # tests/platform/evaluation/test_sts.py)
         "--cells", "disc-fg", "--baseline", "fasttext-sif"],
        env=environment, capture_output=True, text=True, timeout=1800)
    assert (out / "summary.json").exists(), result.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    # a failed phase's cause is in the logs of what it ran (a study's, a training's), not in the runner's stderr
    logs = "".join(f"\n--- {log}\n{log.read_text(errors='replace')[-3000:]}"
                   for log in sorted([*out.glob("*.log"), *work.rglob("*.log")]))
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:], summary["phases"], logs)

    # what comes back from the GPU machine: OUT flat, eight files at most
    assert sorted(p.name for p in out.iterdir()) == ["compare.log", "gpu_platform.json", "profile.log",
                                                      "results.tar.gz", "summary.json"]
    assert summary["install"]["preflight"] == preflight
    assert all(phase["status"] == "ok" for phase in summary["phases"].values())
    profile = summary["profile"]
    assert profile["steps"] == 24 and profile["sentences_per_s_of_steps"] > 0
    assert 0 < profile["share_outside_steps"] < 1
    assert summary["compare"]["steps_per_model"] == 12 * 60 // 16          # one epoch fits on this toy corpus
    scores = summary["compare"]["scores"]
    assert set(scores) == {"disc-fg/f", "disc-fg/g", "disc-fg/ensemble", "fasttext-sif/ensemble"}  # the baseline
    assert all(isinstance(scores[row]["sts14"]["gpu"], float) for row in scores)
    assert scores["disc-fg/f"]["sts14"]["cpu_h256"] is not None         # the CPU table beside it
    record = json.loads((out / "gpu_platform.json").read_text())       # what reports/benchmarks/ keeps
    assert record["device"] == "cpu" and record["torch"] == preflight["torch"] and "cuda" in record
    assert record["profile"]["sentences_per_s_of_steps"] == profile["sentences_per_s_of_steps"]
    assert record["compare"]["scores"] == scores and record["commands"]["run"].startswith("scripts/gpu_run.sh run")
    with tarfile.open(out / "results.tar.gz") as tar:
        names = tar.getnames()
    assert "report_compare/ablation.md" in names and "profile_metrics.json" in names
    assert "mlflow.db" in names
    assert not any(n.endswith(gpu_bundle_weights()) for n in names)


def gpu_bundle_weights() -> tuple[str, ...]:
    import gpu_run

    return gpu_run.EXCLUDED_FROM_RESULTS
