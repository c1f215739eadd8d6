"""`skipview heldout` on a small skip-thought run written as the loop writes it, without Ray: each kept checkpoint's
held-out perplexity is what a word-by-word computation through the generation step gives, the records say where
each checkpoint stands in training, and the plateau rule reads the half-epoch checkpoints only."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from prepared_data import write_prepared_corpus
from skipthought_run import BATCH, MAX_LEN, mark_cut, write_disc_run

from skipview.models.corpus import PreparedCorpus
from skipview.models.registry import build_objective
from skipview.models.vocab import BOS_ID, EOS_ID, UNK_ID
from skipview.platform.cli import run
from skipview.platform.training import checkpoint as ckpt
from skipview.platform.training.heldout import half_epochs, hours_at, plateau
from skipview.platform.training.run_folder import SNAPSHOT

def word_by_word(objective, training_vocab, documents) -> dict[str, float]:
    """Each held-out triple decoded one word at a time through the generation step, its words read in the training
    vocabulary by name: the perplexity per decoder over the whole slice."""
    network = objective.network.eval()

    def ids(words: list[str]) -> list[int]:
        found = [training_vocab.index.get(word, UNK_ID) for word in words[:MAX_LEN]]
        return [i if i < network.num_words else UNK_ID for i in found]

    nll, tokens = {"next": 0.0, "previous": 0.0}, {"next": 0, "previous": 0}
    with torch.no_grad():
        for document in documents:
            for i in range(1, len(document) - 1):
                sentence = ids(document[i])
                context = network.encode(torch.tensor([sentence]), torch.tensor([len(sentence)]))
                for name, decoder, target in (("next", network.next_decoder, document[i + 1]),
                                              ("previous", network.previous_decoder, document[i - 1])):
                    state, previous = None, BOS_ID
                    for word in [*ids(target), EOS_ID]:
                        logits, state = network.next_token_logits(decoder, context, torch.tensor([previous]), state)
                        nll[name] -= torch.log_softmax(logits.double(), dim=-1)[0, word].item()
                        previous = word
                    tokens[name] += len(ids(target)) + 1
    return {name: math.exp(nll[name] / tokens[name]) for name in nll}


def test_each_kept_checkpoint_s_perplexity_is_the_word_by_word_one_and_the_records_say_where_it_stands(
        skipthought_run, tmp_path, capsys):
    out = tmp_path / "heldout.json"
    assert run(["heldout", str(skipthought_run.folder), "--corpus", str(skipthought_run.heldout), "--out", str(out),
                "--tracking-uri", skipthought_run.uri]) == 0
    report = json.loads(out.read_text())
    records = report["records"]
    assert [r["checkpoint"] for r in records] == skipthought_run.checkpoints    # the unregistered upload is not read
    training = PreparedCorpus(skipthought_run.settings.corpus)
    for record in records:
        objective = build_objective("skipthought", skipthought_run.settings.objective_settings, vocab=training.vocab,
                                    word_vectors=None)
        state, _ = ckpt.load(skipthought_run.folder / record["checkpoint"], rank=0, map_location=torch.device("cpu"))
        objective.load_state_dict(state["model"])
        expected = word_by_word(objective, training.vocab, skipthought_run.documents)
        assert record["perplexity_next"] == pytest.approx(expected["next"], rel=1e-5)
        assert record["perplexity_previous"] == pytest.approx(expected["previous"], rel=1e-5)
    assert records[0]["perplexity_next"] != records[-1]["perplexity_next"]
    triples = [document[1:-1] for document in skipthought_run.documents]
    assert {r["examples"] for r in records} == {sum(map(len, triples))}
    assert {r["tokens_next"] for r in records} == {sum(min(len(s), MAX_LEN) + 1 for d in skipthought_run.documents
                                                       for s in d[2:])}

    half = skipthought_run.settings.checkpoint_every
    assert [(r["step"], r["epoch"], r["half_epochs"], r["sentences"]) for r in records] == [
        (half, 0, 1, half * BATCH), (half + 3, 0, None, (half + 3) * BATCH), (2 * half, 1, 2, 2 * half * BATCH)]
    assert [r["train_hours"] * 3600 for r in records] == pytest.approx([6.0, 9.0, 11.0])
    # the stop signal's checkpoint is no half-epoch point: the gain is measured from the half epoch before
    first, last = records[0]["perplexity_next"], records[-1]["perplexity_next"]
    assert report["plateau"]["decision"] == "continue" and report["plateau"]["epochs"] == 3
    assert f"{1 - last / first:.2%} better per half epoch than at 0.5" in report["plateau"]["line"]
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 5 and printed[-1] == f"st-tiny: {report['plateau']['line']}"


def test_a_later_call_measures_only_the_checkpoints_its_out_file_does_not_hold(skipthought_run, tmp_path, capsys):
    out = tmp_path / "heldout.json"
    command = ["heldout", str(skipthought_run.folder), "--corpus", str(skipthought_run.heldout), "--out", str(out),
               "--tracking-uri", skipthought_run.uri]

    def call(*extra: str) -> tuple[list[dict], list[bool]]:
        """The records written, and for each checkpoint's line whether it was kept rather than measured."""
        assert run([*command, *extra]) == 0
        lines = capsys.readouterr().out.splitlines()[:-1]
        if lines[-1].startswith("records written"):
            lines = lines[:-1]
        return json.loads(out.read_text())["records"], [line.endswith(f"kept from {out})") for line in lines]

    records, kept = call()
    assert kept == [False] * 3
    report = json.loads(out.read_text())
    # the checkpoint written since (here: its record dropped) is measured; the others are kept as they were
    out.write_text(json.dumps({**report, "records": records[:2]}))
    again, kept = call()
    assert kept == [True, True, False]
    assert again[:2] == records[:2]
    assert again[2]["perplexity_next"] == pytest.approx(records[2]["perplexity_next"], rel=1e-9)
    # --again, or a file of another run, measures every one
    assert call("--again")[1] == [False] * 3
    out.write_text(json.dumps({**report, "mlflow_run_id": "another-run"}))
    assert call()[1] == [False] * 3
    out.write_text("{not json")
    assert run(command) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {out}: not the JSON of an earlier `skipview heldout --out` (Expecting "
                           "property name enclosed in double quotes: line 1 column 2 (char 1)); remove it, or give "
                           "another --out")


@pytest.mark.parametrize("points,decision,epochs", [
    ([], "continue", 3),
    ([(1, 300.0), (2, 250.0)], "continue", 3),                  # before three epochs the rule does not judge
    ([(5, 103.0), (6, 100.0)], "continue", 5),                  # 2.9 % over the half epoch to three epochs
    ([(5, 101.0), (6, 100.0)], "plateaued", None),              # 0.99 %
    ([(7, 100.0), (8, 98.9)], "continue", 5),                   # 1.1 %
    ([(4, 104.1), (6, 100.0)], "continue", 5),                  # half epoch 5 no longer kept: 2.0 % per half epoch
    ([(4, 101.9), (6, 100.0)], "plateaued", None),              # 0.94 % per half epoch
    ([(5, 110.0), (6, 100.0), (6, 95.0)], "continue", 5),       # a continued run's first checkpoint at 6 counts
    ([(6, 100.0)], "unjudged", None),
    ([(9, 100.0), (10, 90.0)], "done", None),                   # five epochs, whatever the gain
])
def test_the_plateau_rule(points, decision, epochs):
    verdict = plateau(points)
    assert (verdict.decision, verdict.epochs) == (decision, epochs), verdict.line


def test_a_stop_signal_s_checkpoint_is_no_half_epoch_point():
    every = 4381
    assert half_epochs(ckpt.Progress(step=4381, batch=4381), every) == 1
    assert half_epochs(ckpt.Progress(step=4405, batch=4405), every) is None                  # stopped past it
    assert half_epochs(ckpt.Progress(step=8762, epoch=1, batch=1), every) == 2              # a stop exactly at one
    assert half_epochs(ckpt.Progress(step=26283, epoch=3, batch=0), every) == 6             # three epochs over


def test_a_checkpoint_a_few_steps_past_the_last_throughput_window_has_its_hours_at_that_window_s_pace():
    hours = {10: 1.0, 20: 1.5}                  # hours at each window's end: 0.1 h a step, then 0.05
    assert hours_at(hours, 20, log_every=10) == 1.5
    assert hours_at(hours, 23, log_every=10) == pytest.approx(1.65)         # a run's last steps left unlogged
    assert hours_at({10: 1.0}, 12, log_every=10) == pytest.approx(1.2)
    assert hours_at(hours, 30, log_every=10) is None         # a whole window unlogged: not the loop's gap
    assert hours_at({}, 5, log_every=10) is None


def test_bad_input_is_one_line_naming_the_file_and_writes_nothing(skipthought_run, tmp_path, capsys):
    out = tmp_path / "heldout.json"

    def fails(folder: Path, corpus: Path) -> str:
        assert run(["heldout", str(folder), "--corpus", str(corpus), "--out", str(out),
                    "--tracking-uri", skipthought_run.uri]) == 1
        assert not out.exists()
        (line,) = capsys.readouterr().err.splitlines()
        return line

    empty = tmp_path / "empty"
    empty.mkdir()
    assert f"{empty / SNAPSHOT}: no such file" in fails(empty, skipthought_run.heldout)

    disc = write_disc_run(skipthought_run, tmp_path / "runs" / "disc-tiny")
    assert f"{disc}: a disc run" in fails(disc, skipthought_run.heldout)

    cased = tmp_path / "cased"
    write_prepared_corpus(cased, skipthought_run.documents)
    meta = json.loads((cased / "meta.json").read_text())
    (cased / "meta.json").write_text(json.dumps({**meta, "tokenizer": {**meta["tokenizer"], "lowercase": False}}))
    assert f"{cased / 'meta.json'}: tokenizer" in fails(skipthought_run.folder, cased)

    other_cut = tmp_path / "other_cut"
    write_prepared_corpus(other_cut, skipthought_run.documents)
    mark_cut(other_cut, seed=1, rest=True)                  # the rest of another cut: some training documents too
    assert f"{other_cut / 'meta.json'}: cut from the corpus the training corpus was cut from" in fails(
        skipthought_run.folder, other_cut)

    short = tmp_path / "short"
    write_prepared_corpus(short, skipthought_run.documents)
    lines = (short / "vocab.tsv").read_text().splitlines()
    (short / "vocab.tsv").write_text("\n".join(lines[:-5]) + "\n")           # a vocabulary not the corpus's
    assert f"{short / 'tokens.bin'}: ids up to {len(lines) - 1}" in fails(skipthought_run.folder, short)
