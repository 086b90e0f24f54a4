"""``text.frequency``: word frequencies and n-grams."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from engines import _text
from engines.base import ChoiceEngine, EngineError
from engines.text._helpers import _normal_word, _per_100, _ranked, _require_words

_CLAUSE_SPLIT_RE = re.compile(r"[.!?;:()\[\]{}\"“”…\n]+")


def _word_frequency(inputs: dict[str, Any]) -> dict[str, Any]:
    found = _require_words(inputs["text"])
    if not inputs["case_sensitive"]:
        found = [_normal_word(w) for w in found]
    stops = _text.stop_words(inputs["language"]) if inputs["exclude_stop_words"] else set()
    counted = Counter(
        w for w in found if len(w) >= inputs["min_length"] and _normal_word(w) not in stops
    )
    total = len(found)
    listed = []
    covered = 0
    for word, count in _ranked(counted, inputs["top"]):
        covered += count
        listed.append(
            {
                "word": word,
                "count": count,
                "percent": _per_100(count, total),
                "cumulative_percent": _per_100(covered, total),
            }
        )
    return {
        "total_words": total,
        "unique_words": len(set(found)),
        "hapax_legomena": sum(1 for c in Counter(found).values() if c == 1),
        "words": listed,
    }


def _ngrams(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"] if inputs["case_sensitive"] else inputs["text"].lower()
    size = inputs["n"]
    counts: Counter[str] = Counter()
    if inputs["unit"] == "character":
        flat = " ".join(text.split())
        counts.update(flat[i : i + size] for i in range(len(flat) - size + 1))
    else:
        spans = [text] if inputs["cross_punctuation"] else _CLAUSE_SPLIT_RE.split(text)
        for span in spans:
            tokens = [w.replace("’", "'") for w in _text.words(span)]
            counts.update(" ".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1))
    total = sum(counts.values())
    if not total:
        raise EngineError(f"The text is too short for {size}-{inputs['unit']} n-grams.")
    kept = Counter({gram: c for gram, c in counts.items() if c >= inputs["min_count"]})
    return {
        "unit": inputs["unit"],
        "n": size,
        "total_ngrams": total,
        "unique_ngrams": len(counts),
        "ngrams": [
            {"ngram": gram, "count": count, "percent": _per_100(count, total)}
            for gram, count in _ranked(kept, inputs["top"])
        ],
    }


class FrequencyEngine(ChoiceEngine):
    name = "text.frequency"
    requires = ("sumy",)
    choice = "unit"
    jobs = {"words": _word_frequency, "ngrams": _ngrams}
