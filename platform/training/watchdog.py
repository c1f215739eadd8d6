"""A local Ray shares its driver's fate: ``python -m skipview.platform.training.watchdog PID`` watches the driver
``PID`` and, once it is gone without shutting its Ray down (``kill -9``, the OOM killer), ends every process the
driver had started.

Ray 2.60's own fate-sharing leaves two processes behind: when the driver dies, the GCS and the raylet follow, and
the dashboard agent and the runtime-env agent, finding their raylet gone, first try to report its error logs to the
GCS that is gone too and wait on it (measured: both still alive 40 s after ``kill -9`` of a ``skipview train``;
``ray._private.process_watcher.report_raylet_error_logs``). They hold the machine's ports and memory meanwhile.
"""

from __future__ import annotations

import subprocess
import sys

import psutil

# Listing the driver's process tree costs about 0.38 CPU s a minute at one listing a second
# (reports/benchmarks/ray_overhead.json); Ray's agents and actors start with the run, and a worker started in the last
# seconds before the driver dies goes with its raylet anyway
POLL_S = 5.0
# Once the driver is gone nothing of the run is left to save (its workers wrote their checkpoints before reporting
# them): a second is enough for a process to leave on SIGTERM, and a stopped command must leave nothing 3 s after it
GRACE_S = 1.0


def start(driver_pid: int) -> subprocess.Popen:
    """The watchdog of ``driver_pid``, as a process of its own (a thread would die with the driver)."""
    return subprocess.Popen([sys.executable, "-m", __name__, str(driver_pid)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def watch(driver_pid: int) -> None:
    """Remember the driver's descendants while it lives; end those still running once it is gone. ``psutil``
    compares each process's start time, so a recycled PID is never mistaken for one of them."""
    driver, me = psutil.Process(driver_pid), psutil.Process()
    family: list[psutil.Process] = []
    while alive(driver):
        try:
            family = [p for p in driver.children(recursive=True) if p.pid != me.pid]
            driver.wait(timeout=POLL_S)     # returns as soon as the driver is gone: a stopped command's watchdog
        except (psutil.NoSuchProcess, psutil.TimeoutExpired):       # leaves with it
            continue
    left = [p for p in family if alive(p)]
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
    watch(int(sys.argv[1]))
