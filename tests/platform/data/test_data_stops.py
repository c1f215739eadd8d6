"""`skipview data prepare` and `data wordvecs` told to stop (SIGTERM, Ctrl-C's SIGINT) at each moment of their work:
each ends within 10 s with 143 or 130 and its one line, leaves no process and no partial output, and a rerun gives
the output an uninterrupted run gives (prepare: byte-identical; wordvecs: complete vectors). A `kill -9` cannot be
handled, but leaves no process either (the workers die with their parent)."""

from __future__ import annotations

import filecmp
import json
import signal
import subprocess

import numpy as np
import psutil
import pytest
from data_samples import write_generated_books
from stopping_commands import (SIGNALS, SKIPVIEW, assert_stopped, blocked_writing_child, catches_signals, start, stop,
                          wait_for)

GRACE_S = 10


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory):
    """Books that keep `prepare` busy for several seconds on 2 workers."""
    return write_generated_books(tmp_path_factory.mktemp("raw"), books=8, sentences_per_book=60_000)


@pytest.fixture(scope="module")
def reference(big_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "prepared"
    subprocess.run([*SKIPVIEW, "data", "prepare", str(big_corpus), str(out), "--workers", "2", "--no-progress"],
                   check=True, capture_output=True)
    return out


def workers_of(process) -> list[psutil.Process]:
    return psutil.Process(process.pid).children(recursive=True)


def prepare_moment(moment: str, process, out) -> None:
    """Bring a running prepare of ``out`` to ``moment``."""
    if moment == "start-up":                 # the command's imports, before any worker
        wait_for(lambda: catches_signals(process), "it took signals", process, timeout=60)
        return
    wait_for(lambda: len(workers_of(process)) >= 2, "its two workers started", process, timeout=60)
    # batches in flight: the workers' first results are in the staged output (its token file has grown)
    wait_for(lambda: any(tokens.stat().st_size > 0 for tokens in out.parent.glob(f".{out.name}.partial-*/tokens.bin")),
             "the first results written into the staged output", process, timeout=60)
    if moment == "mid-work":
        return
    # "worker-writing": the moment that hung before (a worker blocked writing a result into the pipe its stopping
    # parent no longer read). Made, not waited for: the parent is paused until a worker blocks on the full pipe.
    process.send_signal(signal.SIGSTOP)
    wait_for(lambda: blocked_writing_child(process), "a worker blocked on the result pipe", process, timeout=30)
    # left paused: the stop signal is sent to it paused, and it wakes to it (stop_signals.stop continues it)


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["start-up", "mid-work", "worker-writing"])
@pytest.mark.parametrize("name", ["sigterm", "sigint"])
def test_a_stopped_prepare_leaves_nothing_and_its_rerun_is_byte_identical(big_corpus, reference, tmp_path, name,
                                                                          moment):
    out = tmp_path / "prepared"
    args = ["data", "prepare", str(big_corpus), str(out), "--workers", "2", "--no-progress"]
    process = start(args, tmp_path)
    prepare_moment(moment, process, out)
    result = stop(process, SIGNALS[name], GRACE_S * 3)
    assert_stopped(result, SIGNALS[name], GRACE_S, kept="nothing half-written is left")
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "a partial output is left"
    subprocess.run([*SKIPVIEW, *args], cwd=tmp_path, check=True, capture_output=True)
    comparison = filecmp.dircmp(out, reference)
    assert not (comparison.diff_files or comparison.left_only or comparison.right_only), comparison.report()
    for name in comparison.common_files:
        assert filecmp.cmp(out / name, reference / name, shallow=False), name


@pytest.mark.slow
def test_a_prepare_killed_outright_leaves_no_process_of_it(big_corpus, tmp_path):
    process = start(["data", "prepare", str(big_corpus), str(tmp_path / "out"), "--workers", "2", "--no-progress"],
                    tmp_path)
    wait_for(lambda: len(workers_of(process)) >= 2, "its two workers started", process, timeout=60)
    result = stop(process, signal.SIGKILL, GRACE_S)
    assert result.status == -signal.SIGKILL and not result.left, result.left


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A prepared corpus that fastText takes tens of seconds over at 200 epochs: time to stop it mid-training."""
    root = tmp_path_factory.mktemp("small")
    raw = write_generated_books(root / "raw", books=2, sentences_per_book=20_000)
    subprocess.run([*SKIPVIEW, "data", "prepare", str(raw), str(root / "prepared"), "--no-progress"], check=True,
                   capture_output=True)
    return root / "prepared"


def fasttext_training(process) -> bool:
    """fastText's child process is training (its threads are up)."""
    children = workers_of(process)
    return any(child.num_threads() >= 11 for child in children)


def fasttext_cpu_s(process) -> float:
    """CPU seconds fastText's training child has used: mid-training whatever the machine's load."""
    try:
        return max((sum(child.cpu_times()[:2]) for child in workers_of(process) if child.num_threads() >= 11),
                   default=0.0)
    except psutil.NoSuchProcess:
        return 0.0


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["start-up", "mid-fasttext"])
@pytest.mark.parametrize("name", ["sigterm", "sigint"])
def test_a_stopped_wordvecs_leaves_nothing_and_its_rerun_writes_complete_vectors(prepared, tmp_path, name, moment):
    out = tmp_path / "wordvecs"
    args = ["data", "wordvecs", str(prepared), str(out), "--method", "skipgram", "--dim", "50", "--epochs", "200",
            "--no-progress"]
    process = start(args, tmp_path)
    if moment == "start-up":
        wait_for(lambda: catches_signals(process), "it took signals", process, timeout=60)
    else:
        wait_for(lambda: fasttext_training(process), "fastText was training", process, timeout=120)
        wait_for(lambda: fasttext_cpu_s(process) >= 2.0, "fastText had trained for 2 CPU s", process, timeout=120)
    result = stop(process, SIGNALS[name], GRACE_S * 3)
    assert_stopped(result, SIGNALS[name], GRACE_S, kept="nothing half-written is left")
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "a partial output is left"
    args[args.index("200")] = "2"                           # the rerun: complete, and quick
    subprocess.run([*SKIPVIEW, *args], cwd=tmp_path, check=True, capture_output=True)
    vectors = np.load(out / "vectors.npy")
    assert vectors.shape[1] == 50 and np.isfinite(vectors).all()
    assert json.loads((out / "meta.json").read_text())["coverage"] == 1.0         # every word has its vector
    assert {p.name for p in out.iterdir()} == {"vectors.npy", "vocab.tsv", "meta.json", "fasttext.bin"}
