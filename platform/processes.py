"""No process of a command outlives it: worker processes die with their parent, whatever signal ends it.

A ``ProcessPoolExecutor``'s workers wait on a queue their parent feeds; when the parent is killed outright
(``kill -9``, the OOM killer) or by a signal Python does not turn into an exception (SIGTERM), nothing tells them, and
they stay, re-parented to PID 1, holding their memory (measured before this module: both workers of a killed
``skipview data prepare`` alive 90 s later). ``die_with_parent`` is a pool's initializer that ties them to their
parent: on Linux the kernel sends them SIGKILL when the parent dies (``PR_SET_PDEATHSIG``); elsewhere a thread of
theirs notices within a second that their parent is gone. ``exit_on_sigterm`` makes SIGTERM end the command as
Ctrl-C does, so its ``finally`` blocks run: a pool is shut down and a half-written output removed.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1            # <linux/prctl.h>
PARENT_POLL_S = 1.0


def die_with_parent(creator_pid: int) -> None:
    """Pool initializer: end this process when its parent is gone. ``creator_pid`` is the process that made the pool:
    the parent itself, or under the ``forkserver`` start method the creator of the fork server, which exits with it."""
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


def exit_on_sigterm() -> None:
    """SIGTERM raises ``SystemExit`` (status 143) in the main thread instead of ending the process on the spot."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
