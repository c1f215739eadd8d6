"""Raw corpus readers: turn the files of a corpus into a stream of text pieces, with bad input accounted for.

Three layouts (``--format``):

* ``books``  -- ``.txt`` / ``.txt.gz``, one document per file; hard-wrapped lines are joined into paragraphs,
  paragraphs are separated by blank lines (Project Gutenberg style).
* ``jsonl``  -- ``.jsonl`` / ``.jsonl.gz``, one JSON object (document) per line; the text field (``--text-field``)
  holds paragraphs separated by ``\\n``.
* ``lines``  -- one sentence per line, blank lines between documents (BookCorpus style); no sentence splitting.

``auto`` picks ``jsonl`` for ``.jsonl*`` files and ``books`` for ``.txt*`` files. A piece is one paragraph (or one
sentence for ``lines``) plus a flag saying whether it starts a new document.

Bad input never stops the run silently and never leaks into the output: each case below is logged with the file
(and line) it came from, counted under its name in ``meta.json["skipped"]``, and skipped; with ``strict`` it raises
:class:`BadInputError` instead (the CLI exits non-zero).

=================  ==========================================================================================
``empty_file``     the file has no non-blank line
``binary_file``    a NUL byte in the first 8 KiB (after decompression): not a text file
``corrupt_file``   a ``.gz`` that is not gzip or is truncated (a truncated file keeps the lines read before the
                   damaged 1 MiB block)
``undecodable``    a line that is not valid UTF-8 (the line is dropped; it also ends the current paragraph)
``long_line``      a line longer than ``max_line_bytes`` (read and dropped in bounded chunks, never held whole)
``bad_json``       a ``jsonl`` line that is not a JSON object
``missing_text``   a ``jsonl`` object without a string in the text field
=================  ==========================================================================================
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("skipview.data")

FORMATS = ("auto", "books", "jsonl", "lines")
_BINARY_SNIFF_BYTES = 8192
_MESSAGES_PER_FILE_AND_REASON = 3   # the rest of a flood of bad lines is summarised, not printed line by line


class BadInputError(ValueError):
    """Bad input found while ``strict`` (or input that can never be prepared: missing path, empty corpus)."""


@dataclass(frozen=True)
class Piece:
    text: str
    new_document: bool
    is_sentence: bool = False   # already one sentence (``lines`` format): no sentence splitting


@dataclass
class SourceFile:
    path: Path
    name: str       # relative to the corpus root: what messages and meta.json show
    format: str


@dataclass
class InputReport:
    """What was read: per-file checksums and everything skipped. Goes into ``meta.json``."""

    strict: bool = False
    skipped: Counter = field(default_factory=Counter)
    skipped_files: list[dict] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)
    text_bytes: int = 0
    _printed: Counter = field(default_factory=Counter)

    def skip(self, reason: str, file: str, detail: str, line: int | None = None, whole_file: bool = False) -> None:
        where = f"{file}:{line}" if line is not None else file
        message = f"{where}: {detail}"
        if self.strict:
            raise BadInputError(f"{message} (--strict: stopping; without --strict this is skipped as '{reason}')")
        self.skipped[reason] += 1
        if whole_file:
            self.skipped_files.append({"file": file, "reason": reason})
        self._printed[file, reason] += 1
        if self._printed[file, reason] <= _MESSAGES_PER_FILE_AND_REASON:
            log.warning("skipped (%s) %s", reason, message)
        elif self._printed[file, reason] == _MESSAGES_PER_FILE_AND_REASON + 1:
            log.warning("skipped (%s) %s: further '%s' messages for this file are not shown", reason, file, reason)

    def to_dict(self) -> dict:
        digest = hashlib.sha256()
        for f in self.files:
            digest.update(f"{f['file']}\t{f['sha256']}\n".encode())
        return {
            "files": len(self.files),
            "file_bytes": sum(f["bytes"] for f in self.files),
            "text_bytes": self.text_bytes,
            "sha256": digest.hexdigest(),  # over the sorted (file, sha256) list: one number for the whole corpus
            "per_file": self.files,
            "skipped": dict(sorted(self.skipped.items())),
            "skipped_files": self.skipped_files,
        }


def find_sources(corpus: str | Path, fmt: str = "auto") -> list[SourceFile]:
    """The corpus files in a fixed (sorted) order; ``corpus`` is a directory or a single file."""
    if fmt not in FORMATS:
        raise BadInputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    root = Path(corpus)
    if not root.exists():
        raise BadInputError(f"{root}: no such file or directory")
    candidates = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    sources = []
    for path in candidates:
        name = path.name if path == root else path.relative_to(root).as_posix()
        file_format = _format_of(path, fmt)
        if file_format is not None:
            sources.append(SourceFile(path, name, file_format))
    if not sources:
        raise BadInputError(f"{root}: no corpus files found (expected .txt, .txt.gz, .jsonl or .jsonl.gz)")
    return sources


def _format_of(path: Path, fmt: str) -> str | None:
    suffix = path.name.removesuffix(".gz").rsplit(".", 1)[-1] if "." in path.name else ""
    if suffix == "jsonl":
        return "jsonl" if fmt in ("auto", "jsonl") else None
    if suffix == "txt":
        return {"auto": "books", "jsonl": None}.get(fmt, fmt)
    return None


def read_pieces(sources: list[SourceFile], report: InputReport, text_field: str = "text",
                max_line_bytes: int = 1 << 20) -> Iterator[Piece]:
    for source in sources:
        lines = _read_lines(source, report, max_line_bytes)
        if source.format == "books":
            yield from _book_paragraphs(lines)
        elif source.format == "jsonl":
            yield from _jsonl_paragraphs(lines, source.name, text_field, report)
        else:
            yield from _sentence_lines(lines)


class _HashingReader(io.RawIOBase):
    """Raw file reader that hashes the bytes as they go by, so the source checksum costs no second read."""

    def __init__(self, path: Path):
        self._file = open(path, "rb")
        self.sha256 = hashlib.sha256()
        self.bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._file.readinto(buffer)
        self.sha256.update(memoryview(buffer)[:n])
        self.bytes += n
        return n

    def close(self) -> None:
        self._file.close()
        super().close()


def _read_lines(source: SourceFile, report: InputReport, max_line_bytes: int) -> Iterator[tuple[int, str | None]]:
    """(line number, text) for every line; text is None where a bad line was dropped (a paragraph break)."""
    raw = _HashingReader(source.path)
    stream = io.BufferedReader(raw, buffer_size=1 << 20)
    if source.path.name.endswith(".gz"):
        stream = io.BufferedReader(gzip.GzipFile(fileobj=stream, mode="rb"), buffer_size=1 << 20)
    try:
        try:
            head = stream.peek(_BINARY_SNIFF_BYTES)[:_BINARY_SNIFF_BYTES]
        except (gzip.BadGzipFile, EOFError, zlib.error) as error:
            report.skip("corrupt_file", source.name, f"not a readable gzip file ({error})", whole_file=True)
            return
        if not head.strip():
            report.skip("empty_file", source.name, "file is empty", whole_file=True)
            return
        if b"\x00" in head:
            report.skip("binary_file", source.name, "binary file (NUL bytes in the first 8 KiB)", whole_file=True)
            return
        line_no = 0
        try:
            while True:
                line = stream.readline(max_line_bytes + 1)
                if not line:
                    break
                line_no += 1
                report.text_bytes += len(line)
                if len(line) > max_line_bytes:
                    while line and not line.endswith(b"\n"):
                        line = stream.readline(1 << 20)
                        report.text_bytes += len(line)
                    report.skip("long_line", source.name, f"line longer than {max_line_bytes} bytes", line_no)
                    yield line_no, None
                    continue
                try:
                    text = line.decode("utf-8")
                except UnicodeDecodeError as error:
                    report.skip("undecodable", source.name,
                                f"invalid UTF-8 at byte {error.start} of the line: {line[error.start:error.start + 4]!r}",
                                line_no)
                    yield line_no, None
                    continue
                if line_no == 1:
                    text = text.removeprefix("\ufeff")
                yield line_no, text.rstrip("\r\n")
        except (EOFError, zlib.error, gzip.BadGzipFile) as error:
            report.skip("corrupt_file", source.name, f"truncated or corrupt gzip after line {line_no} ({error})",
                        whole_file=True)
            return
        report.files.append({"file": source.name, "bytes": raw.bytes, "sha256": raw.sha256.hexdigest()})
    finally:
        stream.close()


def _book_paragraphs(lines: Iterator[tuple[int, str | None]]) -> Iterator[Piece]:
    paragraph: list[str] = []
    first = True
    for _, text in lines:
        if text is not None and text.strip():
            paragraph.append(text.strip())
            continue
        if paragraph:
            yield Piece(" ".join(paragraph), first)
            first, paragraph = False, []
    if paragraph:
        yield Piece(" ".join(paragraph), first)


def _jsonl_paragraphs(lines, file: str, text_field: str, report: InputReport) -> Iterator[Piece]:
    for line_no, line in lines:
        if line is None or not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            report.skip("bad_json", file, f"not valid JSON ({error.msg} at column {error.colno})", line_no)
            continue
        if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
            report.skip("missing_text", file, f"no string field {text_field!r} (choose another with --text-field)",
                        line_no)
            continue
        first = True
        for paragraph in record[text_field].split("\n"):
            if paragraph.strip():
                yield Piece(paragraph.strip(), first)
                first = False


def _sentence_lines(lines) -> Iterator[Piece]:
    new_document = True
    for _, text in lines:
        if text is None:
            continue
        if not text.strip():
            new_document = True
            continue
        yield Piece(text.strip(), new_document, is_sentence=True)
        new_document = False
