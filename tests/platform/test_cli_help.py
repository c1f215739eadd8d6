"""Help is readable where there is no terminal (a pipe, a log): no option's help is cut."""

from __future__ import annotations

import pytest

from skipview.platform.cli import run


@pytest.mark.parametrize("command", [["train"], ["tune"], ["ablation"], ["data", "prepare"], ["submit"]])
def test_help_without_a_terminal_cuts_no_word(command, monkeypatch, capsys):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    assert run([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out, out
    if command == ["train"]:
        assert "(params.yaml:train.settings)" in out


def test_an_explicit_width_is_kept(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    assert run(["train", "--help"]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 80
