"""`skipview data wordvecs`: the matrix contract (row i = word i, zeros where no vector), training and imports."""

from __future__ import annotations

import hashlib
import json
import shutil

import fasttext
import numpy as np
import pytest

from skipview.models.vocab import SPECIALS, Vocab
from skipview.platform.data.prepare import prepare_corpus
from skipview.platform.data.readers import BadInputError
from skipview.platform.data.wordvecs import FastTextOptions, import_wordvecs, train_wordvecs

TINY = FastTextOptions(dim=8, epochs=2, buckets=1000, threads=1)


@pytest.fixture
def prepared(books_corpus, tmp_path):
    prepare_corpus(books_corpus, tmp_path / "prepared", progress=False)
    return tmp_path / "prepared"


@pytest.fixture
def trained(prepared, tmp_path):
    train_wordvecs(prepared, tmp_path / "vectors", TINY, progress=False)
    return tmp_path / "vectors"


def test_trained_matrix_rows_are_the_model_vectors_of_the_vocab_words(prepared, trained):
    vocab = Vocab.load(prepared / "vocab.tsv")
    vectors = np.load(trained / "vectors.npy")
    model = fasttext.load_model(str(trained / "fasttext.bin"))
    assert vectors.dtype == np.float32 and vectors.shape == (len(vocab), 8)
    assert (trained / "vocab.tsv").read_bytes() == (prepared / "vocab.tsv").read_bytes()
    assert not vectors[: len(SPECIALS)].any()
    for i, word in enumerate(vocab.words[len(SPECIALS):], start=len(SPECIALS)):
        np.testing.assert_array_equal(vectors[i], model.get_word_vector(word))
    # fastText saw exactly the prepared sentences: its dictionary is the corpus vocabulary
    assert set(model.get_words()) - {"</s>"} == set(vocab.words[len(SPECIALS):])
    meta = json.loads((trained / "meta.json").read_text())
    assert meta["method"] == "cbow" and meta["dim"] == 8 and meta["coverage"] == 1.0
    assert meta["zero_rows"] == len(SPECIALS) and meta["words_without_vector"] == 0
    assert meta["settings"]["buckets"] == 1000
    assert meta["tokenizer"] == json.loads((prepared / "meta.json").read_text())["tokenizer"]
    assert meta["vectors_sha256"] == hashlib.sha256(vectors.tobytes()).hexdigest()      # tells fastText runs apart


def test_every_row_of_the_fasttext_input_matrix_is_initialised(prepared, tmp_path):
    """fasttext 0.9.3 initialises only threads/10 of its input matrix; with lr 0 the saved matrix is the init."""
    train_wordvecs(prepared, tmp_path / "init", FastTextOptions(dim=8, epochs=1, buckets=1000, lr=0.0, threads=1),
                   progress=False)
    matrix = fasttext.load_model(str(tmp_path / "init" / "fasttext.bin")).get_input_matrix()
    assert matrix.shape[0] > 1000 and np.abs(matrix).min(axis=1).min() > 0


def test_import_vec_exact_match_beats_case_variant_and_missing_words_are_zero(prepared, tmp_path):
    vocab = Vocab.load(prepared / "vocab.tsv")
    vec = tmp_path / "pretrained.vec"
    vec.write_text("4 3\n"
                   "The 1 1 1\n"           # case variant of "the", seen first
                   "the 2 2 2\n"           # exact match: wins
                   "Smith 3 3 3\n"         # only a case variant of "smith": used
                   "zebra 4 4 4\n")        # not in the vocabulary: ignored
    meta = import_wordvecs(prepared, tmp_path / "out", vec)
    vectors = np.load(tmp_path / "out" / "vectors.npy")
    assert vectors[vocab.index["the"]].tolist() == [2, 2, 2]
    assert vectors[vocab.index["smith"]].tolist() == [3, 3, 3]
    assert meta["words_with_vector"] == 2 and meta["zero_rows"] == len(vocab) - 2
    assert meta["words_without_vector"] == len(vocab) - len(SPECIALS) - 2
    assert meta["method"] == "import-vec" and not (tmp_path / "out" / "fasttext.bin").exists()
    the, smith = vocab.counts[vocab.index["the"]], vocab.counts[vocab.index["smith"]]
    assert meta["token_coverage"] == pytest.approx((the + smith) / vocab.counts.sum(), abs=1e-6)


def test_import_vec_with_a_bad_row_names_the_line(prepared, tmp_path):
    vec = tmp_path / "bad.vec"
    vec.write_text("the 1 2 3\nsmith 1 2\n")
    with pytest.raises(BadInputError, match=r"bad.vec:2: 2 numbers, expected 3"):
        import_wordvecs(prepared, tmp_path / "out", vec)
    assert not (tmp_path / "out").exists()


def test_import_bin_copies_the_model_and_optionally_fills_oov_from_subwords(prepared, trained, tmp_path):
    model_path = tmp_path / "small.bin"
    shutil.copyfile(trained / "fasttext.bin", model_path)
    import_wordvecs(prepared, tmp_path / "bin", model_path)
    np.testing.assert_array_equal(np.load(tmp_path / "bin" / "vectors.npy"), np.load(trained / "vectors.npy"))
    assert (tmp_path / "bin" / "fasttext.bin").read_bytes() == model_path.read_bytes()

    # a corpus with words the model never saw: zeros by default, subword vectors on request
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_text("The smiths wandered home.\n")
    prepare_corpus(other, tmp_path / "other_prepared", progress=False)
    zero = import_wordvecs(tmp_path / "other_prepared", tmp_path / "zero", model_path)
    filled = import_wordvecs(tmp_path / "other_prepared", tmp_path / "filled", model_path, subword_oov=True)
    assert zero["words_without_vector"] > 0 and filled["words_without_vector"] == 0
    model = fasttext.load_model(str(model_path))
    vocab = Vocab.load(tmp_path / "other_prepared" / "vocab.tsv")
    np.testing.assert_array_equal(np.load(tmp_path / "filled" / "vectors.npy")[vocab.index["wandered"]],
                                  model.get_word_vector("wandered"))


def test_table_hash_in_blocks_is_the_hash_of_its_bytes_and_checks_every_block(monkeypatch):
    """The hash and the finiteness check go block by block (no copy of the table): the digest must not depend on
    the block size, and a non-finite value in the last block must still be found."""
    from skipview.platform.data import wordvecs

    table = np.random.default_rng(0).standard_normal((37, 5)).astype(np.float32)
    whole = hashlib.sha256(table.tobytes()).hexdigest()
    for block_bytes in (1, 3 * 5 * 4, 1 << 20):          # one row, three rows, all rows at a time
        monkeypatch.setattr(wordvecs, "_HASH_BLOCK_BYTES", block_bytes)
        assert wordvecs._finite_table_sha256(table, "test") == whole
    table[-1, -1] = np.inf
    with pytest.raises(ValueError, match="non-finite"):
        wordvecs._finite_table_sha256(table, "test")
