"""Quality against training hours from the commands that measure it, on the small skip-thought run of
tests/skipthought_run.py, without Ray: `skipview heldout --out`, then each half-epoch checkpoint exported and
evaluated (`skipview export checkpoint --step`, `skipview evaluate --output`), drawn from that JSON alone; a folder
of evaluations under different protocols or fits is refused, naming the file."""

from __future__ import annotations

import json

import pytest

from skipview.platform.cli import run
from skipview.platform.studies.quality_hours import main


def test_each_half_epoch_checkpoint_is_a_point_of_its_measures_against_the_hours_trained(skipthought_run,
                                                                                       toy_senteval, tmp_path):
    measured = tmp_path / "checkpoints" / "st-tiny"
    assert run(["heldout", str(skipthought_run.folder), "--corpus", str(skipthought_run.heldout), "--out",
                str(measured / "heldout.json"), "--tracking-uri", skipthought_run.uri]) == 0
    half = skipthought_run.settings.checkpoint_every
    for step in (half, 2 * half):                       # the half epochs; not the stop signal's step between them
        model = tmp_path / "models" / f"step-{step}"
        assert run(["export", "checkpoint", str(skipthought_run.folder), str(model), "--step", str(step),
                    "--tracking-uri", skipthought_run.uri]) == 0
        assert run(["evaluate", "--model", str(model), "--tasks", "sts14", "--component-fit", "task",
                    "--senteval-dir", str(toy_senteval), "--output", str(measured / f"step-{step}.json")]) == 0
    out = tmp_path / "quality_hours"
    main([str(tmp_path / "checkpoints"), str(out)])

    drawn = json.loads(out.with_suffix(".json").read_text())
    heldout = {r["step"]: r for r in json.loads((measured / "heldout.json").read_text())["records"]}
    points = drawn["runs"]["st-tiny"]
    assert [p["step"] for p in points] == [half, 2 * half] and [p["epochs"] for p in points] == [0.5, 1.0]
    assert [p["hours"] * 3600 for p in points] == pytest.approx([6.0, 11.0])
    assert [p["perplexity_next"] for p in points] == [heldout[half]["perplexity_next"],
                                                      heldout[2 * half]["perplexity_next"]]
    for point in points:
        evaluation = json.loads((measured / f"step-{point['step']}.json").read_text())
        assert point["sts14"] == evaluation["metrics"]["sts14.pearson.mean"]
    assert (drawn["tasks"], drawn["protocol"], drawn["component_fit"]) == (["sts14"], "full", "task")
    assert out.with_suffix(".png").stat().st_size > 0
    page = out.with_suffix(".md").read_text()
    assert f"`python -m skipview.platform.studies.quality_hours {tmp_path}/checkpoints {out}`" in page
    assert f"| st-tiny | 1 | {2 * half} | 0.00 | {2 * half * 8:,} |" in page

    evaluation = json.loads((measured / f"step-{2 * half}.json").read_text())
    (measured / f"step-{2 * half}.json").write_text(json.dumps({**evaluation, "component_fit": "subset"}))
    with pytest.raises(ValueError, match=f"{measured}/step-{2 * half}.json: protocol full, component fit subset"):
        main([str(tmp_path / "checkpoints"), str(out)])
