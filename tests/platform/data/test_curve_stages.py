"""The learning curve's corpora (reports/dvc.yaml's curve_cut and curve_wordvecs, `novels_news_curve` in params.yaml),
run by real DVC on a fresh checkout with tiny data: every size is cut from the novels with the news and vectorised,
each cut a prefix of the next; a second `dvc repro` does nothing; changing one size reruns that size's two stages
only; and the quick start's plain `dvc repro` (dvc.yaml) holds none of them."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from dvc_checkout import DVC, fresh_checkout, run, stages_run

from skipview.models.corpus import PreparedCorpus

from data_samples import write_generated_books, write_jsonl

pytestmark = pytest.mark.slow
SIZES = {"small": 40, "large": 120, "all": 0}


@pytest.fixture
def dvc_repo(tmp_path: Path) -> tuple[Path, dict]:
    data_root = tmp_path / "data"
    write_generated_books(data_root / "corpora" / "gutenberg_novels", books=6, sentences_per_book=30)
    for corpus in ("news_reuters21578", "news_bbc"):
        write_jsonl(data_root / "corpora" / corpus / "articles.jsonl.gz",
                    [{"text": f"Story {i} of {corpus}. Prices moved {i} points."} for i in range(10)])

    def tiny(params: dict) -> None:
        params["data_root"] = str(data_root)
        params["corpora"] = {name: copy.deepcopy(corpus) for name, corpus in params["corpora"].items()}
        params["novels_news_curve"]["sizes"] = dict(SIZES)
        params["novels_news_curve"]["wordvecs"] = {**params["novels_news_curve"]["wordvecs"], "dim": 8, "epochs": 1,
                                                   "buckets": 1000, "threads": 1}

    return fresh_checkout(tmp_path, tiny)


def _documents(path: Path) -> list[list[tuple[str, ...]]]:
    corpus = PreparedCorpus(path)
    bounds = list(corpus.doc_index) + [corpus.num_sentences]
    return [[tuple(corpus.vocab.decode(corpus.sentence(i))) for i in range(a, b)] for a, b in zip(bounds, bounds[1:])]


def test_the_curve_corpora_are_nested_cuts_each_with_its_vectors(dvc_repo):
    repo, env = dvc_repo
    first = run(DVC + ["repro", "reports/dvc.yaml:curve_wordvecs"], repo, env)
    cut_stages = {f"reports/dvc.yaml:{stage}@{size}" for stage in ("curve_cut", "curve_wordvecs") for size in SIZES}
    assert cut_stages | {"reports/dvc.yaml:novels_news_raw", "reports/dvc.yaml:novels_news_prepare"} <= stages_run(first)

    source = repo / "data" / "novels_news" / "prepared"
    previous: list = []
    for size, asked in SIZES.items():
        cut = repo / "data" / "novels_news_curve" / "prepared" / size
        documents = _documents(cut)
        assert documents[: len(previous)] == previous and len(documents) > len(previous)
        previous = documents
        stats = json.loads((repo / "metrics" / "novels_news_curve" / size / "cut.json").read_text())
        assert stats["sentences"] == sum(map(len, documents)) >= (asked or stats["source_sentences"])
        vectors = json.loads((repo / "data" / "novels_news_curve" / "wordvecs" / size / "meta.json").read_text())
        assert vectors["dim"] == 8 and vectors["vocab_size"] == stats["vocab_size"]
    assert sorted(previous) == sorted(_documents(source))          # all: every document of the corpus

    assert stages_run(run(DVC + ["repro", "reports/dvc.yaml:curve_wordvecs"], repo, env)) == set()
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["novels_news_curve"]["sizes"]["large"] = 150
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert stages_run(run(DVC + ["repro", "reports/dvc.yaml:curve_wordvecs"], repo, env)) == {
        "reports/dvc.yaml:curve_cut@large", "reports/dvc.yaml:curve_wordvecs@large"}

    # the quick start's `dvc repro` is the data pipeline of dvc.yaml: hours of curve corpora and vectors are not in it
    quick_start = run(DVC + ["stage", "list", "--name-only"], repo, env).split()
    assert "train@disc-gutenberg_novels" in quick_start and not [s for s in quick_start if "curve" in s]
