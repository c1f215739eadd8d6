"""What a command that trains shows on its console: its own lines and its runs' progress; Ray's and the workers'
logs go to a file, named at the start and in the error line when the command fails.

Ray forwards every line its workers and actors print to the driver's console: the controller's retries and
tracebacks, each worker's warnings and log lines (a run that diverged at its second step printed 81 lines, 74 of
them Ray's, three tracebacks among them, some after skipview's own error line). Inside ``capture(path)``:

- the workers' forwarded lines go to ``path`` (each prefixed with its process, as Ray prints them), except their
  progress reports, which become a bar or a line on the console (``progress.py``);
- the driver's own messages from Ray and MLflow (the local Ray's start, a new tracking store's creation) and Python
  warnings go to ``path`` too;
- an error that ends the command carries a note naming ``path`` (``errors.one_line`` adds it to the error line), and
  whatever ends it (an error, a stop) is written to ``path`` with its traceback.

With ``--debug`` the console keeps everything as well. The driver receives the workers' lines from Ray's
log-forwarding thread through ``ray._private.ray_logging.global_worker_stdstream_dispatcher``, where ``ray.init``
registers its printer under the name ``ray_print_logs`` (Ray 2.60; ``ray.util.client``'s log servicer uses the
same dispatcher); ``tests/platform/training/test_run_log.py`` counts the console lines of a failed run, so a Ray
that changes this is noticed.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from skipview.platform.training import progress

RAY_PRINTER = "ray_print_logs"
OUR_PRINTER = "skipview_run_log"
# the loggers of the driver process whose messages are Ray's and MLflow's business, not the user's
LIBRARY_LOGGERS = ("ray", "mlflow", "alembic", "py.warnings")


class LogFile:
    """The log file, appended to (a resumed run's attempts follow each other). A write that fails (the run's storage
    is full: the very fault being reported) ends the writing instead of raising in Ray's log thread or in a logging
    call, and ``cut`` says why."""

    def __init__(self, path: Path):
        self.file: TextIO | None = None
        self.cut: str | None = None
        self._attempt(lambda: setattr(self, "file", open(path, "a", buffering=1, encoding="utf-8")))

    def _attempt(self, action) -> None:
        if self.cut is None:
            try:
                action()
            except OSError as error:
                self.cut = error.strerror or str(error)

    def write(self, text: str) -> None:
        self._attempt(lambda: self.file.write(text))

    def flush(self) -> None:
        self._attempt(lambda: self.file.flush())

    def close(self) -> None:
        if self.file is not None:
            self._attempt(lambda: self.file.close())


class RunLog:
    def __init__(self, path: Path, file: LogFile, debug: bool):
        self.path, self.file, self.debug = path, file, debug
        self.display = progress.Display()

    def where(self) -> str:
        """The log's path, and why it stops early if it does."""
        return f"{self.path}" + (f" (cut short: {self.file.cut.lower()})" if self.file.cut else "")

    def take_worker_output(self) -> None:
        """After ``ray.init``: the workers' lines come here instead of to Ray's printer (beside it with --debug)."""
        from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher

        if not self.debug:
            dispatcher.remove_handler(RAY_PRINTER)
        dispatcher.remove_handler(OUR_PRINTER)
        dispatcher.add_handler(OUR_PRINTER, self.worker_lines)

    def worker_lines(self, batch: dict) -> None:
        """One batch of a Ray process's output lines (Ray's log thread): progress reports to the display, the rest
        to the file."""
        from ray._private.worker import filter_autoscaler_events

        who = batch.get("actor_name") or batch.get("task_name")
        prefix = f"({who + ' ' if who else ''}pid={batch.get('pid')}, ip={batch.get('ip')}) "
        lines = batch.get("lines", [])
        if batch.get("pid") == "autoscaler":            # its events, not its every poll (as Ray's printer does)
            lines = filter_autoscaler_events(lines)
        for text in lines:
            report = progress.parse(text)
            if report is not None:
                self.display.show(report)
            else:
                self.file.write(prefix + text + "\n")


@contextmanager
def capture(path: Path, *, debug: bool = False) -> Iterator[RunLog]:
    """Ray's and the workers' logs, and the driver's library messages, in ``path`` for the block."""
    import ray  # noqa: F401  # Ray configures its logger when imported: before the handlers are swapped below
    import mlflow  # noqa: F401  # likewise

    from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher

    path.parent.mkdir(parents=True, exist_ok=True)
    file = LogFile(path)
    to_file = logging.StreamHandler(file)
    to_file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    saved = {}
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        saved[name] = (logger.handlers[:], logger.propagate)
        logger.handlers = [to_file, *(logger.handlers if debug else [])]
        logger.propagate = logger.propagate and debug
    logging.captureWarnings(True)
    log = RunLog(path, file, debug)
    try:
        yield log
    except BaseException as error:
        # whatever ends the command, its cause is in the log the console names (an error raised before Ray wrote
        # anything left that log empty and the cause only in a console line a caller had cut)
        file.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} the command ended: "
                   + "".join(traceback.format_exception(error)))
        if isinstance(error, Exception):
            error.add_note(f"Ray's and the workers' log: {log.where()}")
        raise
    finally:
        log.display.close()
        dispatcher.remove_handler(OUR_PRINTER)
        logging.captureWarnings(False)
        for name, (handlers, propagate) in saved.items():
            logger = logging.getLogger(name)
            logger.handlers, logger.propagate = handlers, propagate
        file.close()
