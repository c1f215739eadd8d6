"""The repository's own dvc.yaml and params.yaml, run by real DVC in a temporary git repository on tiny data.

Proves: a fresh checkout reproduces every stage; a second `dvc repro` does nothing; changing one corpus's param
reruns exactly that corpus's downstream stages; `dvc params diff` / `dvc metrics show` see the change; an http(s)
source served from 127.0.0.1 feeds the same pipeline (and identical data does not rerun `prepare`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
CORPORA = ("gutenberg_novels", "news_reuters21578", "news_bbc")

pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path, env: dict) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _stages_run(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def _write_data_root(root: Path, write_books, write_jsonl) -> None:
    write_books(root / "corpora" / "gutenberg_novels")
    write_jsonl(root / "corpora" / "news_reuters21578" / "articles.jsonl.gz",
                [{"text": "Oil prices fell. Exports were flat."}, {"text": "The bank cut rates."}])
    write_jsonl(root / "corpora" / "news_bbc" / "articles.jsonl.gz",
                [{"text": "The film won an award. Critics loved it.\nIt opens on Friday."},
                 {"text": "The team lost again. Fans were angry."}])
    sts = root / "senteval" / "downstream" / "STS"
    sts.mkdir(parents=True)
    (sts / "pairs.txt").write_text("a man is walking .\ta man walks .\n")
    digest = subprocess.run(["sha256sum", "downstream/STS/pairs.txt"], cwd=root / "senteval", capture_output=True,
                            text=True, check=True).stdout
    (root / "senteval" / "SHA256SUMS").write_text(digest)


@pytest.fixture
def dvc_repo(tmp_path: Path, make_books, make_jsonl) -> tuple[Path, dict]:
    """A git repository holding the project's files as committed (plus uncommitted work), with tiny params."""
    repo = tmp_path / "repo"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.split()
    for name in listed:
        if (REPO / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, repo / name)
    data_root = tmp_path / "data"
    _write_data_root(data_root, make_books, make_jsonl)

    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["data_root"] = str(data_root)
    for corpus in params["corpora"].values():
        corpus["wordvecs"] = {**corpus["wordvecs"], "dim": 8, "epochs": 1, "buckets": 1000, "threads": 1}
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    # `skipview` as the stages call it, whether or not the package is pip-installed in this interpreter.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "skipview").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m skipview.platform.cli "$@"\n')
    (bin_dir / "skipview").chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    env["DVC_NO_ANALYTICS"] = "1"
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org"]
    _run(git + ["init", "-q"], repo, env)
    _run(git + ["add", "-A"], repo, env)
    _run(git + ["commit", "-qm", "fresh checkout"], repo, env)
    return repo, env


def test_repro_twice_then_one_param_change(dvc_repo):
    repo, env = dvc_repo
    dvc = [sys.executable, "-m", "dvc"]

    first = _run(dvc + ["repro"], repo, env)
    expected = {"fetch_senteval"} | {f"{stage}@{c}" for stage in ("fetch", "prepare", "wordvecs") for c in CORPORA}
    assert _stages_run(first) == expected
    for corpus in CORPORA:
        meta = json.loads((repo / "data" / corpus / "prepared" / "meta.json").read_text())
        metrics = json.loads((repo / "metrics" / corpus / "prepare.json").read_text())
        assert metrics["sentences"] == meta["sentences"] > 0
        vectors_meta = json.loads((repo / "data" / corpus / "wordvecs" / "meta.json").read_text())
        assert vectors_meta["dim"] == 8 and vectors_meta["coverage"] == 1.0
    assert (repo / "data" / "senteval" / "downstream" / "STS" / "pairs.txt").is_file()
    assert json.loads((repo / "data" / "news_bbc" / "prepared" / "meta.json").read_text())["documents"] == 2

    second = _run(dvc + ["repro"], repo, env)
    assert _stages_run(second) == set()
    assert "up to date" in _run(dvc + ["status"], repo, env)

    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["corpora"]["news_bbc"]["prepare"]["min-count"] = 2
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert "corpora.news_bbc.prepare.min-count" in _run(dvc + ["params", "diff"], repo, env)
    third = _run(dvc + ["repro"], repo, env)
    assert _stages_run(third) == {"prepare@news_bbc", "wordvecs@news_bbc"}
    vocab = (repo / "data" / "news_bbc" / "prepared" / "vocab.tsv").read_text().splitlines()
    assert all(int(line.split("\t")[1]) >= 2 for line in vocab[4:])
    shown = json.loads(_run(dvc + ["metrics", "show", "--json"], repo, env))
    assert any("metrics/news_bbc/prepare.json" in json.dumps(v) for v in shown.values())


def test_http_source_feeds_the_pipeline(dvc_repo, tmp_path, http_server, make_tar_gz):
    repo, env = dvc_repo
    dvc = [sys.executable, "-m", "dvc"]
    _run(dvc + ["repro", "prepare@news_bbc"], repo, env)

    served = tmp_path / "served"
    make_tar_gz(Path(yaml.safe_load((repo / "params.yaml").read_text())["data_root"]) / "corpora" / "news_bbc",
                served / "bbc.tar.gz")
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["corpora"]["news_bbc"]["source"] = f"{http_server(served)}/bbc.tar.gz"
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    output = _run(dvc + ["repro", "prepare@news_bbc"], repo, env)
    # The download reran the fetch; its content is the same as the local copy, so prepare was not rerun.
    assert _stages_run(output) == {"fetch@news_bbc"}
    assert (repo / "data" / "news_bbc" / "raw" / "articles.jsonl.gz").is_file()
