"""No process of a command outlives it: worker processes die with their parent, whatever signal ends it.

A pool's workers wait on a queue their parent feeds; when the parent is killed outright (``kill -9``, the OOM killer)
nothing tells them, and they stay, re-parented to PID 1, holding their memory (measured before this module: both
workers of a killed ``skipview data prepare`` alive 90 s later). ``die_with_parent`` is a pool's initializer that
ties them to their parent: on Linux the kernel sends them SIGKILL when the parent dies (``PR_SET_PDEATHSIG``);
elsewhere a thread of theirs notices within a second that their parent is gone. It also leaves stopping to the
parent (``platform/stopping.py``): a worker ignores Ctrl-C's SIGINT, which the terminal sends to every process of
the command, and dies at once of a SIGTERM, which is how the parent ends its pool, even while it is blocked writing
a result into a pipe the parent no longer reads.

``end_pool`` ends one, on a stop as on success, and never hangs doing it. ``Pool.terminate()`` alone can: its
result-handler thread may exit before a worker has written its last result, and a result larger than the pipe's buffer
then blocks that worker while it holds the result queue's write lock, which ``terminate()`` waits for to send its
sentinel (CPython 3.11's ``multiprocessing.pool``; a SIGTERM'd ``data prepare`` hung so in the idle test suite, and a
loop of pools returning 2 MB results hung 4 terminates in 30 on the loaded machine).

``worker_pool`` makes such a pool with SIGTERM and SIGINT held while it forks: a worker starts with a copy of its
parent's signal handlers, and a ``terminate()`` that came before ``die_with_parent`` had reset them ran the parent's
handler in the worker, which swallowed it (seen in the test suite: the worker then waited forever on the task queue
``terminate()`` had locked, and its parent forever on the worker). Held, the signal waits until the worker's own
handling is in place.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.pool
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

PR_SET_PDEATHSIG = 1            # <linux/prctl.h>
STOPS = {signal.SIGINT, signal.SIGTERM}
PARENT_POLL_S = 1.0
END_WAIT_S = 3.0                # terminate() takes milliseconds; past this it is stuck (end_pool)
T = TypeVar("T")


def die_with_parent(creator_pid: int) -> None:
    """Pool initializer: end this process when its parent is gone. ``creator_pid`` is the process that made the pool:
    the parent itself, or under the ``forkserver`` start method the creator of the fork server, which exits with it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)          # a forked worker inherits the parent's Python handler
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)      # held by worker_pool: a SIGTERM sent meanwhile ends it now
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    else:
        threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True, name="die-with-parent").start()
    if os.getppid() != parent or not running(creator_pid):        # gone before the lines above took effect
        os._exit(1)


def _exit_when_orphaned(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:         # another user's process: running
        return True
    return True



def worker_pool(workers: int, start_method: str | None = None) -> multiprocessing.pool.Pool:
    """A ``multiprocessing`` pool whose workers die with this process and leave stopping to it (``die_with_parent``),
    forked with SIGTERM and SIGINT held in this thread (see above); this process takes them again once it has."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        return multiprocessing.get_context(start_method).Pool(workers, initializer=die_with_parent,
                                                              initargs=(os.getpid(),))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def end_pool(pool: multiprocessing.pool.Pool) -> None:
    """``pool.terminate()`` and ``join()``, in a thread of their own; if they have not returned within ``END_WAIT_S``,
    they are stuck (see above), and this process's worker processes are killed instead: after ``close()`` they have
    nothing left to do, and on a stop nothing of theirs is kept. The stuck thread is a daemon and ends with the
    process (the pool's exit handler ran with ``terminate()`` and does not run again)."""
    ender = threading.Thread(target=lambda: (pool.terminate(), pool.join()), daemon=True, name="end-pool")
    ender.start()
    ender.join(END_WAIT_S)
    if ender.is_alive():
        for worker in multiprocessing.active_children():
            worker.kill()
            worker.join()


def in_child_process(function: Callable[..., T], *args) -> T:
    """``function(*args)`` run in a child process; its result returned here, or its exception raised here. The main
    thread only waits, so a signal reaches this process's handler at once (``platform/stopping.py``) even while the
    child sits in a long C++ call that Python cannot interrupt (fastText's training); however the wait ends, the
    child is ended with it (``end_pool``)."""
    # spawn: a fresh interpreter, not a copy of this process's threads and locks
    pool = worker_pool(1, "spawn")
    try:
        return pool.apply_async(function, args).get()
    finally:
        end_pool(pool)
