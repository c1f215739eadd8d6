"""``skipview data ...``: fetch raw data, prepare corpora, build word vectors.

Each command writes its output directory aside and renames it into place when complete, exits 0 on success,
1 on bad input (the message names the file), and 2 on bad usage (typer's convention).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Optional

import typer

from skipview.platform.errors import FetchError

app = typer.Typer(help="Fetch raw data, prepare corpora (sentence split, tokenise, vocabulary, token store) and "
                       "build word vectors aligned to a corpus vocabulary.", no_args_is_help=True)
log = logging.getLogger("skipview.data")


def _setup() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")


def _write_json(path: Optional[Path], content: dict) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")


def _fail(error: Exception) -> None:
    typer.echo(f"error: {error}", err=True)
    raise typer.Exit(1)


@app.command()
def prepare(
    corpus: Path = typer.Argument(..., help="Corpus directory (searched recursively) or a single file."),
    out: Path = typer.Argument(..., help="Prepared-corpus directory to create (tokens.bin, offsets.npy, "
                                         "doc_index.npy, vocab.tsv, meta.json)."),
    format: str = typer.Option("auto", help="books: .txt/.txt.gz, one document per file, blank-line paragraphs; "
                                            "jsonl: .jsonl/.jsonl.gz, one document per line; lines: one sentence "
                                            "per line, blank line between documents; auto: by file extension "
                                            "(.jsonl* -> jsonl, .txt* -> books)."),
    text_field: str = typer.Option("text", help="jsonl: the field holding the document text."),
    lowercase: bool = typer.Option(True, help="Lower-case (as skip-thought and SentEval's STS files)."),
    max_vocab: Optional[int] = typer.Option(None, show_default=False, help="Vocabulary size including the 4 "
                                            "specials; 0 = no limit; default 1,000,000, which bounds a corpus of "
                                            "any size as the papers' vocabularies were (PrepareOptions). Rarer words "
                                            "become <unk>. Ids are by frequency, so a trainer can also cut later."),
    min_count: int = typer.Option(1, help="Words seen fewer times become <unk>."),
    max_line_bytes: int = typer.Option(1 << 20, help="Longer lines are skipped (counted in meta.json)."),
    strict: bool = typer.Option(False, help="Stop with an error at the first bad input instead of skipping it."),
    workers: int = typer.Option(0, help="Tokeniser processes; 0 = one per available core. Does not change the "
                                        "output."),
    overwrite: bool = typer.Option(False, help="Replace OUT if it exists (the old one stays until the new one "
                                               "is complete)."),
    progress: bool = typer.Option(True, help="Show a progress bar (sentences/s) on stderr."),
    metrics: Optional[Path] = typer.Option(None, help="Also write the corpus statistics to this JSON file "
                                                      "(for DVC metrics)."),
) -> None:
    """Sentence-split, normalise and tokenise a raw corpus into a memory-mapped token store.

    Bad input (empty, binary or corrupt files, undecodable or over-long lines, bad JSON) is reported with the file
    and line, skipped and counted in meta.json["input"]["skipped"]; --strict turns it into an error. A missing path
    or a corpus with no sentence is always an error. Same input and options give byte-identical output.
    """
    _setup()
    from skipview.platform.data.prepare import PrepareOptions, corpus_statistics, prepare_corpus
    from skipview.platform.data.readers import BadInputError
    from skipview.platform.data.staging import OutputExistsError

    vocabulary_cap = PrepareOptions.max_vocab if max_vocab is None else max_vocab or None
    options = PrepareOptions(format=format, text_field=text_field, lowercase=lowercase, max_vocab=vocabulary_cap,
                             min_count=min_count, max_line_bytes=max_line_bytes, strict=strict)
    try:
        meta = prepare_corpus(corpus, out, options, workers=workers or None, overwrite=overwrite,
                              progress=progress)
    except (BadInputError, OutputExistsError) as error:
        _fail(error)
    _write_json(metrics, corpus_statistics(meta))


@app.command()
def wordvecs(
    prepared: Path = typer.Argument(..., help="Prepared-corpus directory (from `skipview data prepare`)."),
    out: Path = typer.Argument(..., help="Word-vector directory to create (vectors.npy, vocab.tsv, fasttext.bin, "
                                         "meta.json)."),
    pretrained: Optional[Path] = typer.Option(None, help="Import this .vec/.vec.gz text file or fastText .bin model "
                                                         "instead of training."),
    method: str = typer.Option("cbow", help="fastText training: cbow or skipgram."),
    dim: int = typer.Option(300, help="Vector size (the multi-view paper uses 300-d fastText)."),
    epochs: int = typer.Option(5, help="Passes over the corpus."),
    min_count: int = typer.Option(1, help="fastText min count (the corpus vocabulary is already cut by prepare)."),
    buckets: int = typer.Option(200_000, help="Character n-gram hash buckets. fastText's 2,000,000 make a dim-300 "
                                              ".bin ~2.4 GB; 200,000 suit corpora up to ~100M tokens."),
    minn: int = typer.Option(3, help="Shortest character n-gram (0 with maxn 0 disables subwords)."),
    maxn: int = typer.Option(6, help="Longest character n-gram."),
    window: int = typer.Option(5, help="Context window."),
    lr: float = typer.Option(0.05, help="Learning rate."),
    threads: int = typer.Option(0, help="Training threads; 0 = one per available core. fastText runs at least "
                                        "11: fasttext 0.9.3 leaves a tenth of its input matrix uninitialised (zero) "
                                        "per missing thread. Training is not bit-reproducible."),
    subword_oov: bool = typer.Option(False, help="Give vocabulary words that fastText's dictionary lacks their "
                                                 "subword vector instead of zeros (.bin models only)."),
    overwrite: bool = typer.Option(False, help="Replace OUT if it exists."),
    progress: bool = typer.Option(True, help="Show progress on stderr."),
    metrics: Optional[Path] = typer.Option(None, help="Also write coverage statistics to this JSON file."),
) -> None:
    """Train fastText on a prepared corpus, or import pretrained vectors, into a matrix aligned to its vocabulary.

    Row i of vectors.npy is word i of the corpus vocab.tsv; words with no vector (and the specials) are zero rows,
    counted in meta.json (words_without_vector, zero_rows, coverage).
    """
    _setup()
    from skipview.platform.data.readers import BadInputError
    from skipview.platform.data.staging import OutputExistsError
    from skipview.platform.data.wordvecs import FastTextOptions, import_wordvecs, train_wordvecs, wordvec_statistics

    try:
        if pretrained is not None:
            meta = import_wordvecs(prepared, out, pretrained, subword_oov=subword_oov, overwrite=overwrite)
        else:
            options = FastTextOptions(method=method, dim=dim, epochs=epochs, min_count=min_count, buckets=buckets,
                                      minn=minn, maxn=maxn, window=window, lr=lr, threads=threads)
            meta = train_wordvecs(prepared, out, options, subword_oov=subword_oov, overwrite=overwrite,
                                  progress=progress)
    except (BadInputError, OutputExistsError, FileNotFoundError, ValueError) as error:
        _fail(error)
    _write_json(metrics, wordvec_statistics(meta))


@app.command()
def cut(
    prepared: Path = typer.Argument(..., help="Prepared-corpus directory (from `skipview data prepare`)."),
    out: Path = typer.Argument(..., help="Prepared-corpus directory to create: the cut."),
    sentences: int = typer.Option(..., help="At least this many sentences, of whole documents; 0 = every "
                                            "document."),
    seed: int = typer.Option(0, help="Seed of the documents' order; cuts of one corpus with one seed are nested."),
    overwrite: bool = typer.Option(False, help="Replace OUT if it exists."),
    metrics: Optional[Path] = typer.Option(None, help="Also write the cut's statistics to this JSON file."),
    rest: bool = typer.Option(False, "--rest", help="Write the documents the cut leaves out instead: a held-out "
                                                    "slice no model trained on the cut has read."),
) -> None:
    """Cut a prepared corpus to its first documents in an order drawn from --seed, until --sentences is reached:
    each cut is a prefix of every larger cut of the same seed (a learning curve's nested corpora). The vocabulary
    is counted again on the cut; same input, size and seed give byte-identical output."""
    _setup()
    from skipview.platform.data.cut import cut_corpus, cut_statistics
    from skipview.platform.data.readers import BadInputError
    from skipview.platform.data.staging import OutputExistsError

    try:
        meta = cut_corpus(prepared, out, sentences, seed, overwrite=overwrite, rest=rest)
    except (BadInputError, OutputExistsError) as error:
        _fail(error)
    _write_json(metrics, cut_statistics(meta))


@app.command()
def fetch(
    source: str = typer.Argument(..., help="Local directory, local .tar.gz/.tgz/.tar, or http(s) URL of one; "
                                           "relative to --root if given."),
    out: Path = typer.Argument(..., help="Directory to create with the fetched data."),
    root: Optional[str] = typer.Option(None, help="Data root that a relative SOURCE is taken from: a directory "
                                                  "(ROOT/SOURCE) or an http(s) URL (ROOT/SOURCE.tar.gz)."),
    verify: bool = typer.Option(True, help="Check the files listed in a SHA256SUMS file, if the data has one."),
    overwrite: bool = typer.Option(False, help="Replace OUT if it exists."),
    progress: bool = typer.Option(True, help="Show download progress on stderr."),
) -> None:
    """Copy or download a raw corpus (or the SentEval data) into OUT, checking SHA256SUMS when present.

    An archive holding one top-level folder is unpacked to that folder's content.
    """
    _setup()
    from skipview.platform.data.fetch import fetch as fetch_data
    from skipview.platform.data.staging import OutputExistsError

    try:
        fetch_data(source, out, root=root, verify=verify, overwrite=overwrite, progress=progress)
    except (FetchError, OutputExistsError) as error:
        _fail(error)
