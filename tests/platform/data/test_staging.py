"""Staged outputs: a partial folder left by a killed process is removed by the next command for the same output."""

from __future__ import annotations

import os
import subprocess
import sys

from small_filesystem import small_filesystem

from skipview.platform.cli import run
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


def test_prepare_into_a_full_disk_is_one_line_naming_the_output_and_leaves_nothing(tmp_path, capsys):
    corpus = tmp_path / "lines"
    corpus.mkdir()
    # ~600 kB of text: its token store does not fit in 64 kB
    (corpus / "corpus.txt").write_text("".join(f"sentence number {i} has words w{i % 997} and w{i % 89} .\n"
                                               for i in range(12000)))
    with small_filesystem(tmp_path / "disk", "64k") as disk:
        status = run(["data", "prepare", str(corpus), str(disk / "prepared")])
        err = capsys.readouterr().err.strip().splitlines()
        assert status == 1
        assert err[-1].startswith(f"error: {disk / 'prepared'}: no space left on its file system ("), err
        assert "the output had reached" in err[-1] and "Traceback" not in "\n".join(err)
        assert not list(disk.iterdir()), "a partial output was left behind"
