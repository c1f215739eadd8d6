"""A training run's MLflow run as the Ray Train workers write it (``Tracker``): rank 0 records, the other ranks
call the same methods and nothing happens.

MLflow receives the step metrics in batches: a database transaction per step would cost a small step a noticeable
share of its time.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from skipview.models.encoder import SentenceEncoder
from skipview.platform.tracking import store

log = logging.getLogger(__name__)


class Tracker:
    """Rank 0's MLflow run; a no-op on other ranks. Metrics are buffered and written at most every
    ``FLUSH_SECONDS`` in one batch, and always before a checkpoint, a tag and the end of the run."""

    FLUSH_SECONDS = 10.0

    def __init__(self, config: dict[str, Any], rank: int, run_id: str | None):
        self.client = None
        self.run_id = run_id
        self.tracking_uri = config["tracking_uri"]
        self.pending: list[tuple[int, dict[str, float]]] = []
        self.flushed_at = time.monotonic()
        if rank != 0:
            return
        self.client = store.client(self.tracking_uri)
        self.run_id, resumed = store.open_run(self.client, config["experiment"], config["run_key"],
                                              config["run_name"], run_id=run_id, params=config["params"],
                                              tags=config["tags"], driver=config["driver"])
        log.info("MLflow run %s (%s)", self.run_id, "continued" if resumed else "new")
        # After a restart the steps since the last checkpoint are trained again; they were logged before the
        # failure, so each step keeps its first record and the history stays one value per step.
        self.logged_through = store.last_logged_step(self.client, self.run_id, "loss") if resumed else -1

    def metrics(self, values: dict[str, float], step: int) -> None:
        if self.client is not None and step > self.logged_through:
            self.pending.append((step, values))
            if time.monotonic() - self.flushed_at >= self.FLUSH_SECONDS:
                self.flush()

    def last_logged(self, key: str) -> float:
        """``key``'s value at the last step this run logged it, over every attempt (NaN on other ranks)."""
        if self.client is None:
            return float("nan")
        self.flush()
        return store.last_logged_value(self.client, self.run_id, key)

    def flush(self) -> None:
        if self.client is not None and self.pending:
            store.log_metric_steps(self.client, self.run_id, self.pending)
            self.pending = []
        self.flushed_at = time.monotonic()

    def tag(self, key: str, value: str) -> None:
        if self.client is not None:
            self.flush()
            self.client.set_tag(self.run_id, key, value)

    def log_model(self, model_dir: Path, encoder: SentenceEncoder | None = None) -> None:
        """The final model directory (of ``encoder``, when given) as the run's pyfunc model, its URI as the tag
        ``skipview.model_uri``."""
        if self.client is None:
            return
        from skipview.platform.tracking.pyfunc import log_encoder
        uri = log_encoder(model_dir, run_id=self.run_id, tracking_uri=self.tracking_uri, encoder=encoder)
        self.tag("skipview.model_uri", uri)

    def finish(self, status: str) -> None:
        if self.client is not None:
            self.flush()
            self.client.set_terminated(self.run_id, status=status)
