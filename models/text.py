"""Sentence normalisation and tokenisation shared by corpus preparation and encoding.

Evaluation files arrive already tokenised in several dialects (SentEval's STS files are Moses-tokenised and
lower-cased: ``aren 't``, ``woman ' s``; MR/CR/SUBJ went through the PTB ``tokenizer.sed``: ``do n't``,
``` `` ```; raw corpus text is untokenised with curly quotes). A token the corpus side never produces is
out of vocabulary at test time, so both sides go through this one function, which maps every dialect to a
single canonical PTB-like form:

* ``don't`` / ``don 't`` / ``do n't``  ->  ``do n't``;  ``woman's`` / ``woman 's`` / ``woman ' s`` -> ``woman 's``
* all double quotes (``"``, `````, ``''``, curly) -> ``"``; curly apostrophes -> ``'``
* a trailing period is always its own token (``mr.`` -> ``mr .``) so Moses' non-breaking prefixes and the
  PTB script agree
* ``_emphasis_`` markers (Gutenberg) are dropped; lower-casing is on by default, as in skip-thought.

The function is idempotent: tokenising the space-joined output gives the same tokens, which is what makes
pre-tokenised evaluation text and raw corpus text meet.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass

_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
                         "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u2032": "'", "`": "'",
                         "\u2014": " -- ", "\u2013": " -- ", "_": " "})
_DOUBLE_QUOTE = re.compile(r"''|\"")
# n't in all three dialects: "don't", "don 't" (Moses), "do n't" (PTB; left alone: no letter touches the n)
_NEGATION = re.compile(r"(?<=\w)n\s?'t\b", re.IGNORECASE)
# clitics: "woman's", "woman 's", "woman ' s" (newer Moses)
_CLITIC = re.compile(r"(?<=\w)\s?'\s?(s|re|ll|ve|m|d)\b", re.IGNORECASE)
_TOKEN = re.compile(
    r"n't|'(?:s|re|ll|ve|m|d)\b"           # split-off contractions
    r"|\d+(?:[.,:]\d+)+"                   # 1,650  0.11  10:30
    r"|\w+(?:[-'/&.]\w+)*"                 # words, hyphenated words, u.s, o'clock, and/or
    r"|\.\.\.+|--+"                        # ellipsis, dash
    r"|[^\w\s]",                           # any other symbol on its own
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Tokenizer:
    """Canonical tokeniser; its settings are stored in ``meta.json`` and in every model directory."""

    lowercase: bool = True

    def __call__(self, text: str) -> list[str]:
        text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
        text = _DOUBLE_QUOTE.sub(' " ', text)
        text = _NEGATION.sub(" n't", text)
        text = _CLITIC.sub(r" '\1", text)
        if self.lowercase:
            text = text.lower()
        return _TOKEN.findall(text)

    def to_dict(self) -> dict:
        return {"name": "skipview-canonical-v1", **asdict(self)}

    @classmethod
    def from_dict(cls, settings: dict) -> "Tokenizer":
        settings = dict(settings)
        name = settings.pop("name", "skipview-canonical-v1")
        if name != "skipview-canonical-v1":
            raise ValueError(f"unknown tokenizer {name!r}: this version of skipview knows 'skipview-canonical-v1'")
        return cls(**settings)
