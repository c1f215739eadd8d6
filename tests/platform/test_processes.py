"""A worker pool ended as soon as it starts: the race that hung the test suite in `data prepare` (an empty corpus
makes and ends its pool at once)."""

from __future__ import annotations

import subprocess
import sys

ENDED_AT_ONCE = """
import signal, sys
from skipview.platform.processes import worker_pool
# the parent's own SIGTERM handler, which a forked worker starts with: one that takes the signal and carries on, as
# a library's may (the test suite's process had one)
signal.signal(signal.SIGTERM, lambda signum, frame: None)
for _ in range(int(sys.argv[1])):
    pool = worker_pool(2)
    pool.close()
    pool.terminate()        # SIGTERM to workers that may not have reached their initializer yet
    pool.join()
print("ended")
"""


def test_a_pool_terminated_as_its_workers_start_ends_every_time():
    """Before ``worker_pool`` held the stop signals across the fork, a loop of 50 such pools stuck until a signal
    from outside (``timeout 60``'s, to the process group) killed the stuck worker (it had run the parent's handler,
    which swallowed terminate()'s SIGTERM, then waited on the locked task queue); held, 50 end in about a second."""
    done = subprocess.run([sys.executable, "-c", ENDED_AT_ONCE, "50"], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "ended"), done.stderr[-2000:]


STUCK_TERMINATE = """
import multiprocessing
from skipview.platform.processes import end_pool, worker_pool
pool = worker_pool(2)
pool.apply_async(sum, ([1, 2],)).get()
# the state a SIGTERM'd `data prepare` hung in (py-spy: terminate() in SimpleQueue.put, waiting on the result queue's
# write lock): a worker blocked writing a result larger than the pipe, after the result handler had exited, holds it
pool._outqueue._wlock.acquire()
end_pool(pool)
print("ended" if not multiprocessing.active_children() else f"alive: {multiprocessing.active_children()}")
"""


def test_a_pool_whose_terminate_is_stuck_on_a_held_result_lock_is_ended_and_its_process_exits():
    """``Pool.terminate()`` waits forever for the result queue's write lock while a worker holds it blocked on a full
    pipe; ``end_pool`` kills the workers instead once it has waited ``END_WAIT_S``, and the process then exits (the
    stuck thread is a daemon; the pool's exit handler does not run terminate() a second time)."""
    done = subprocess.run([sys.executable, "-c", STUCK_TERMINATE], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "ended"), done.stdout + done.stderr[-2000:]
