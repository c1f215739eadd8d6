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

app = typer.Typer(help="Fetch raw data, prepare corpora (sentence split, tokenise, vocabulary, token store) and "
                       "build word vectors aligned to a corpus vocabulary.", no_args_is_help=True)
log = logging.getLogger("skipview.data")


def _setup_logging() -> None:
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
    max_vocab: int = typer.Option(0, help="Vocabulary size including the 4 specials; 0 = no limit. Rarer words "
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
    _setup_logging()
    from skipview.platform.data.prepare import PrepareOptions, corpus_statistics, prepare_corpus
    from skipview.platform.data.readers import BadInputError
    from skipview.platform.data.staging import OutputExistsError

    options = PrepareOptions(format=format, text_field=text_field, lowercase=lowercase,
                             max_vocab=max_vocab or None, min_count=min_count, max_line_bytes=max_line_bytes,
                             strict=strict)
    try:
        meta = prepare_corpus(corpus, out, options, workers=workers or None, overwrite=overwrite,
                              progress=progress)
    except (BadInputError, OutputExistsError) as error:
        _fail(error)
    _write_json(metrics, corpus_statistics(meta))
