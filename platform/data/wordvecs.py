"""``skipview data wordvecs``: a word-vector matrix aligned to a prepared corpus's vocabulary.

Output directory (the contract other parts code against):

* ``vectors.npy`` -- float32, ``len(vocab) x dim``; row i is word i of the corpus ``vocab.tsv``; zeros for words
  with no vector, and for the specials (``<pad> <unk> <bos> <eos>``), as in the multi-view paper ("words that are
  not in the FastText's vocabulary are fixed to 0 vectors").
* ``vocab.tsv`` -- a copy of the corpus vocabulary, so the directory is self-contained.
* ``fasttext.bin`` -- the fastText model (for out-of-vocabulary lookup and vocabulary expansion); absent only when
  the vectors were imported from a ``.vec`` text file.
* ``meta.json`` -- dim, method, source, coverage, zero rows, the fastText settings, and the tokenizer settings copied
  from the corpus (whoever looks words up must tokenise the same way).

Vectors come from fastText trained on the prepared sentences (``cbow`` or ``skipgram``), or from a pretrained
``.vec`` (text) or ``.bin`` (fastText model) file. fastText is used for training and for word vectors only:
its ``predict`` is broken under NumPy 2 (fasttext 0.9.3) and is never called.

Hash buckets: fastText stores one ``dim``-vector per character-n-gram bucket; its default 2,000,000 buckets make a
dim-300 ``.bin`` about 2.4 GB whatever the corpus size. The default here, 200,000, keeps a dim-300 model for a
150k-word corpus near 0.6 GB; with ~25M training tokens collisions stay rare enough that the subword vectors still
help OOV lookup. Raise it for corpora of billions of tokens.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import fasttext
import numpy as np
from tqdm import tqdm

from skipview.models.corpus import PreparedCorpus
from skipview.models.vocab import SPECIALS, Vocab
from skipview.platform.data.readers import BadInputError
from skipview.platform.data.staging import staged_directory
from skipview.platform.processes import in_child_process

log = logging.getLogger("skipview.data")

METHODS = ("cbow", "skipgram")
# fasttext 0.9.3 initialises its input matrix in ten blocks, one per training thread (DenseMatrix::uniform): with
# fewer threads the remaining rows (measured here: 90% with 1 thread, 80% with 2) start at zero instead of
# uniform noise. Thread 10 covers the rounding remainder, so 11 threads initialise every row; extra threads on a
# small machine only time-share the cores (Hogwild training is not bit-reproducible with more than one anyway).
_FASTTEXT_MIN_THREADS = 11
_SENTENCES_PER_WRITE = 1 << 16
_HASH_BLOCK_BYTES = 1 << 24     # rows hashed and checked at a time


@dataclass(frozen=True)
class FastTextOptions:
    method: str = "cbow"
    dim: int = 300
    epochs: int = 5
    min_count: int = 1        # the corpus vocabulary is already cut by `prepare`; 1 keeps every word of it
    buckets: int = 200_000
    minn: int = 3
    maxn: int = 6
    window: int = 5
    lr: float = 0.05
    threads: int = 0          # 0 = one per available core; fastText itself always runs >= 11 (see above)


def train_wordvecs(prepared: str | Path, out: str | Path, options: FastTextOptions = FastTextOptions(),
                   subword_oov: bool = False, overwrite: bool = False, progress: bool = True) -> dict:
    if options.method not in METHODS:
        raise ValueError(f"unknown method {options.method!r}; choose one of {', '.join(METHODS)}")
    corpus = PreparedCorpus(prepared)
    threads = max(options.threads or len(os.sched_getaffinity(0)), _FASTTEXT_MIN_THREADS)
    with staged_directory(out, overwrite=overwrite) as folder:
        text = folder / "train.txt"
        _write_sentences(corpus, text, progress)
        log.info("training fastText %s, dim %d, %d epochs, %d buckets, %d thread(s)", options.method, options.dim,
                 options.epochs, options.buckets, threads)
        # in a child process, which a stop ends: fastText's C++ training holds the main thread for hours at
        # BookCorpus size, and Python would run the SIGTERM handler only after it returned (platform/stopping.py)
        in_child_process(_train_fasttext, str(text), str(folder / "fasttext.bin"), prepared, dict(
            model=options.method, dim=options.dim, epoch=options.epochs, minCount=options.min_count,
            bucket=options.buckets, minn=options.minn, maxn=options.maxn, ws=options.window, lr=options.lr,
            thread=threads, verbose=2 if progress else 0))
        text.unlink()
        model = fasttext.load_model(str(folder / "fasttext.bin"))
        vectors, known = _vectors_from_model(model, corpus.vocab, subword_oov)
        source = {"kind": "trained", "prepared": _corpus_identity(corpus)}
        meta = _finish(folder, corpus, vectors, known, options.method, source,
                       {**asdict(options), "threads": threads, "subword_oov": subword_oov})
    return meta


def _train_fasttext(text: str, model_path: str, prepared: str | Path, settings: dict) -> None:
    """The child process's work: train fastText on ``text`` and save the model to ``model_path``."""
    try:
        model = fasttext.train_unsupervised(text, **settings)
    except RuntimeError as error:  # fastText's "Encountered NaN." (seen on tiny corpora): say what to try
        raise ValueError(f"{prepared}: fastText training failed ({error}); try a lower --lr") from None
    model.save_model(model_path)


def import_wordvecs(prepared: str | Path, out: str | Path, pretrained: str | Path, subword_oov: bool = False,
                    overwrite: bool = False) -> dict:
    """Align pretrained vectors (``.vec`` / ``.vec.gz`` text, or a fastText ``.bin``) to the corpus vocabulary."""
    corpus = PreparedCorpus(prepared)
    pretrained = Path(pretrained)
    if not pretrained.is_file():
        raise BadInputError(f"{pretrained}: no such file")
    with staged_directory(out, overwrite=overwrite) as folder:
        source = {"kind": "pretrained", "file": pretrained.name, "sha256": _sha256(pretrained)}
        if pretrained.suffix == ".bin":
            model = fasttext.load_model(str(pretrained))
            shutil.copyfile(pretrained, folder / "fasttext.bin")
            vectors, known = _vectors_from_model(model, corpus.vocab, subword_oov)
            method, settings = "import-bin", {"subword_oov": subword_oov}
        else:
            if subword_oov:
                raise BadInputError(f"{pretrained}: --subword-oov needs a fastText .bin model, a .vec has no subwords")
            vectors, known = _vectors_from_vec(pretrained, corpus.vocab, corpus.tokenizer.lowercase)
            method, settings = "import-vec", {}
        meta = _finish(folder, corpus, vectors, known, method, source, settings)
    return meta


def _write_sentences(corpus: PreparedCorpus, path: Path, progress: bool) -> None:
    """The prepared sentences as text, one per line, for fastText (which reads only files)."""
    words = np.asarray(corpus.vocab.words, dtype=object)
    offsets = corpus.offsets
    with open(path, "w", encoding="utf-8") as f, \
            tqdm(total=corpus.num_sentences, desc="write text", unit=" sent", unit_scale=True,
                 disable=not progress, mininterval=1.0) as bar:
        for first in range(0, corpus.num_sentences, _SENTENCES_PER_WRITE):
            last = min(first + _SENTENCES_PER_WRITE, corpus.num_sentences)
            base = int(offsets[first])
            tokens = words[np.asarray(corpus.tokens[base: int(offsets[last])])].tolist()
            bounds = (np.asarray(offsets[first: last + 1]) - base).tolist()
            f.write("".join(" ".join(tokens[a:b]) + "\n" for a, b in zip(bounds, bounds[1:])))
            bar.update(last - first)


def _vectors_from_model(model, vocab: Vocab, subword_oov: bool) -> tuple[np.ndarray, np.ndarray]:
    vectors = np.zeros((len(vocab), model.get_dimension()), dtype=np.float32)
    known = np.zeros(len(vocab), dtype=bool)
    for i in range(len(SPECIALS), len(vocab)):
        word = vocab.words[i]
        if subword_oov or model.get_word_id(word) >= 0:
            vectors[i] = model.get_word_vector(word)
            known[i] = bool(np.any(vectors[i]))  # an OOV word with no n-gram in the model stays a zero row
    return vectors, known


def _vectors_from_vec(path: Path, vocab: Vocab, lowercase: bool) -> tuple[np.ndarray, np.ndarray]:
    """Stream a .vec file, keeping only rows of vocabulary words. An exact match wins; for a lower-cased
    vocabulary the first (most frequent) case variant is used otherwise (``Paris`` for ``paris``)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    vectors: np.ndarray | None = None
    known = np.zeros(len(vocab), dtype=bool)
    exact = np.zeros(len(vocab), dtype=bool)
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for line_no, line in enumerate(f, 1):
            parts = line.rstrip().split(" ")
            if line_no == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # "count dim" header of fastText .vec files; GloVe-style files have none
            if len(parts) < 2:
                continue
            if vectors is None:
                vectors = np.zeros((len(vocab), len(parts) - 1), dtype=np.float32)
            if len(parts) - 1 != vectors.shape[1]:
                raise BadInputError(f"{path}:{line_no}: {len(parts) - 1} numbers, expected {vectors.shape[1]}")
            word = parts[0]
            i = vocab.index.get(word)
            is_exact = i is not None
            if i is None and lowercase:
                i = vocab.index.get(word.lower())
            if i is None or i < len(SPECIALS) or exact[i] or (known[i] and not is_exact):
                continue
            try:
                vectors[i] = np.asarray(parts[1:], dtype=np.float32)
            except ValueError:
                raise BadInputError(f"{path}:{line_no}: not a number in the vector of {word!r}") from None
            known[i], exact[i] = True, is_exact
    if vectors is None:
        raise BadInputError(f"{path}: no vectors found")
    return vectors, known


def _finish(folder: Path, corpus: PreparedCorpus, vectors: np.ndarray, known: np.ndarray, method: str,
            source: dict, settings: dict) -> dict:
    digest = _finite_table_sha256(vectors, method)
    np.save(folder / "vectors.npy", vectors)
    shutil.copyfile(corpus.path / "vocab.tsv", folder / "vocab.tsv")
    counts = corpus.vocab.counts[len(SPECIALS):]
    words = len(corpus.vocab) - len(SPECIALS)
    covered = int(known[len(SPECIALS):].sum())
    meta = {
        "dim": int(vectors.shape[1]),
        "method": method,
        "source": source,
        "vocab_size": len(corpus.vocab),
        "words_with_vector": covered,
        "words_without_vector": words - covered,
        "coverage": round(covered / max(words, 1), 6),
        "token_coverage": round(float(counts[known[len(SPECIALS):]].sum() / max(counts.sum(), 1)), 6),
        "zero_rows": int((~vectors.any(axis=1)).sum()),
        "settings": settings,
        "tokenizer": corpus.meta["tokenizer"],
        # fastText trains Hogwild-style on several threads, so two runs with the same settings give different
        # vectors: this hash is what tells them apart (tracking.lineage fingerprints the vectors by it)
        "vectors_sha256": digest,
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    log.info("word vectors: dim %d, %d of %d words have a vector (coverage %.4f, %d zero rows incl. specials)",
             meta["dim"], covered, words, meta["coverage"], meta["zero_rows"])
    return meta


def _finite_table_sha256(vectors: np.ndarray, method: str) -> str:
    """SHA-256 of the table's bytes (row-major float32), checked finite on the way, in blocks of rows: hashing
    ``tobytes()`` copied the whole table (1.2 GB at a million words) and ``isfinite`` made a mask of a quarter of
    it; both in blocks add a few MB whatever the vocabulary size."""
    vectors = np.ascontiguousarray(vectors)
    digest = hashlib.sha256()
    rows = max(_HASH_BLOCK_BYTES // max(vectors[:1].nbytes, 1), 1)
    for first in range(0, len(vectors), rows):
        block = vectors[first: first + rows]
        if not np.isfinite(block).all():
            raise ValueError(f"{method}: non-finite values in the word vectors (diverged training?)")
        digest.update(memoryview(block))    # the rows' own buffer, no copy
    return digest.hexdigest()


def wordvec_statistics(meta: dict) -> dict:
    keys = ("dim", "vocab_size", "words_with_vector", "words_without_vector", "coverage", "token_coverage",
            "zero_rows")
    return {k: meta[k] for k in keys}


def _corpus_identity(corpus: PreparedCorpus) -> dict:
    return {"input_sha256": corpus.meta["input"]["sha256"], "vocab_sha256": _sha256(corpus.path / "vocab.tsv"),
            "tokens": int(corpus.meta["tokens"])}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
