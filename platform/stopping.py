"""How a command stops when it is told to: SIGTERM (Kubernetes ending a pod, Slurm's time limit, a spot instance's
notice, ``ray job stop``, ``kill``) or SIGINT (Ctrl-C).

Every command runs inside ``handling_signals()``. The first SIGTERM or SIGINT then raises ``Stopped`` in the main
thread, as Ctrl-C raises ``KeyboardInterrupt``: ``finally`` blocks remove half-written output and end worker pools,
and ``skipview`` (``platform/cli.py``) exits 128 + the signal's number (143, 130) with one line that says what was
kept and the command that resumes. Work that should finish a unit before it stops (a training step and its
checkpoint) runs inside ``deferred(on_request)``: there the first signal only calls ``on_request`` (in a thread of
its own, never inside the handler) and the work checks ``requested()`` when it ends. A second signal always raises
at once, for a user who will not wait; a third ends the process on the spot.

Python runs a signal handler in the main thread between bytecodes, so a command whose main thread sits in a long
C++ call (fastText's training) would not stop: such work runs in a child process the main thread waits on
(``platform/data/wordvecs.py``). Ray's ``ray.init`` installs a C++ handler for SIGTERM that aborts the process 3 s
after the signal (abseil's failure-signal handler; the console's last lines were ``*** SIGTERM received ...``);
``reinstall()`` after ``ray.init`` puts this module's handlers back.
"""

from __future__ import annotations

import os
import shlex
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

SIGNALS = (signal.SIGTERM, signal.SIGINT)
T = TypeVar("T")


class Stopped(BaseException):
    """The command was told to stop. A ``BaseException``, as ``KeyboardInterrupt`` is, so that no ``except
    Exception`` on the way turns a stop into an error. ``kept`` says what the stop leaves (None: nothing, the output
    is written only when complete); ``resume_options`` are what the same command line needs to continue it (the
    name it gave a new run)."""

    def __init__(self, signum: int, kept: str | None = None, resume_options: tuple[str, ...] = ()):
        super().__init__(signal.Signals(signum).name)
        self.signum, self.kept, self.resume_options = signum, kept, resume_options

    @property
    def exit_status(self) -> int:
        return 128 + self.signum

    def line(self, command: list[str]) -> str:
        """The one line a stopped command ends with; ``command`` is its command line."""
        kept = self.kept or "nothing half-written is left (outputs are written whole)"
        return (f"stopped by {signal.Signals(self.signum).name}: {kept}; to resume, run "
                f"{shlex.join([*command, *self.resume_options])}")


class _State:
    installed = False
    received: list[int] = []                        # every signal taken so far, in order
    on_request: Callable[[int], None] | None = None


def stop_at_once(command: list[str]) -> None:
    """For a command's first moments, its imports, when nothing has started that needs cleaning up: a signal ends
    the process there and then, with the usual line (a ``Stopped`` raised inside an import would end in a traceback).
    ``handling_signals`` takes over once the command runs."""
    def handler(signum: int, frame) -> None:
        os.write(2, (Stopped(signum).line(command) + "\n").encode())
        os._exit(128 + signum)

    for signum in SIGNALS:
        signal.signal(signum, handler)


@contextmanager
def handling_signals() -> Iterator[None]:
    """Inside the block SIGTERM and SIGINT stop this process as described above; the handlers before it come back
    after it (a test that runs a command in its own process keeps its own Ctrl-C)."""
    if threading.current_thread() is not threading.main_thread():     # Python takes signals in the main thread only
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    _State.installed, _State.received = True, []
    reinstall()
    try:
        yield
    finally:
        _State.installed = False
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def reinstall() -> None:
    """This module's handlers again, over whatever a library installed since (Ray's C++ SIGTERM handler)."""
    if _State.installed and threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, _handler)


def _handler(signum: int, frame) -> None:
    _State.received.append(signum)
    if len(_State.received) >= 3:
        os._exit(128 + signum)
    if len(_State.received) == 1 and _State.on_request is not None:
        threading.Thread(target=_State.on_request, args=(signum,), name="stop-request", daemon=True).start()
        return
    raise Stopped(_State.received[0])


def requested() -> int | None:
    """The first signal received inside ``handling_signals``, or None."""
    return _State.received[0] if _State.received else None


@contextmanager
def deferred(on_request: Callable[[int], None]) -> Iterator[None]:
    """Inside the block the first signal calls ``on_request(signum)`` instead of raising."""
    _State.on_request = on_request
    try:
        yield
    finally:
        _State.on_request = None


def in_thread(function: Callable[[], T]) -> T:
    """``function()`` run in a daemon thread while the main thread waits for it; its result returned, its exception
    raised here. The main thread, free, takes the signals at once; and a library that installs its own SIGINT
    handler when called from the main thread (Ray Train's ``fit`` aborts the run on Ctrl-C, without the checkpoint
    a stop writes) leaves this module's in place. A daemon, so a second signal's ``Stopped`` ends the process
    without waiting for it."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = function()
        except BaseException as error:          # handed to the main thread, which raises it
            outcome["error"] = error

    worker = threading.Thread(target=run, name=getattr(function, "__name__", "work"), daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.5)            # a bounded wait: the handler runs between the waits, whatever the platform
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
