"""The exported model's card: the ``README.md`` the Hugging Face Hub reads (YAML metadata, then Markdown).

It is written from the run's MLflow record (``run_record``: its params, tags and last metrics): the training data
with the hash DVC recorded for it, the code's commit, the settings, the command that trained it, and, from the
evaluation records given (``skipview evaluate --out``), the model's scores beside the baselines' on the same tasks
(uSIF and SIF over the same word vectors, as the README's results do). What the record lacks is said, not guessed.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from skipview.models.encoder import SentenceEncoder
from skipview.platform.tracking.lineage import COMMAND_TAG

# the tags a card shows under "Training data and code", in this order
LINEAGE_TAGS = ("corpus.path", "corpus.hash", "wordvecs.path", "wordvecs.hash", "git_commit")


def run_record(tracking_uri: str, run_id: str) -> dict:
    """An MLflow run as the card reads it: ``run_id``, ``name``, ``params``, ``tags`` and ``metrics`` (last values)."""
    from skipview.platform.tracking import store

    run = store.client(tracking_uri).get_run(run_id)
    return {"run_id": run_id, "name": run.info.run_name, "params": dict(run.data.params),
            "tags": dict(run.data.tags), "metrics": dict(run.data.metrics)}


def evaluation_record(path: Path) -> dict:
    """A ``skipview evaluate --out`` record, refused in one line naming the file when it is not one."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: not an evaluation record ({error})") from None
    if not isinstance(record, dict) or not isinstance(record.get("metrics"), dict) or "encoder" not in record:
        raise ValueError(f"{path}: not an evaluation record (no 'encoder' and 'metrics' keys)")
    return record


def model_card(encoder: SentenceEncoder, record: dict | None, *, view: str, mode: str, postprocessing: str,
               dimension: int, scores: list[dict] = (), headline: tuple[str, ...] = ()) -> str:
    """The card's text. ``scores``: evaluation records, the model's first; ``headline``: the metric keys of their
    table (default: each task's Spearman, as the README's results)."""
    objective = encoder.metadata.get("objective", "skipview")
    front = {"library_name": "sentence-transformers", "pipeline_tag": "sentence-similarity", "language": ["en"],
             "tags": ["sentence-transformers", "sentence-similarity", "feature-extraction", "skipview", objective]}
    lines = ["---", yaml.safe_dump(front, sort_keys=False).rstrip(), "---", "",
             f"# skipview {objective} encoder: view `{view}`, {mode} vectors", "",
             f"A {dimension}-dimensional sentence encoder trained with skipview (objective `{objective}`; views "
             f"{', '.join(f'`{n}`' for n in encoder.view_names)}). This export encodes with view `{view}` in "
             f"{mode} mode, {_postprocessing_words(postprocessing)}. It needs skipview installed "
             "(`pip install skipview[st]`) and fetches nothing; `trust_remote_code=True` lets sentence-transformers "
             "import skipview's module (`skipview_encoder/`), which it refuses for any class not its own.", "",
             "```python", "from sentence_transformers import SentenceTransformer", "",
             "model = SentenceTransformer(\"PATH/TO/THIS/FOLDER\", trust_remote_code=True)",
             "vectors = model.encode([\"a sentence to embed .\", \"another one .\"])", "```", ""]
    lines += _training(encoder, record)
    lines += _scores(scores, headline)
    return "\n".join(lines) + "\n"


def _postprocessing_words(postprocessing: str) -> str:
    if postprocessing == "stored":
        return ("each view's top principal component (fitted on training sentences, stored with the model) removed "
                "and the vectors L2-normalised before the views are combined")
    return "no principal component removed (the vectors are L2-normalised before the views are combined)"


def _training(encoder: SentenceEncoder, record: dict | None) -> list[str]:
    lines = ["## Training", ""]
    if record is None:
        lines += ["No MLflow run was given at export (`--run`): the settings below are those the model directory "
                  "keeps; its training data, code and command are not recorded here.", "",
                  "```yaml", yaml.safe_dump(encoder.metadata, sort_keys=True).rstrip(), "```", ""]
        return lines
    tags, params = record["tags"], record["params"]
    lines += [f"MLflow run `{record['run_id']}` (`{record['name']}`).", "", "Training data and code:", ""]
    lines += [f"- {key}: `{tags[key]}`" if key in tags else f"- {key}: not recorded" for key in LINEAGE_TAGS]
    command = tags.get(COMMAND_TAG)
    lines += ["", "Command:", "", f"```\n{command}\n```" if command else
              "not recorded (the run was started from Python, not from the `skipview` command)", "",
              "Settings (the run's MLflow params):", "", "| setting | value |", "|---|---|"]
    lines += [f"| `{key}` | `{value}` |" for key, value in sorted(params.items())]
    final = {k: v for k, v in sorted(record["metrics"].items()) if k in ("step", "sentences", "loss", "sts14")}
    if final:
        lines += ["", "At the end of training: " + ", ".join(f"{k} {v:g}" for k, v in final.items()) + "."]
    return lines + [""]


def _scores(scores: list[dict], headline: tuple[str, ...]) -> list[str]:
    if not scores:
        return ["## Scores", "", "No evaluation record was given at export (`--scores`).", ""]
    keys = list(headline) or sorted({key for record in scores for key in record["metrics"] if _headline(key)})
    names = [record.get("label") or Path(str(record["encoder"])).name for record in scores]
    lines = ["## Scores", "", "Each column is one `skipview evaluate` record (x100); the first is this model.", "",
             "| metric | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for key in keys:
        cells = [f"{record['metrics'][key]:.2f}" if key in record["metrics"] else "–" for record in scores]
        lines.append(f"| `{key}` | " + " | ".join(cells) + " |")
    protocols = {json.dumps(record.get("protocol"), sort_keys=True) for record in scores}
    fits = ", ".join(f"{name}: {record.get('component_fit')}" for name, record in zip(names, scores))
    lines += ["", f"Evaluation protocol: {', '.join(sorted(protocols))}. Where the principal component was "
              f"fitted (`--component-fit`): {fits}."]
    return lines + [""]


def _headline(key: str) -> bool:
    """A task's one headline figure, as the README's results quote them: Spearman over all pairs for a similarity
    task (``sts14.spearman.all``), accuracy for a classification task (``mr.acc``)."""
    return (key.count(".") == 2 and key.endswith(".spearman.all")) or (key.count(".") == 1 and key.endswith(".acc"))
