"""benchmarks/scale.py reads what the training workers log: the start-up phases a worker writes must parse back."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from skipview.platform.training.loop import StartupClock

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import scale  # noqa: E402  (a benchmark script, not a package module)


def test_the_workers_start_up_phases_parse_back_from_their_log_line(caplog):
    clock = StartupClock(rank=1)
    for phase in ("built", "ddp", "resume", "mlflow"):
        sum(range(20_000))                              # a little CPU time in each phase
        clock.mark(phase)
    with caplog.at_level(logging.INFO):
        clock.first_batch()
        clock.first_batch()                             # logged once, at the first batch only
    assert len(caplog.records) == 2
    text = "".join(f"(RayTrainWorker pid=1) {record.getMessage()}\n" for record in caplog.records)
    text += "final model saved and logged in 2.50 s\n"
    phases = scale.train_phases(text)
    parsed = phases["per_rank"]["rank1"]["startup_phases"]
    assert list(parsed) == ["built", "ddp", "resume", "mlflow", "first_batch"]
    assert all(set(v) == {"wall_s", "cpu_s"} and v["wall_s"] >= 0 and v["cpu_s"] >= 0 for v in parsed.values())
    assert phases["final_model_s"] == 2.5
