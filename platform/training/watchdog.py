"""A local Ray shares its driver's fate: ``python -m skipview.platform.training.watchdog PID MARK`` watches the
driver ``PID`` and, once it is gone, ends every process of its local Ray still running: what a driver killed
outright (``kill -9``, the OOM killer) leaves, and what a stopped driver's shutdown has not ended yet.

Ray 2.60's own fate-sharing leaves two processes behind: when the driver dies, the GCS and the raylet follow, and
the dashboard agent and the runtime-env agent, finding their raylet gone, first try to report its error logs to the
GCS that is gone too and wait on it (measured: both still alive 40 s after ``kill -9`` of a ``skipview train``;
``ray._private.process_watcher.report_raylet_error_logs``). They hold the machine's ports and memory meanwhile.

Two lists find them. The driver's descendants, listed while it lives: Ray's agents among them, which start with a
cleaned environment. And every process whose environment carries the driver's mark (``marked``), listed once the
driver is gone: the driver sets it while ``ray.init`` starts the GCS and the raylet, and each worker the raylet starts
inherits it, so it also finds a worker started since the last listing or already re-parented to PID 1 (a search's
next trial's ``ray::TrainController``, started in a stopped ``skipview tune``'s last seconds, was otherwise alive 3 s
after the command exited: tests/platform/tuning/test_tune_stops.py).
"""

from __future__ import annotations

import os
import subprocess
import sys

import psutil

MARK = "SKIPVIEW_LOCAL_RAY_OF"
# Listing the driver's process tree costs about 0.38 CPU s a minute at one listing a second
# (reports/benchmarks/ray_overhead.json); Ray's agents start with the run, and a worker started since the last listing
# carries the mark
POLL_S = 5.0
# Once the driver is gone nothing of the run is left to save (its workers wrote their checkpoints before reporting
# them): a second is enough for a process to leave on SIGTERM, and a stopped command must leave nothing 3 s after it
GRACE_S = 1.0


def marked(driver_pid: int) -> dict[str, str]:
    """The environment that marks a process as one of ``driver_pid``'s local Ray: the driver's PID and start time, so
    that a later process given the same PID is never taken for it."""
    return {MARK: f"{driver_pid}@{psutil.Process(driver_pid).create_time()}"}


def start(driver_pid: int, mark: dict[str, str]) -> subprocess.Popen:
    """The watchdog of ``driver_pid``, whose local Ray carries ``mark``, as a process of its own (a thread would die
    with the driver)."""
    return subprocess.Popen([sys.executable, "-m", __name__, str(driver_pid), mark[MARK]], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def carrying(mark_value: str) -> list[psutil.Process]:
    """Every process whose environment carries the mark (this user's: another user's environment is unreadable)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.pid != os.getpid() and process.environ().get(MARK) == mark_value:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def watch(driver_pid: int, mark_value: str) -> None:
    """Remember the driver's descendants while it lives; once it is gone, end those and the processes carrying its
    mark that still run. ``psutil`` compares each process's start time, so a recycled PID is never mistaken for one
    of them."""
    driver, me = psutil.Process(driver_pid), psutil.Process()
    family: list[psutil.Process] = []
    while alive(driver):
        try:
            family = [p for p in driver.children(recursive=True) if p.pid != me.pid]
            driver.wait(timeout=POLL_S)     # returns as soon as the driver is gone: a stopped command's watchdog
        except (psutil.NoSuchProcess, psutil.TimeoutExpired):       # leaves with it
            continue
    end([*family, *carrying(mark_value)])


def local_ray(mark_value: str) -> list[psutil.Process]:
    """The processes carrying the mark and their descendants (Ray's agents, which start with a cleaned environment),
    as of now: a local Ray that failed to start. Not the driver's other children (a test's servers, say)."""
    found = carrying(mark_value)
    for process in list(found):
        try:
            found += process.children(recursive=True)
        except psutil.NoSuchProcess:
            continue
    return found


def end(processes: list[psutil.Process]) -> None:
    """SIGTERM to those still running, SIGKILL to those still running ``GRACE_S`` later."""
    left = [p for p in set(processes) if alive(p)]
    for process in left:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            pass
    _, stubborn = psutil.wait_procs(left, timeout=GRACE_S)
    for process in stubborn:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass


if __name__ == "__main__":
    watch(int(sys.argv[1]), sys.argv[2])
