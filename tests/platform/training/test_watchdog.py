"""The watchdog of a local Ray ends, once its driver is gone, the processes the driver's last listing missed: one
that carries the driver's mark but was started after the listing and re-parented away from the driver (as a Ray
worker started in a stopping command's last seconds is), while a process carrying another driver's mark, and one
carrying none, run on."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import psutil

from skipview.platform.training import watchdog

# A driver that starts its watchdog, then, later than any listing of its children, a marked process re-parented to
# PID 1 (a double fork) that ignores SIGTERM; it prints that process's PID and waits to be killed.
DRIVER = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    from skipview.platform.training import watchdog

    mark = watchdog.marked(os.getpid())
    watchdog.start(os.getpid(), mark)
    time.sleep(1)
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    late = subprocess.run(
        [sys.executable, "-c", "import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', sys.argv[1]], "
         "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)", stubborn],
        env={**os.environ, **mark}, capture_output=True, text=True, start_new_session=True)
    print(late.stdout.strip(), flush=True)
    time.sleep(600)
""")


def sleeper(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env=env)


def test_a_killed_drivers_marked_processes_end_and_no_other():
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, text=True)
    others = [sleeper({**os.environ, watchdog.MARK: "1@0.0"}), sleeper(dict(os.environ))]
    late: psutil.Process | None = None
    try:
        late = psutil.Process(int(driver.stdout.readline()))
        assert late.ppid() != driver.pid                     # re-parented: no listing of the driver's tree finds it
        driver.kill()
        driver.wait()
        # the watchdog acts as soon as its driver is gone (a wait, not a poll): 30 s bounds it on a loaded machine
        gone, _ = psutil.wait_procs([late], timeout=30)
        assert gone, "the marked process, which ignores SIGTERM, is alive 30 s after its driver was killed"
        assert all(other.poll() is None for other in others), "a process without this driver's mark was ended"
    finally:                    # nothing of the test outlives it, whatever failed (the driver waits 600 s)
        for process in [driver, *others]:
            process.kill()
        if late is not None and watchdog.alive(late):
            late.kill()
