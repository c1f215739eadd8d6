"""A `skipview data prepare` killed mid-run leaves no process behind: its tokeniser workers die with it, whether it
is killed outright (`kill -9`) or asked to stop (SIGTERM, which also removes its half-written output)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import psutil
import pytest
from data_samples import write_generated_books


def start_prepare(tmp_path) -> tuple[subprocess.Popen, list[psutil.Process]]:
    """A prepare of a corpus that keeps it busy for several seconds, once its workers have started."""
    corpus = write_generated_books(tmp_path / "raw", books=8, sentences_per_book=60_000)
    command = [sys.executable, "-m", "skipview.platform.cli", "data", "prepare", str(corpus), str(tmp_path / "out"),
               "--workers", "2", "--no-progress"]
    parent = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while len(workers := psutil.Process(parent.pid).children(recursive=True)) < 2:
        assert parent.poll() is None, parent.stderr.read()
        assert time.time() < deadline, "no worker started within 60 s"
        time.sleep(0.1)
    time.sleep(1.0)                                         # mid-run: batches in flight
    assert parent.poll() is None, "prepare ended before the kill: the test corpus is too small"
    return parent, psutil.Process(parent.pid).children(recursive=True)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_a_killed_prepare_leaves_no_process_of_it(tmp_path, signum):
    parent, workers = start_prepare(tmp_path)
    try:
        parent.send_signal(signum)
        status = parent.wait(timeout=30)
        _, alive = psutil.wait_procs(workers, timeout=5)
        assert not alive, f"alive 5 s after the parent was killed: {[p.pid for p in alive]}"
        if signum == signal.SIGTERM:                        # a stop it can act on: it cleans up as for Ctrl-C
            assert status == 128 + signal.SIGTERM
            assert sorted(p.name for p in tmp_path.iterdir()) == ["raw"], "the half-written output is left"
    finally:
        for process in workers:
            if process.is_running():
                process.kill()
