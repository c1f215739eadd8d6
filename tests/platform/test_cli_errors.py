"""A user's mistake ends a command with one line on stderr and a non-zero exit; ``--debug`` gives the traceback.
None of these reaches Ray: the inputs are checked on the driver first."""

from __future__ import annotations

import pytest

from skipview.platform.cli import run


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from prepared_data import write_training_data

    return write_training_data(tmp_path_factory.mktemp("data"))


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_a_typo_in_an_objective_setting_names_the_key(data, tmp_path, capsys):
    corpus, wordvecs = data
    code = run(["train", "--objective", "disc", "--corpus", str(corpus), "--wordvecs", str(wordvecs),
                "--storage", str(tmp_path), "--set", "objective_settings.hidden_sise=8"])
    assert code == 2
    line = one_error_line(capsys)
    assert "skipview train" in line and "'hidden_sise'" in line and "hidden_size" in line


def test_a_directory_that_is_not_a_prepared_corpus_fails_before_ray(tmp_path, capsys):
    code = run(["train", "--objective", "disc", "--corpus", str(tmp_path), "--storage", str(tmp_path / "runs")])
    assert code == 1
    line = one_error_line(capsys)
    assert f"{tmp_path} is not a prepared corpus" in line and "skipview data prepare" in line
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("command", ["train", "evaluate", "neighbours"])
def test_a_cut_vectors_file_is_refused_in_one_line_that_names_it(command, data, tmp_path, capsys):
    import shutil

    corpus, wordvecs = data
    cut = shutil.copytree(wordvecs, tmp_path / "wordvecs")
    matrix = cut / "vectors.npy"
    matrix.write_bytes(matrix.read_bytes()[:90])                    # inside NumPy's header
    args = {"train": ["train", "--objective", "disc", "--corpus", str(corpus), "--wordvecs", str(cut),
                      "--storage", str(tmp_path / "runs")],
            "evaluate": ["evaluate", "--baseline", "avg", "--wordvecs", str(cut), "--senteval-dir", str(tmp_path),
                         "--tasks", "sts14"],
            "neighbours": ["neighbours", "words", "w1", "--wordvecs", str(cut)]}[command]
    assert run(args) != 0
    line = one_error_line(capsys)
    assert f"{matrix}: not a readable NumPy array" in line


def test_a_missing_model_directory_is_one_line_and_debug_shows_the_traceback(tmp_path, capsys):
    args = ["evaluate", "--model", str(tmp_path / "nope"), "--senteval-dir", str(tmp_path)]
    assert run(args) == 1
    line = one_error_line(capsys)
    assert str(tmp_path / "nope") in line and "--debug" in line
    with pytest.raises(FileNotFoundError):
        run(["--debug", *args])
    with pytest.raises(FileNotFoundError):          # appended to the failed command line, as one does
        run([*args, "--debug"])


def test_an_unknown_option_is_a_usage_error_in_one_line(capsys):
    assert run(["train", "--objectiv", "disc"]) == 2
    line = one_error_line(capsys)
    assert "--objectiv" in line and "skipview train --help" in line


def test_an_ablation_setting_no_objective_has_is_refused(data, tmp_path, capsys):
    corpus, wordvecs = data
    code = run(["ablation", "--corpus", str(corpus), "--wordvecs", str(wordvecs), "--senteval-dir", str(tmp_path),
                "--storage", str(tmp_path / "runs"), "--set", "objective_settings.hidden_sise=8"])
    assert code == 2
    assert "hidden_sise is a setting of none of the matrix's objectives" in one_error_line(capsys)


def test_a_bad_option_value_is_a_usage_error_in_one_line(capsys):
    assert run(["evaluate", "--baseline", "nope"]) == 2
    line = one_error_line(capsys)
    assert "--baseline must be one of" in line and "'nope'" in line and "skipview evaluate --help" in line


@pytest.mark.parametrize("command", [[], ["data"], ["study"]])
def test_a_group_without_its_subcommand_prints_its_help(command, capsys):
    assert run(command) == 2
    out, err = capsys.readouterr()
    assert f"Usage: {' '.join(['skipview', *command])} [OPTIONS] COMMAND" in out and not err
