"""Title case and sentence case, jobs of ``text.transform``."""

from __future__ import annotations

import re
from typing import Any

from engines.text._helpers import _capitalize, _normal_word

_ARTICLES = {"a", "an", "the"}
_PREPOSITIONS = frozenset({
    "about", "above", "across", "after", "against", "along", "among", "around", "at", "before",
    "behind", "below", "beneath", "beside", "between", "beyond", "by", "down", "during",
    "except", "from", "in", "inside", "into", "like", "near", "of", "off", "on", "onto", "out",
    "outside", "over", "past", "per", "since", "through", "throughout", "till", "toward",
    "towards", "under", "underneath", "until", "up", "upon", "via", "with", "within", "without",
})  # fmt: skip
# Chicago: articles, coordinating conjunctions, "to", "as" and every preposition.
_CHICAGO_MINOR = _ARTICLES | {"and", "but", "for", "or", "nor", "to", "as"} | _PREPOSITIONS
_TITLE_MINOR = {
    "chicago": frozenset(_CHICAGO_MINOR),
    # AP: articles, and conjunctions and prepositions of three letters or fewer.
    "ap": frozenset(
        _ARTICLES
        | {
            "and",
            "but",
            "for",
            "nor",
            "or",
            "so",
            "yet",
            "as",
            "at",
            "by",
            "in",
            "of",
            "off",
            "on",
            "out",
            "per",
            "to",
            "up",
            "via",
        }
    ),  # fmt: skip
    # APA 7: minor words are those of three letters or fewer.
    "apa": frozenset(
        _ARTICLES
        | {
            "and",
            "as",
            "but",
            "for",
            "if",
            "nor",
            "or",
            "so",
            "yet",
            "at",
            "by",
            "in",
            "of",
            "off",
            "on",
            "per",
            "to",
            "up",
            "via",
        }
    ),  # fmt: skip
}
_TOKEN_RE = re.compile(r"(\S+)")
_CORE_RE = re.compile(r"^([^\w]*)(.*?)([^\w]*)$", re.DOTALL)
_SUBTITLE_END = (":", "—", "–", "?", "!", ".")


def _keeps_own_case(word: str) -> bool:
    """Acronyms, brands (iPhone, McDonald) and URLs are written as given."""
    return (
        any(c.isupper() for c in word[1:])
        or any(c.isdigit() for c in word)
        or "@" in word
        or "." in word.strip(".")
    )


def _title_word(core: str, style: str, force: bool) -> str:
    if _keeps_own_case(core):
        return core
    parts = core.split("-")
    out = []
    for index, part in enumerate(parts):
        lower = part.lower()
        minor = lower in _TITLE_MINOR[style] and not (force and index == 0)
        out.append(lower if minor else _capitalize(lower))
    return "-".join(out)


def _title_line(line: str, style: str) -> str:
    tokens = list(_TOKEN_RE.finditer(line))
    if line.isupper():  # an all-caps line carries no case information
        line = line.lower()
    pieces = []
    last = 0
    previous = ""
    for index, token in enumerate(tokens):
        lead, core, trail = _CORE_RE.match(line[token.start() : token.end()]).groups()
        first = index == 0 or previous.endswith(_SUBTITLE_END) or lead.startswith(("“", '"'))
        is_last = index == len(tokens) - 1 and style != "apa"
        word = _title_word(core, style, first or is_last) if core else ""
        pieces += [line[last : token.start()], lead, word, trail]
        last = token.end()
        previous = token.group()
    pieces.append(line[last:])
    return "".join(pieces)


def _title_case(inputs: dict[str, Any]) -> dict[str, Any]:
    style = inputs["style"]
    lines = inputs["text"].split("\n")
    return {"text": "\n".join(_title_line(line, style) for line in lines), "style": style}


_ALWAYS_CAPITALIZED = frozenset({
    "i", "i'm", "i've", "i'd", "i'll", "january", "february", "march", "april", "june", "july",
    "august", "september", "october", "november", "december", "monday", "tuesday", "wednesday",
    "thursday", "friday", "saturday", "sunday",
})  # fmt: skip
_SENTENCE_BREAK_RE = re.compile(r"(^|[.!?…][\"'”’)\]]*\s+|\n\s*)(\W*)(\w)")


def _sentence_case(inputs: dict[str, Any]) -> dict[str, Any]:
    keep = {w.lower(): w for w in inputs["keep_words"]}
    text = inputs["text"]
    if text.isupper():
        text = text.lower()

    def word_case(found: re.Match[str]) -> str:
        word = found.group()
        lower = _normal_word(word)
        if lower in keep:
            return keep[lower]
        if lower in _ALWAYS_CAPITALIZED:
            return _capitalize(word.lower())
        if _keeps_own_case(word):
            return word
        return word.lower()

    text = re.sub(r"[^\W\d_][\w'’-]*", word_case, text)
    text = _SENTENCE_BREAK_RE.sub(lambda m: m.group(1) + m.group(2) + _capitalize(m.group(3)), text)
    return {"text": text}
