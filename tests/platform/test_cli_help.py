"""Help is readable where there is no terminal (a pipe, a log) and in a narrow one: no option or word of it is cut."""

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


@pytest.mark.parametrize("command", [["train"], ["tune"], ["ablation"], ["study", "run"], ["data", "prepare"],
                                     ["evaluate"], ["submit"]])
def test_an_explicit_narrow_width_is_kept_and_cuts_nothing(command, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    assert run([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out, out
    if command == ["train"]:            # an option's name and a long word of its help, both whole
        assert "--wait-for-workers" in out and "(params.yaml:train.settings)" in out
