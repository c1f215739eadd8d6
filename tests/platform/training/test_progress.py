"""A run's progress as its driver shows it: rank 0 reports at most every few seconds; the driver prints a line per
minute where there is no terminal, with the rate and the time left it measures."""

from __future__ import annotations

import io

from skipview.platform.training import progress


def test_rank_0_reports_at_most_every_few_seconds_and_always_the_last_step(capsys, monkeypatch):
    clock = iter([100.0, 101.0, 106.0, 106.5])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    reporter = progress.Reporter("r", total_steps=40)
    for step in (10, 20, 30, 40):
        reporter.report(step, loss=2.5)
    reports = [progress.parse(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["step"] for r in reports] == [10, 30, 40]
    assert reports[0] == {"run": "r", "step": 10, "total": 40, "loss": 2.5}
    assert progress.parse("(RayTrainWorker pid=1) anything else") is None


def test_without_a_terminal_the_driver_prints_a_line_a_minute_with_rate_and_time_left(monkeypatch):
    clock = iter([0.0, 30.0, 60.0, 60.0, 200.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    out = io.StringIO()                                     # not a terminal
    display = progress.Display(out)
    for step in (100, 200, 700, 700, 1000):                 # the repeated step is shown once
        display.show({"run": "r", "step": step, "total": 1000, "loss": 3.14159})
    assert out.getvalue().splitlines() == [
        "run r: step 100/1000 (10%), loss 3.142",
        "run r: step 700/1000 (70%), loss 3.142, 10 steps/s, 30 s left",
        "run r: step 1000/1000 (100%), loss 3.142, 4.5 steps/s",
    ]


def test_time_left_reads_in_minutes_and_hours():
    assert [progress.duration(s) for s in (45, 600, 3 * 3600 + 5 * 60)] == ["45 s", "10 min", "3 h 05 min"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_each_run_is_a_bar_that_ends_at_its_last_step():
    out = Terminal()
    display = progress.Display(out)
    for step in (10, 20, 40):
        display.show({"run": "r", "step": step, "total": 40, "loss": 0.5})
    drawn = out.getvalue()
    assert "run r" in drawn and "40/40" in drawn and "loss 0.5" in drawn
    assert display.runs["r"].bar is None                    # closed at the last step: later lines start clean
