"""``skipview evaluate``, ``skipview mteb-sts``, ``skipview neighbours``, ``skipview tsne``, ``skipview rank-images``.

Every command takes an encoder: ``--model DIR`` (a trained model directory, ``SentenceEncoder.load``) or
``--baseline avg|wr|sif|usif --wordvecs DIR`` (fastText average; with top-PC removal for ``wr``; SIF-weighted with
top-PC removal for ``sif``; uSIF-weighted unit vectors with five components removed by their share for ``usif``).
"""

from __future__ import annotations

import json
import logging
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from skipview.platform.errors import one_line
from skipview.platform.evaluation.report import metrics_table
from skipview.platform.files import write_json_aside, write_text_aside

ModelOpt = Annotated[Optional[Path], typer.Option(
    "--model", help="Trained model directory (SentenceEncoder.load), or a sentence-transformers folder (`skipview "
                    "export sentence-transformers`), which encodes as it was exported.")]
BaselineOpt = Annotated[Optional[str], typer.Option(
    "--baseline", help="Training-free baseline instead of --model: 'avg' (fastText average), 'wr' (average with "
                       "the top principal component removed) or 'sif' (Arora et al. 2017: words weighted "
                       "a / (a + p(w)) by their corpus frequency, top component removed) or 'usif' (Ethayarajh "
                       "2018: unit word vectors weighted a / (a/2 + p(w)) with a set from the vocabulary and "
                       "--usif-n, the first five components removed, each scaled by its share of the squared "
                       "singular values).")]
WordvecsOpt = Annotated[Optional[Path], typer.Option(
    "--wordvecs", help="`skipview data wordvecs` directory (vectors.npy, vocab.tsv, meta.json) for --baseline.")]
PcCorpusOpt = Annotated[Optional[Path], typer.Option(
    "--pc-corpus", help="Prepared corpus to sample sentences from for a baseline's --component-fit corpus.")]
SentevalOpt = Annotated[Optional[Path], typer.Option(
    "--senteval-dir", envvar="SKIPVIEW_SENTEVAL_DIR", exists=True, file_okay=False,
    help="SentEval's data/downstream folder (holds STS/, SICK/, MR/, ...).")]


class ComponentFitName(str, Enum):
    corpus = "corpus"
    task = "task"
    subset = "subset"
    subset_stacked = "subset-stacked"
    subset_sides = "subset-sides"


ComponentFitOpt = Annotated[ComponentFitName, typer.Option(
    "--component-fit", help="Where the top principal component is fitted, for every encoder alike: 'subset' = on "
                            "each STS subset's distinct sentences (other tasks per task); 'subset-stacked' = its A "
                            "and B sentences with repeats (uSIF's released evaluation); 'subset-sides' = A and B "
                            "each on their own (Arora et al.'s released evaluation); 'task' = on each "
                            "task (the multi-view paper's modified SentEval), 'corpus' = on training sentences "
                            "(a model's stored components; a baseline needs --pc-corpus).")]
ViewOpt = Annotated[str, typer.Option(
    "--view", help="For --model: 'ensemble' (all views: averaged unsupervised, concatenated supervised) or one "
                   "view name (f, g, ...).")]
SifAOpt = Annotated[float, typer.Option("--sif-a", help="For --baseline sif: the weight parameter a.")]
UsifNOpt = Annotated[float, typer.Option("--usif-n", help="For --baseline usif: the expected sentence length n that "
                                                          "sets a (the paper's STS value: 11).")]


class UsifNormalise(str, Enum):
    word = "word"
    dimension = "dimension"


UsifNormaliseOpt = Annotated[UsifNormalise, typer.Option(
    "--usif-normalise", help="For --baseline usif: 'word' = each word vector to unit length (the paper), "
                             "'dimension' = each dimension over the sentence's words (the authors' released code).")]


def build_encoder(model: Path | None, baseline: str | None, wordvecs: Path | None, pc_corpus: Path | None = None,
                  pc_sample: int = 100_000, device: str | None = None, component_fit: str | None = None,
                  view: str = "ensemble", sif_a: float | None = None, usif_n: float | None = None,
                  usif_normalise: str = "word"):
    """The encoder the options describe; a clear error when they do not describe exactly one.

    ``component_fit`` None (the commands other than ``evaluate``, which encode queries and candidates in separate
    calls): a model uses its stored components, a baseline fits per call."""
    from skipview.platform.evaluation.encoding import ModelEncoder

    if (model is None) == (baseline is None):
        raise typer.BadParameter("give exactly one of --model DIR or --baseline avg|wr|sif|usif (with --wordvecs DIR)")
    if model is not None:
        import torch

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if (model / "modules.json").is_file():         # a sentence-transformers folder: it encodes as exported
            from skipview.platform.evaluation.encoding import SentenceTransformerEncoder

            if view != "ensemble" or component_fit not in (None, "corpus"):
                raise typer.BadParameter(f"{model} is a sentence-transformers model: it encodes with the view and "
                                         "post-processing it was exported with (no --view; --component-fit corpus)")
            return SentenceTransformerEncoder(model, device=device)
        from skipview.models.encoder import SentenceEncoder  # heavy; only when a model is evaluated
        loaded = SentenceEncoder.load(model, device=device)
        if view != "ensemble" and view not in loaded.view_names:
            raise typer.BadParameter(f"--view {view}: {model} has views {loaded.view_names} (or 'ensemble')")
        return ModelEncoder(loaded, view=view, component_fit=component_fit or "corpus")
    from skipview.platform.evaluation.baselines import BASELINES, SIF_A, USIF_N, AverageEncoder, WordVectors

    if baseline not in BASELINES:
        raise typer.BadParameter(f"--baseline must be one of {', '.join(BASELINES)}, got {baseline!r}")
    if wordvecs is None:
        raise typer.BadParameter("--baseline needs --wordvecs DIR (a `skipview data wordvecs` directory)")
    encoder = AverageEncoder(WordVectors.load(wordvecs), baseline, component_fit=component_fit or "task",
                             a=SIF_A if sif_a is None else sif_a, n=USIF_N if usif_n is None else usif_n,
                             normalise=usif_normalise)
    if encoder.component_fit == "corpus":
        if pc_corpus is None:
            raise typer.BadParameter(f"--baseline {baseline} --component-fit corpus needs --pc-corpus DIR "
                                     "(a prepared corpus to fit the component on)")
        from skipview.models.corpus import PreparedCorpus
        from skipview.platform.evaluation.neighbours import sample_corpus_sentences

        encoder.fit_component(sample_corpus_sentences(PreparedCorpus(pc_corpus), pc_sample))
    return encoder


def _encoder_name(model: Path | None, baseline: str | None) -> str:
    return str(model) if model is not None else f"fasttext-{baseline}"


class ProtocolName(str, Enum):
    full = "full"
    fast = "fast"


def evaluate(
    model: ModelOpt = None, baseline: BaselineOpt = None, wordvecs: WordvecsOpt = None, pc_corpus: PcCorpusOpt = None,
    component_fit: ComponentFitOpt = ComponentFitName.subset, view: ViewOpt = "ensemble", sif_a: SifAOpt = 1e-3,
    usif_n: UsifNOpt = 11, usif_normalise: UsifNormaliseOpt = UsifNormalise.word, senteval_dir: SentevalOpt = None,
    tasks: Annotated[Optional[str], typer.Option(help="Comma-separated tasks (default: all). Known: sts12..sts16, "
                                                      "stsb, stsb_unsup, sickr, sickr_unsup, sicke, mrpc, trec, "
                                                      "mr, cr, subj, mpqa, sst2.")] = None,
    protocol: Annotated[ProtocolName, typer.Option(help="full: SentEval's 10 folds; fast: 5 folds (tuning).")]
    = ProtocolName.full,
    output: Annotated[Optional[Path], typer.Option(help="Write all metrics, the protocol and each task's "
                                                        "aggregation to this JSON file.")] = None,
    device: Annotated[Optional[str], typer.Option(help="cpu or cuda (default: cuda when available).")] = None,
) -> None:
    """Run the SentEval-compatible suite on an encoder; print a table and optionally write the metrics JSON."""
    from skipview.platform.evaluation.suite import PROTOCOLS, Protocol, evaluate as run

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    encoder = build_encoder(model, baseline, wordvecs, pc_corpus, device=device, component_fit=component_fit.value,
                            view=view, sif_a=sif_a, usif_n=usif_n, usif_normalise=usif_normalise.value)
    proto = PROTOCOLS[protocol.value]
    if device:
        proto = Protocol(proto.name, proto.kfold, proto.seed, device)
    names = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    try:
        result = run(encoder, names, senteval_dir, proto, progress=True)
    except (FileNotFoundError, KeyError, ValueError) as error:
        raise typer.BadParameter(one_line(error)) from error
    result["encoder"] = _encoder_name(model, baseline)
    result["component_fit"] = encoder.component_fit      # None: the encoder removes no component (avg)
    if model is not None:
        result["view"] = view
    if baseline == "sif":
        result["sif_a"] = sif_a
    if baseline == "usif":
        result.update(usif_n=usif_n, usif_normalise=usif_normalise.value)
    Console().print(metrics_table({result["encoder"]: result["metrics"]}))
    if output is not None:
        write_json_aside(output, result)
        typer.echo(f"metrics written to {output}")


class MtebComponentFit(str, Enum):
    """The component fits whose statistic MTEB computes as skipview does: it encodes each side of each subset in its
    own call, so a component fitted per call is fitted per side of a subset."""
    corpus = "corpus"
    subset_sides = "subset-sides"


def mteb_sts(
    models: Annotated[Optional[list[Path]], typer.Option(
        "--model", help="Trained model directory (SentenceEncoder.load); repeat the option for several.")] = None,
    baseline: BaselineOpt = None, wordvecs: WordvecsOpt = None, pc_corpus: PcCorpusOpt = None,
    component_fit: Annotated[MtebComponentFit, typer.Option(
        "--component-fit", help="'corpus' (a model's stored components; a baseline's fitted on --pc-corpus) or "
                                "'subset-sides' (fitted on each side of each subset): the fits whose statistic MTEB, "
                                "which encodes each side of each subset in its own call, computes as skipview does.")]
    = MtebComponentFit.corpus,
    view: ViewOpt = "ensemble", usif_n: UsifNOpt = 11, senteval_dir: SentevalOpt = None,
    tasks: Annotated[Optional[str], typer.Option(help="Comma-separated tasks (default: all). Known: sts12, sts13, "
                                                      "sts14, stsb_unsup, sickr_unsup.")] = None,
    output: Annotated[Path, typer.Option(help="JSON file to write; the Markdown table goes beside it (.md).")]
    = Path("reports/mteb/sts.json"),
    device: Annotated[Optional[str], typer.Option(help="cpu or cuda (default: cuda when available).")] = None,
) -> None:
    """MTEB's own STS evaluation (cosine Spearman) of each encoder on the local SentEval files, offline, beside
    skipview's on the same pairs; writes the side-by-side rows (JSON) and tables (Markdown). Needs the 'st' extra."""
    import shlex
    import sys
    from importlib.metadata import version

    try:
        from skipview.platform.evaluation.mteb_sts import LOCAL_TASKS, TOLERANCE, markdown, side_by_side
    except ModuleNotFoundError as error:
        raise typer.BadParameter(f"{one_line(error)}: install the 'st' extra (pip install 'skipview[st]')") from error

    names = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else list(LOCAL_TASKS)
    unknown = [t for t in names if t not in LOCAL_TASKS]
    if unknown:
        raise typer.BadParameter(f"--tasks: unknown {', '.join(unknown)}; known: {', '.join(LOCAL_TASKS)}")
    chosen = [(m, None) for m in models or []] + ([(None, baseline)] if baseline else [])
    if not chosen:
        raise typer.BadParameter("give --model DIR (one or more) and/or --baseline avg|wr|sif|usif --wordvecs DIR")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    report = {"command": shlex.join(["skipview", *sys.argv[1:]]), "component_fit": component_fit.value,
              "view": view, "senteval_dir": str(senteval_dir), "tolerance": TOLERANCE,
              "mteb_version": version("mteb"), "encoders": {}}
    for model, base in chosen:
        encoder = build_encoder(model, base, wordvecs, pc_corpus, device=device, component_fit=component_fit.value,
                                view=view, usif_n=usif_n)
        name = _encoder_name(model, base)
        try:
            report["encoders"][name] = side_by_side(encoder, name, senteval_dir, names)
        except (FileNotFoundError, KeyError, ValueError) as error:
            raise typer.BadParameter(one_line(error)) from error
    write_json_aside(output, report)
    write_text_aside(output.with_suffix(".md"), markdown(report))
    typer.echo(f"side by side written to {output} and {output.with_suffix('.md')}")


neighbours_app = typer.Typer(help="Nearest neighbours by cosine: corpus sentences (skip-thought Table 2) or words "
                                  "(Table 3).", no_args_is_help=True)


@neighbours_app.command("sentences")
def neighbours_sentences(
    queries: Annotated[list[str], typer.Argument(help="Query sentences.")],
    corpus: Annotated[Path, typer.Option(help="Prepared corpus directory to sample candidate sentences from.")],
    model: ModelOpt = None, baseline: BaselineOpt = None, wordvecs: WordvecsOpt = None,
    sample: Annotated[int, typer.Option(help="Corpus sentences to search (paper: 500,000).")] = 50_000,
    k: Annotated[int, typer.Option(help="Neighbours per query.")] = 1,
    seed: int = 0,
) -> None:
    """Nearest corpus sentences to each query by cosine of unsupervised vectors."""
    from skipview.models.corpus import PreparedCorpus
    from skipview.platform.evaluation.neighbours import sample_corpus_sentences, sentence_neighbours

    encoder = build_encoder(model, baseline, wordvecs)
    sentences = sample_corpus_sentences(PreparedCorpus(corpus), sample, seed)
    for query, found in zip(queries, sentence_neighbours(encoder, queries, sentences, k)):
        typer.echo(f"query: {query}")
        for sentence, score in found:
            typer.echo(f"  {score:.3f}  {sentence}")


@neighbours_app.command("words")
def neighbours_words(
    queries: Annotated[list[str], typer.Argument(help="Query words.")],
    wordvecs: Annotated[Optional[Path], typer.Option(help="Word-vector directory (vectors.npy + vocab.tsv).")] = None,
    matrix: Annotated[Optional[Path], typer.Option(help="Any word matrix (.npy), e.g. an encoder's embedding table "
                                                        "after vocabulary expansion; rows follow --vocab.")] = None,
    vocab: Annotated[Optional[Path], typer.Option(help="vocab.tsv for --matrix.")] = None,
    k: Annotated[int, typer.Option(help="Neighbours per query.")] = 5,
) -> None:
    """Nearest words to each query word by cosine over a word matrix. With --wordvecs the queries are lower-cased
    when the corpus was (its meta.json's tokenizer), as every word of its table is."""
    from skipview.models.arrays import load_npy
    from skipview.models.text import Tokenizer
    from skipview.models.vocab import Vocab
    from skipview.platform.evaluation.neighbours import word_neighbours

    lowercase = False
    if wordvecs is not None:
        matrix, vocab = wordvecs / "vectors.npy", wordvecs / "vocab.tsv"
        meta = wordvecs / "meta.json"
        lowercase = meta.is_file() and Tokenizer.from_dict(json.loads(meta.read_text()).get("tokenizer", {})).lowercase
    if matrix is None or vocab is None:
        raise typer.BadParameter("give --wordvecs DIR, or --matrix FILE.npy with --vocab vocab.tsv")
    table = Vocab.load(vocab)
    words = {query: query.lower() if lowercase else query for query in queries}
    known = [word for word in dict.fromkeys(words.values()) if word in table]
    if not known:
        raise typer.BadParameter(f"none of {', '.join(queries)} is in the word table {vocab}")
    found = word_neighbours(table.words, load_npy(matrix, mmap="r"), known, k)
    for query in queries:      # a word the table lacks is said on its own line; the others still get answers
        word = words[query]
        typer.echo(f"{query}: " + (", ".join(f"{w} ({s:.2f})" for w, s in found[word]) if word in found
                                   else "not in the word table"))


def tsne(
    task: Annotated[str, typer.Argument(help="Task whose sentences are plotted, e.g. trec, subj, sickr.")],
    output: Annotated[Path, typer.Option(help="PNG file to write.")],
    model: ModelOpt = None, baseline: BaselineOpt = None, wordvecs: WordvecsOpt = None,
    senteval_dir: SentevalOpt = None,
    split: Annotated[Optional[str], typer.Option(help="Split to plot (default: train, or the task's only split).")]
    = None,
    limit: Annotated[int, typer.Option(help="Examples to plot (t-SNE is quadratic-ish).")] = 3000,
    seed: int = 0,
) -> None:
    """t-SNE of a task's sentence vectors coloured by label (pairs: [|u-v|, u*v], coloured by score)."""
    from skipview.platform.evaluation.datasets import load_task
    from skipview.platform.evaluation.tsne import plot_tsne, task_points

    encoder = build_encoder(model, baseline, wordvecs)
    data = load_task(task, senteval_dir)
    chosen = split or ("train" if "train" in data.splits else next(iter(data.splits)))
    vectors, labels = task_points(data, encoder, chosen, limit, seed)
    path = plot_tsne(vectors, labels, output, f"{task} ({chosen}), {_encoder_name(model, baseline)}",
                     data.classes, seed)
    typer.echo(f"t-SNE plot written to {path}")


def rank_images(
    train_images: Annotated[Path, typer.Option(help="Image features of the training images (.npy, one row each).")],
    train_captions: Annotated[Path, typer.Option(help="Lines 'image_row<TAB>caption' for the training images.")],
    dev_images: Annotated[Path, typer.Option()], dev_captions: Annotated[Path, typer.Option()],
    test_images: Annotated[Path, typer.Option()], test_captions: Annotated[Path, typer.Option()],
    model: ModelOpt = None, baseline: BaselineOpt = None, wordvecs: WordvecsOpt = None,
    dim: Annotated[int, typer.Option(help="Joint embedding size (paper: 1000).")] = 1000,
    margin: Annotated[float, typer.Option(help="Ranking margin alpha (paper: 0.2).")] = 0.2,
    contrastive: Annotated[int, typer.Option(help="Contrastive terms k per example (paper: 50).")] = 50,
    epochs: Annotated[int, typer.Option(help="Training epochs (paper: 15; best dev epoch kept).")] = 15,
    output: Annotated[Optional[Path], typer.Option(help="Write the metrics JSON here.")] = None,
) -> None:
    """Image-sentence ranking (skip-thought section 3.4): R@1/5/10 and median rank both ways."""
    import numpy as np

    from skipview.platform.evaluation.ranking import RankingSplit, read_captions, train_ranking

    encoder = build_encoder(model, baseline, wordvecs)

    def split(images: Path, captions: Path) -> RankingSplit:
        texts, owners = read_captions(str(captions))
        return RankingSplit(np.load(images), encoder.encode(texts, mode="unsupervised"), owners)

    metrics = train_ranking(split(train_images, train_captions), split(dev_images, dev_captions),
                            split(test_images, test_captions), dim=dim, margin=margin, contrastive=contrastive,
                            epochs=epochs)
    for key, value in sorted(metrics.items()):
        typer.echo(f"{key:28s} {value:8.2f}")
    if output is not None:
        write_json_aside(output, {"metrics": metrics, "encoder": _encoder_name(model, baseline)})


def register(app: typer.Typer) -> None:
    """Add this area's commands to the ``skipview`` app."""
    app.command("evaluate")(evaluate)
    app.command("mteb-sts")(mteb_sts)
    app.add_typer(neighbours_app, name="neighbours")
    app.command("tsne")(tsne)
    app.command("rank-images")(rank_images)
