"""A run's progress on its driver's console: step, loss, rate and time left.

Both ends of one small protocol. A run's rank-0 worker prints a report line (``PROGRESS_MARK`` + JSON: run name,
step, total steps, loss) at most every ``REPORT_EVERY_S`` seconds, when the loop reads its loss anyway (``window``):
Ray forwards the line with the worker's other output to the driver, whose ``run_log`` hands it to ``Display``
instead of the log file. The driver shows a bar per run on a terminal (tqdm: rate and time left from the steps it
has seen), and in a log (no terminal) a line every ``LINE_EVERY_S`` seconds. The time left is measured on the driver
over the steps seen since the run (re)started there, checkpoints and evaluations included.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from tqdm import tqdm

PROGRESS_MARK = "skipview-progress: "
REPORT_EVERY_S = 5.0
LINE_EVERY_S = 60.0


class Reporter:
    """Rank 0's side: ``report`` prints a progress line when ``REPORT_EVERY_S`` has passed since the last, and at
    the last step."""

    def __init__(self, run_name: str, total_steps: int | None):
        self.run_name, self.total = run_name, total_steps
        self.last = float("-inf")

    def report(self, step: int, loss: float) -> None:
        now = time.monotonic()
        if now - self.last < REPORT_EVERY_S and step != self.total:
            return
        self.last = now
        print(PROGRESS_MARK + json.dumps({"run": self.run_name, "step": step, "total": self.total, "loss": loss}),
              flush=True)


def parse(line: str) -> dict | None:
    """The report a worker's output line carries, or None for any other line."""
    if not line.startswith(PROGRESS_MARK):
        return None
    try:
        return json.loads(line[len(PROGRESS_MARK):])
    except json.JSONDecodeError:
        return None


@dataclass
class _Run:
    first_step: int
    first_time: float
    last_step: int = -1
    last_line: float = float("-inf")
    bar: tqdm | None = field(default=None, repr=False)


class Display:
    """The driver's side: each run's reports as a bar (``stream`` a terminal) or as a line every ``LINE_EVERY_S``."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.terminal = self.stream.isatty()
        self.runs: dict[str, _Run] = {}

    def show(self, report: dict) -> None:
        name, step, total, loss = report["run"], int(report["step"]), report.get("total"), float(report["loss"])
        now = time.monotonic()
        run = self.runs.get(name)
        if run is None:
            run = self.runs[name] = _Run(step, now)
        if step <= run.last_step:           # a step shown already (a line Ray forwarded twice, a restart behind it)
            return
        run.last_step = step
        if self.terminal:
            if run.bar is None:
                run.bar = tqdm(desc=f"run {name}", total=total, initial=step, unit=" step", file=self.stream,
                               position=len(self.runs) - 1, dynamic_ncols=True, leave=True)
            run.bar.set_postfix_str(f"loss {loss:.4g}", refresh=False)
            run.bar.update(step - run.bar.n)
            if total is not None and step >= total:
                self.close(name)
        elif now - run.last_line >= LINE_EVERY_S or (total is not None and step >= total):
            run.last_line = now
            self.stream.write(line(name, step, total, loss, run, now) + "\n")
            self.stream.flush()

    def close(self, name: str | None = None) -> None:
        """End the bar of run ``name`` (of every run by default), so the lines after it start clean."""
        for key in [name] if name else list(self.runs):
            run = self.runs.get(key)
            if run is not None and run.bar is not None:
                run.bar.close()
                run.bar = None


def line(name: str, step: int, total: int | None, loss: float, run: _Run, now: float) -> str:
    """``run NAME: step 1200/6000 (20%), loss 3.412, 2.10 steps/s, 38 min left`` (rate and time left once steps have
    been seen here)."""
    parts = [f"step {step}/{total} ({100 * step / total:.0f}%)" if total else f"step {step}", f"loss {loss:.4g}"]
    elapsed, done = now - run.first_time, step - run.first_step
    if done > 0 and elapsed > 0:
        rate = done / elapsed
        parts.append(f"{rate:.3g} steps/s")
        if total and step < total:
            parts.append(f"{duration((total - step) / rate)} left")
    return f"run {name}: " + ", ".join(parts)


def duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"
