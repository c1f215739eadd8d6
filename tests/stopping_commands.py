"""Stopping a command as a cluster or a user does (SIGTERM; SIGINT as Ctrl-C sends it, to the whole process group)
and checking how it ended: the exit status, the time it took, its last line, and that no process of it is left.

The command runs in a session of its own, so "every process of the command" is every process of that session:
its pool workers, its fastText child, its local Ray (the GCS, the raylet, Ray's agents and workers) and its watchdog.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import psutil

SKIPVIEW = [sys.executable, "-m", "skipview.platform.cli"]
SIGNALS = {"sigterm": signal.SIGTERM, "sigint": signal.SIGINT}


@dataclass
class Stop:
    status: int
    seconds: float                  # from the signal to the exit
    output: str
    left: list[str]                 # processes of the command's session still alive 3 s after it exited

    @property
    def last_line(self) -> str:
        lines = [line for line in self.output.splitlines() if line.strip()]
        return lines[-1] if lines else ""


def start(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.Popen:
    """The command in a session of its own, its output (stdout and stderr) read as it prints it, so a test can wait
    on a line (``printed``) and a command that prints much never blocks on a full pipe."""
    process = subprocess.Popen([*SKIPVIEW, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    process.lines = []
    process.reader = threading.Thread(target=lambda: process.lines.extend(process.stdout), daemon=True)
    process.reader.start()
    return process


def printed(process: subprocess.Popen) -> str:
    """What the command has printed so far (all of it once it has exited and its output is read to the end)."""
    return "".join(process.lines)


def trained_a_step(process: subprocess.Popen) -> bool:
    """The command's console shows a run's progress past step 0 (a run's first report, ``run NAME: step N/M``,
    skipview.platform.training.progress): a stop sent now lands mid-training however loaded the machine is."""
    return re.search(r": step [1-9]", printed(process)) is not None


def ended(process: subprocess.Popen, timeout: float | None = None) -> int:
    """Its exit status once it has exited and all it printed has been read (``subprocess.TimeoutExpired`` when it
    has not exited within ``timeout``)."""
    status = process.wait(timeout=timeout)
    process.reader.join()
    return status


def session_processes(sid: int) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == sid and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (ProcessLookupError, psutil.NoSuchProcess, PermissionError):
            pass
    return found


def stop(process: subprocess.Popen, signum: int, timeout: float) -> Stop:
    """Send ``signum`` as a cluster does (SIGTERM to the command) or as Ctrl-C does (SIGINT to its process group),
    then SIGCONT (to wake a command the test paused);
    wait for the exit up to ``timeout`` (then kill everything and report it as status None); list what is left of it
    3 s later (sooner once nothing is)."""
    sent = time.monotonic()
    if signum == signal.SIGINT:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    process.send_signal(signal.SIGCONT)             # a command the test paused wakes to the signal
    try:
        status = ended(process, timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        ended(process)
        status = None
    output = printed(process)
    seconds = time.monotonic() - sent
    left = []
    deadline = time.monotonic() + 3
    while (alive := session_processes(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)                             # what is still going may be on its way out: up to 3 s
    for p in alive:
        with suppress(psutil.NoSuchProcess):
            left.append(f"{p.pid} {' '.join(p.cmdline())[:120]}")
            p.kill()
    return Stop(status, seconds, output, left)


def catches_signals(process: subprocess.Popen) -> bool:
    """The command has installed its handlers (the kernel's caught-signals mask holds SIGTERM): the first moment of
    its start-up it can act on a signal. Before it, in the interpreter's own start, SIGTERM ends it by default with
    nothing started and nothing to lose."""
    try:
        status = Path(f"/proc/{process.pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def blocked_writing_child(process: subprocess.Popen) -> bool:
    """A child of the command is blocked writing into a pipe (the kernel's wait channel): a pool worker whose result
    its paused or stopping parent does not read."""
    for child in psutil.Process(process.pid).children(recursive=True):
        try:
            if "pipe_write" in Path(f"/proc/{child.pid}/wchan").read_text():
                return True
        except OSError:
            pass
    return False


def wait_for(condition, what: str, process: subprocess.Popen, timeout: float = 300) -> None:
    """Wait until ``condition()`` holds while ``process`` runs; if it does not, end the command (a paused one too)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            ended(process)
            raise AssertionError(f"the command ended before {what}: {printed(process)[-3000:]}")
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            ended(process)
            raise AssertionError(f"not {what} within {timeout} s: {printed(process)[-3000:]}")
        time.sleep(0.1)


def assert_stopped(result: Stop, signum: int, grace: float, kept: str | None = None) -> None:
    """It exited 128 + signal within ``grace`` seconds, its last line says so (and what it kept), nothing is left."""
    assert result.status == 128 + signum, f"status {result.status}: {result.output[-3000:]}"
    assert result.seconds <= grace, f"took {result.seconds:.1f} s > {grace} s: {result.output[-2000:]}"
    assert result.last_line.startswith(f"stopped by {signal.Signals(signum).name}: "), result.output[-3000:]
    assert "to resume, run skipview " in result.last_line
    if kept is not None:
        assert kept in result.last_line, result.last_line
    assert not result.left, f"alive 3 s after the exit: {result.left}"
