"""A small contrastive objective for the trainer's engine tests (imported by the Ray workers as
``tiny_objective:build``), with switches to inject failures at a chosen forward call.

The engine tests are about the trainer (restore, DDP, MLflow), not about what is learned: an in-batch
contrastive loss between a linear view of a sentence and of its next sentence is cheap on 2 cores and has
a real gradient. The failure switches exist only here, never in the product code.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from skipview.models.encoder import SentenceEncoder
from skipview.models.objective import ExampleKind, Objective, ObjectiveOutput
from skipview.models.views import LinearView, embed
from skipview.platform.training import run_folder


def _rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def _truncate_latest_checkpoint(run_dir: Path, marker: Path) -> None:
    """Cut the newest checkpoint's training state in half (checkpoint folders are named by time) and say which."""
    latest = max((p for p in run_dir.glob("checkpoint_*") if p.is_dir()), key=lambda p: p.name)
    state = latest / "state.pt"
    data = state.read_bytes()
    state.write_bytes(data[: len(data) // 2])
    marker.with_name(marker.name + ".truncated").write_text(latest.name)


def _wait_until_registered(count: int, marker: Path, timeout_s: float = 600) -> None:
    """Block until the run's checkpoint snapshot (Ray's record of the checkpoints it can resume from, on whatever
    storage the run uses) registers ``count`` checkpoints. A timeout is written into ``marker``, whose text the tests
    check is the failed worker's pid."""
    import ray.train

    storage = ray.train.get_context().get_storage()
    snapshot = f"{storage.experiment_fs_path}/{run_folder.SNAPSHOT}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with storage.storage_filesystem.open_input_stream(snapshot) as f:
                names = run_folder.registered_names(f.read().decode())
            if len([name for name in names if name.startswith("checkpoint_")]) >= count:
                return
        except (OSError, ValueError):           # not written yet, or caught mid-rewrite
            pass
        time.sleep(0.1)
    marker.write_text(f"timeout: {snapshot} did not register {count} checkpoint(s) in {timeout_s:.0f} s")


class TinyObjective(Objective):
    example_kind = ExampleKind.PAIR

    def __init__(self, settings: dict, vocab, word_vectors):
        super().__init__()
        self.settings = settings
        self.register_buffer("word_vectors", torch.as_tensor(word_vectors, dtype=torch.float32), persistent=False)
        self.view = LinearView(self.word_vectors.shape[1], int(settings.get("dim", 8)))
        self.log_temperature = nn.Parameter(torch.zeros(()))
        self.calls = 0

    def _maybe_fail(self) -> torch.Tensor | None:
        self.calls += 1
        s = self.settings
        if s.get("fail_at_call") == self.calls and s.get("fail_rank", 0) == _rank():
            marker = Path(s["marker"])
            if not marker.exists():                 # fail once: the restarted worker must get through
                marker.write_text(str(os.getpid()))
                # Ray's controller registers a reported checkpoint at its next poll of the workers: wait for it, so
                # the restart has the checkpoints the test means it to resume from rather than step 0
                if s.get("registered_before_failing"):
                    _wait_until_registered(int(s["registered_before_failing"]), marker)
                if s.get("truncate_latest_in"):
                    _truncate_latest_checkpoint(Path(s["truncate_latest_in"]), marker)
                if s.get("failure") == "sigkill":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise RuntimeError(f"injected failure at forward call {self.calls}")
        if s.get("nan_at_call") is not None and self.calls >= s["nan_at_call"] and _rank() == 0:
            return torch.tensor(float("nan"))
        return None

    def forward(self, batch) -> ObjectiveOutput:
        poison = self._maybe_fail()
        if self.settings.get("step_s"):             # a step as slow as a test needs, to stop a run mid-way
            time.sleep(self.settings["step_s"])
        if self.settings.get("calls_file") and _rank() == 0:       # how far rank 0 got, for a test to read
            Path(self.settings["calls_file"]).write_text(str(self.calls))
        a = nn.functional.normalize(self.view.represent(embed(batch.sentences, self.word_vectors), batch.sentences), dim=-1)
        b = nn.functional.normalize(self.view.represent(embed(batch.next, self.word_vectors), batch.next), dim=-1)
        temperature = self.log_temperature.exp()
        logits = a @ b.T / temperature
        loss = nn.functional.cross_entropy(logits, torch.arange(len(a), device=a.device))
        if poison is not None:
            loss = loss * poison
        return ObjectiveOutput(loss, {"temperature": temperature.detach()})

    def sentence_encoder(self, tokenizer, vocab) -> SentenceEncoder:
        view = LinearView(self.view.input_dim, self.view.out_dim)
        view.load_state_dict(self.view.state_dict())
        return SentenceEncoder({"g": view}, vocab, tokenizer, self.word_vectors.cpu(), max_len=30)


def _record_placement(folder: Path) -> None:
    """Which node and scratch folder this worker process runs on (one file per process: a restart adds one)."""
    import json
    import tempfile

    import ray

    record = {"rank": _rank(), "pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id(),
              "scratch": tempfile.gettempdir()}
    (folder / f"rank{record['rank']}-pid{record['pid']}.json").write_text(json.dumps(record))


def build(settings: dict, *, vocab, word_vectors) -> TinyObjective:
    if settings.get("placement_dir"):
        _record_placement(Path(settings["placement_dir"]))
    return TinyObjective(dict(settings), vocab, word_vectors)
