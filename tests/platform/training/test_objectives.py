"""The registered objectives (gen, disc, skipthought) train under the engine with 2 workers, and periodic STS14 on the real
SentEval data is reported with each checkpoint, logged to MLflow, and used to keep the best checkpoint."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest
from prepared_data import write_training_data

from skipview.models.text import Tokenizer
from skipview.platform.tracking import store
from skipview.platform.tracking.lineage import HARDWARE_TAG, hardware
from skipview.platform.training import driver
from skipview.platform.training.config import RunSettings, TrainSettings

SENTEVAL = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "senteval" / "downstream"
STS14 = SENTEVAL / "STS" / "STS14-en-test"


def sts14_words(limit: int = 400) -> list[str]:
    tokenizer, counts = Tokenizer(), Counter()
    for path in STS14.glob("STS.input.*.txt"):
        for line in path.read_text(encoding="utf-8").splitlines():
            counts.update(tokenizer(line.replace("\t", " ")))
    return [w for w, _ in counts.most_common(limit) if not w.startswith("<")]


@pytest.mark.slow
@pytest.mark.parametrize("objective,objective_settings,with_sts,precision", [
    ("gen", {"hidden_size": 6, "negatives": 2}, False, "auto"),
    # the loop's autocast branch (a GPU run's bf16) on CPU: same loop, same DDP, bf16 matrix products
    ("gen", {"hidden_size": 6, "negatives": 2}, False, "bf16"),
    ("disc", {"hidden_size": 6}, True, "auto"),
    ("skipthought", {"hidden_size": 8, "embedding_dim": 6, "vocab_size": 40}, False, "auto"),
])
def test_registered_objective_trains_with_two_workers(ray_session, tmp_path, objective, objective_settings, with_sts,
                                                      precision):
    if with_sts and not STS14.is_dir():
        pytest.skip(f"SentEval data not found at {SENTEVAL}")
    corpus, wordvecs = write_training_data(tmp_path / "data", words=sts14_words() if with_sts else 60)
    # skip-thought's runs end by epochs (issue 57's trainings), here between two logs and two checkpoints of its
    # 20 steps; the others by steps
    budget = ({"epochs": 1, "max_steps": None, "log_every": 3, "checkpoint_every": 6} if objective == "skipthought"
              else {"max_steps": 8, "checkpoint_every": 4})
    settings = TrainSettings(objective=objective, objective_settings=objective_settings, corpus=str(corpus),
                             wordvecs=str(wordvecs), batch_size=16, precision=precision,
                             postprocessing_sentences=100, senteval_dir=str(SENTEVAL) if with_sts else None,
                             **budget)
    run = RunSettings(name=objective, storage=str(tmp_path / "runs"), workers=2, keep_checkpoints=1,
                      tracking_uri=f"sqlite:///{tmp_path}/mlflow.db", output=str(tmp_path / "model"))
    outcome = driver.train(settings, run)
    steps = outcome.metrics["step"]
    assert outcome.metrics["ddp_parameters_equal"] == 1.0
    assert (tmp_path / "model" / "config.json").is_file()
    client = store.client(run.tracking_uri)
    # each step's loss once: the mean over the ranks (not also rank 0's, which the objectives report)
    assert sorted(m.step for m in client.get_metric_history(outcome.mlflow_run_id, "loss")) == list(
        range(1, steps + 1))
    if objective == "skipthought":
        assert outcome.metrics["epoch"] == 1 and steps % settings.log_every and steps % settings.checkpoint_every
        # the epoch's last steps are logged too, and the final checkpoint's step ends a throughput window (its hours)
        assert max(m.step for m in client.get_metric_history(outcome.mlflow_run_id, "sentences_per_s")) == steps
    else:
        assert steps == 8
    if not with_sts:
        return
    assert math.isfinite(outcome.metrics["sts14"])
    for curve in ("sts14", "sts14/f", "sts14/g"):     # the ensemble's and each view's learning curve
        assert sorted(m.step for m in client.get_metric_history(outcome.mlflow_run_id, curve)) == [0, 4, 8]
    # Ray hears only the ensemble's score (what checkpoints and ASHA rank by); the views' are MLflow's
    assert "sts14/f" not in outcome.metrics
    final = client.get_run(outcome.mlflow_run_id).data.metrics
    assert final["sts14/f"] != final["sts14/g"]
    # what the two workers computed on: this machine's CPU, twice
    assert client.get_run(outcome.mlflow_run_id).data.tags[HARDWARE_TAG] == f"2 × {hardware()}"
    kept = [p for p in (tmp_path / "runs" / run.name).glob("checkpoint_*") if p.is_dir()]
    assert 1 <= len(kept) <= 2            # the best by STS14 and the latest
