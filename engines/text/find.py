"""``text.find``: style finders that answer matches with character offsets."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from engines.base import ChoiceEngine, EngineError, load_once
from engines.text._helpers import (
    _match,
    _normal_word,
    _per_100,
    _phrase_regex,
    _ranked,
    _require_words,
    _sentence_spans,
    load_data,
)

IRREGULAR_PARTICIPLES = load_data("irregular_participles.txt")
NOT_PARTICIPLES = load_data("not_participles.txt")
NOT_ADVERBS = frozenset(load_data("not_adverbs.txt"))
FILLERS = load_data("fillers.json")
FILLER_ADVICE = load_data("filler_advice.json")
CLICHES = load_data("cliches.txt")
REDUNDANCIES = load_data("redundancies.json")
INCLUSIVE_TERMS = load_data("inclusive_terms.json")
PROFANITY = load_data("profanity.json")

_BE_FORMS = (
    r"am|is|are|was|were|be|been|being|isn['’]t|aren['’]t|wasn['’]t|weren['’]t|"
    r"get|gets|got|gotten|getting|'s|'re|’s|’re"
)
_PASSIVE_RE = re.compile(
    rf"\b(?:{_BE_FORMS})"
    r"(?:\s+(?:not|never|also|already|just|often|always|still|\w+ly))*"
    rf"\s+(?!(?:{'|'.join(NOT_PARTICIPLES)})\b)"
    rf"(?P<participle>[a-z]{{2,}}ed|{'|'.join(IRREGULAR_PARTICIPLES)})\b"
    r"(?P<agent>\s+by\b)?",
    re.IGNORECASE,
)
_LY_RE = re.compile(r"(?<![\w'’-])[A-Za-z]{2,}ly(?![\w'’-])")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?…][\"'”’)\]]*\s+|\n\s*)$")


def _passive(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    spans = _sentence_spans(text)
    if not spans:
        raise EngineError("The text has no sentences to check.")
    matches = [
        _match(found, with_agent=bool(found.group("agent"))) for found in _PASSIVE_RE.finditer(text)
    ]
    for match in matches:
        if match["with_agent"]:
            match["end"] -= len(" by")
            match["text"] = text[match["start"] : match["end"]]
    passive = {i for i, (s, e) in enumerate(spans) for m in matches if s <= m["start"] < e}
    return {
        "sentences": len(spans),
        "passive_sentences": len(passive),
        "passive_percent": _per_100(len(passive), len(spans)),
        "matches": matches,
    }


def _adverbs(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    total = len(_require_words(text))
    matches = []
    for found in _LY_RE.finditer(text):
        word = found.group()
        if word.lower() in NOT_ADVERBS:
            continue
        at_start = _SENTENCE_START_RE.search(text, 0, found.start()) is not None
        if word[0].isupper() and not at_start:
            continue  # a name such as Kelly or Beverly
        matches.append(_match(found))
    counts = Counter(m["text"].lower() for m in matches)
    return {
        "words": total,
        "adverbs": len(matches),
        "per_100_words": _per_100(len(matches), total),
        "most_frequent": [{"word": w, "count": c} for w, c in _ranked(counts, 10)],
        "matches": matches,
    }


@load_once
def _filler_regexes() -> dict[str, re.Pattern[str]]:
    return {category: _phrase_regex(words) for category, words in FILLERS.items()}


def _fillers(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    total = len(_require_words(text))
    taken: list[tuple[int, int]] = []
    matches = []
    for category in inputs["categories"]:
        for found in _filler_regexes()[category].finditer(text):
            if any(s < found.end() and found.start() < e for s, e in taken):
                continue  # already counted under an earlier category
            taken.append(found.span())
            matches.append(_match(found, category=category, advice=FILLER_ADVICE[category]))
    matches.sort(key=lambda m: m["start"])
    by_category = Counter(m["category"] for m in matches)
    return {
        "words": total,
        "count": len(matches),
        "per_100_words": _per_100(len(matches), total),
        "by_category": {c: by_category[c] for c in FILLERS},
        "matches": matches,
    }


@load_once
def _cliche_regex() -> re.Pattern[str]:
    return _phrase_regex(CLICHES)


def _cliches(inputs: dict[str, Any]) -> dict[str, Any]:
    matches = [_match(found) for found in _cliche_regex().finditer(inputs["text"])]
    return {"count": len(matches), "matches": matches}


@load_once
def _redundancy_lookup() -> tuple[re.Pattern[str], dict[str, str]]:
    lookup = {" ".join(k.lower().split()): v for k, v in REDUNDANCIES.items()}
    return _phrase_regex(lookup), lookup


def _keep_case(original: str, replacement: str) -> str:
    if original[:1].isupper() and replacement[:1].islower():
        return replacement[0].upper() + replacement[1:]
    return replacement


def _redundancies(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    regex, lookup = _redundancy_lookup()
    matches = []
    pieces = []
    last = 0
    for found in regex.finditer(text):
        key = " ".join(_normal_word(found.group()).split())
        suggestion = _keep_case(found.group(), lookup[key])
        matches.append(_match(found, suggestion=suggestion))
        pieces += [text[last : found.start()], suggestion]
        last = found.end()
    pieces.append(text[last:])
    return {"count": len(matches), "matches": matches, "revised_text": "".join(pieces)}


@load_once
def _inclusive_lookup() -> tuple[re.Pattern[str], dict[str, tuple[str, tuple[str, ...], str]]]:
    lookup = {term: (category, tuple(s), why) for term, category, s, why in INCLUSIVE_TERMS}
    return _phrase_regex(lookup), lookup


def _inclusive(inputs: dict[str, Any]) -> dict[str, Any]:
    regex, lookup = _inclusive_lookup()
    matches = []
    for found in regex.finditer(inputs["text"]):
        category, suggestions, reason = lookup[" ".join(_normal_word(found.group()).split())]
        if category not in inputs["categories"]:
            continue
        matches.append(
            _match(found, category=category, suggestions=list(suggestions), reason=reason)
        )
    by_category = Counter(m["category"] for m in matches)
    return {
        "count": len(matches),
        "by_category": dict(_ranked(by_category)),
        "matches": matches,
    }


@load_once
def _profanity_regex() -> re.Pattern[str]:
    return _phrase_regex(PROFANITY)


def _mask(word: str, style: str) -> str:
    if style == "full":
        return re.sub(r"\w", "*", word)
    return word[0] + re.sub(r"\w", "*", word[1:])


def _profanity(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    matches = []
    pieces = []
    last = 0
    for found in _profanity_regex().finditer(text):
        severity = PROFANITY[" ".join(found.group().lower().split())]
        if severity == "mild" and not inputs["include_mild"]:
            continue
        matches.append(_match(found, severity=severity))
        pieces += [text[last : found.start()], _mask(found.group(), inputs["mask_style"])]
        last = found.end()
    pieces.append(text[last:])
    return {
        "contains_profanity": bool(matches),
        "count": len(matches),
        "strong": sum(1 for m in matches if m["severity"] == "strong"),
        "mild": sum(1 for m in matches if m["severity"] == "mild"),
        "matches": matches,
        "masked_text": "".join(pieces),
    }


class FindEngine(ChoiceEngine):
    name = "text.find"
    requires = ("pysbd",)
    choice = "finder"
    jobs = {
        "passive": _passive,
        "adverbs": _adverbs,
        "fillers": _fillers,
        "cliches": _cliches,
        "redundancies": _redundancies,
        "inclusive": _inclusive,
        "profanity": _profanity,
    }
