"""Staged outputs: a partial folder left by a killed process is removed by the next command for the same output."""

from __future__ import annotations

import os
import subprocess
import sys

from skipview.platform.data.staging import remove_abandoned, staged_directory


def test_a_killed_commands_partial_folder_is_cleaned_and_a_running_ones_kept(tmp_path):
    out = tmp_path / "prepared"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()                   # a process that has exited
    abandoned = tmp_path / f".prepared.partial-{gone}"
    running = tmp_path / f".prepared.partial-{os.getppid()}"           # this test's parent is alive
    other = tmp_path / f".other.partial-{gone}"                        # another output's: not ours to judge
    for folder in (abandoned, running, other):
        (folder / "tokens.bin").parent.mkdir()
        (folder / "tokens.bin").write_bytes(b"x" * 100)
    with staged_directory(out) as partial:
        (partial / "meta.json").write_text("{}")
    assert (out / "meta.json").is_file()
    assert not abandoned.exists() and running.exists() and other.exists()
    assert remove_abandoned(out) == []
