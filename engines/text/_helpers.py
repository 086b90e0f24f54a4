"""Helpers shared by the text engines: rounding, word checks, phrase patterns, sentences, data."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from engines import _data, _text
from engines.base import EngineError

Match = dict[str, Any]

_DATA = Path(__file__).with_name("data")


def load_data(name: str) -> Any:
    """A file of ``engines/text/data``, read by ``engines._data.load_data``."""
    return _data.load_data(_DATA / name)


def _round(value: float, digits: int = 2) -> float:
    return round(float(value), digits)


def _per_100(count: int, total: int) -> float:
    return _round(count * 100 / total) if total else 0.0


def _require_words(text: str) -> list[str]:
    found = _text.words(text)
    if not found:
        raise EngineError("The text has no words to analyse.")
    return found


def _capitalize(word: str) -> str:
    """The first letter in title case, the rest as written. Title case, not upper case: a
    ligature or digraph opens a word as "Fi" ("ﬁ"), "ǅ" ("ǆ"), where upper case is "FI", "Ǆ"."""
    return word[:1].title() + word[1:]


def _normal_word(word: str) -> str:
    return word.replace("’", "'").lower()


def _phrase_regex(phrases: Iterable[str]) -> re.Pattern[str]:
    """One case-insensitive pattern for whole phrases: longest first, flexible spacing."""

    def piece(phrase: str) -> str:
        escaped = re.escape(phrase.lower())
        return escaped.replace(r"\ ", r"\s+").replace("'", "['’]")

    alternatives = "|".join(piece(p) for p in sorted(set(phrases), key=len, reverse=True))
    return re.compile(rf"(?<![\w'’-])(?:{alternatives})(?![\w'’-])", re.IGNORECASE)


def _match(found: re.Match[str], **extra: Any) -> Match:
    return {"text": found.group(), "start": found.start(), "end": found.end(), **extra}


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentences as (start, end) offsets into ``text``, trailing whitespace excluded."""
    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
    spans = []
    for span in segmenter.segment(text):
        sentence = text[span.start : span.end]
        if _text.WORD_RE.search(sentence):
            stripped = sentence.rstrip()
            start = span.start + len(sentence) - len(sentence.lstrip())
            spans.append((start, span.start + len(stripped)))
    return spans


def _ranked(counts: Counter[str], top: int | None = None) -> list[tuple[str, int]]:
    """Most frequent first; ties in alphabetical order."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
