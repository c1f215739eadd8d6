"""A run folder a full disk or a kill left behind is made fit to resume from before Ray reads it.

The snapshot below has the shape Ray Train 2.60 writes (copied from a run's checkpoint_manager_snapshot.json);
the end-to-end case, a real full disk under `skipview train`, is tests/platform/training/test_full_disk.py."""

from __future__ import annotations

import json

import pytest

from skipview.platform.errors import CorruptCheckpoint
from skipview.platform.training.run_folder import SNAPSHOT, SNAPSHOT_COPY, KeepSnapshot, repair

KEPT = ["checkpoint_2026-11-26_03-06-36.022799", "checkpoint_2026-11-26_03-06-55.235550"]


def snapshot(names: list[str]) -> str:
    results = [{"version": 0, "checkpoint_dir_name": name, "metrics": {"step": 5 * (i + 1)}}
               for i, name in enumerate(names)]
    return json.dumps({"ray_version": "2.60.0", "checkpoint_results": results,
                       "checkpoint_report_indices": list(range(len(names))),
                       "latest_checkpoint_result": results[-1], "pending_training_results": [],
                       "pending_validation_specs": [], "current_report_index": len(names),
                       "validated_checkpoint_dir_names": []})


def folders(run_dir) -> list[str]:
    return sorted(p.name for p in run_dir.glob("checkpoint_*") if p.is_dir())


def run_dir_with(tmp_path, names: list[str]):
    run_dir = tmp_path / "runs" / "full"
    for name in names:
        (run_dir / name).mkdir(parents=True)
        (run_dir / name / "state.pt").write_bytes(b"state")
    return run_dir


def test_an_empty_snapshot_is_restored_from_the_copy_and_unregistered_folders_removed(tmp_path):
    cut = "checkpoint_2026-11-26_03-07-14.000001"          # the upload the full disk stopped
    run_dir = run_dir_with(tmp_path, [*KEPT, cut])
    (run_dir / SNAPSHOT).write_text(snapshot(KEPT))
    KeepSnapshot(str(run_dir)).after_report(None, [{}], checkpoint=object())
    (run_dir / SNAPSHOT).write_bytes(b"")                   # what Ray's in-place rewrite leaves on a full disk
    changes = repair(run_dir)
    assert json.loads((run_dir / SNAPSHOT).read_text())["latest_checkpoint_result"]["checkpoint_dir_name"] == KEPT[1]
    assert folders(run_dir) == KEPT
    assert any("restored from" in line for line in changes) and any(cut in line for line in changes)
    assert repair(run_dir) == []                            # nothing left to repair


def test_an_empty_snapshot_without_a_copy_is_one_line_naming_it(tmp_path):
    run_dir = run_dir_with(tmp_path, KEPT)
    (run_dir / SNAPSHOT).write_bytes(b"")
    with pytest.raises(CorruptCheckpoint, match=f"{run_dir / SNAPSHOT}: .* empty or cut .* move {run_dir} away"):
        repair(run_dir)
    assert folders(run_dir) == KEPT      # nothing removed on a guess


def test_checkpoint_folders_of_a_run_killed_before_its_first_registration_are_removed(tmp_path):
    run_dir = run_dir_with(tmp_path, KEPT[:1])
    assert len(repair(run_dir)) == 1 and not folders(run_dir)
    assert not (run_dir / SNAPSHOT_COPY).exists()
