"""Reading the ``.npy`` files of the data contracts (a corpus's offsets, word vectors): a damaged one is refused in
one line that names it and says how to make it again, instead of NumPy's bare ``EOF: reading array header``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np


def load_npy(path: str | Path, *, mmap: Literal["r", "c"] | None = None, remake: str = "") -> np.ndarray:
    """The array in ``path``, memory-mapped when ``mmap`` is a NumPy ``mmap_mode`` ("r" read-only, "c" copy-on-write);
    ``remake`` says which command writes it again.
    A missing file raises ``FileNotFoundError`` as before; anything NumPy cannot read raises ``ValueError``."""
    try:
        return np.load(path, mmap_mode=mmap, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (ValueError, EOFError, OSError) as error:
        # a cut file fails in the header (EOF), in its data (mmap length, reshape) or as "pickled data"
        hint = f"; make it again with {remake}" if remake else ""
        raise ValueError(f"{path}: not a readable NumPy array, damaged or cut short ({error}){hint}") from error
