"""``text.compare``: similarity of two texts and duplicate sentences."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

from engines import _text
from engines.base import ChoiceEngine, EngineError
from engines.text._helpers import _normal_word, _require_words, _round, _sentence_spans


def _shingles(tokens: list[str], size: int) -> set[tuple[str, ...]]:
    if len(tokens) < size:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}


def _cosine(first: Counter[str], second: Counter[str]) -> float:
    dot = sum(count * second[word] for word, count in first.items())
    norm = math.sqrt(sum(c * c for c in first.values())) * math.sqrt(
        sum(c * c for c in second.values())
    )
    return dot / norm if norm else 0.0


_SIMILARITY_VERDICTS = (
    (0.9, "near-identical"),
    (0.5, "heavily overlapping"),
    (0.2, "partly overlapping"),
    (0.0001, "slightly overlapping"),
)


def _similarity(inputs: dict[str, Any]) -> dict[str, Any]:
    if not inputs["other_text"].strip():
        raise EngineError("Give the second text to compare in other_text.")
    fold: Callable[[str], str] = _normal_word if inputs["ignore_case"] else (lambda w: w)
    first = [fold(w) for w in _require_words(inputs["text"])]
    second = [fold(w) for w in _text.words(inputs["other_text"])]
    if not second:
        raise EngineError("other_text has no words to compare.")
    size = inputs["shingle_size"]
    a, b = _shingles(first, size), _shingles(second, size)
    shared = a & b
    jaccard = len(shared) / len(a | b)
    verdict = next((label for floor, label in _SIMILARITY_VERDICTS if jaccard >= floor), "distinct")
    return {
        "jaccard": _round(jaccard, 4),
        "containment": _round(len(shared) / len(a), 4),
        "cosine": _round(_cosine(Counter(first), Counter(second)), 4),
        "shared_shingles": len(shared),
        "words": len(first),
        "other_words": len(second),
        "verdict": verdict,
    }


def _sentence_key(sentence: str) -> str:
    return " ".join(_normal_word(w) for w in _text.words(sentence))


_MAX_NEAR_DUPLICATE_SENTENCES = 3000


def _similar_group(
    words: set[str],
    groups: list[dict[str, Any]],
    postings: dict[str, list[int]],
    threshold: float,
) -> dict[str, Any] | None:
    """The first group whose words overlap ``words`` by at least ``threshold`` (Jaccard)."""
    shared: Counter[int] = Counter()
    for word in words:
        shared.update(postings.get(word, ()))
    for index in sorted(shared):
        common = shared[index]
        if common / (len(words) + len(groups[index]["words"]) - common) >= threshold:
            return groups[index]
    return None


def _duplicates(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    spans = _sentence_spans(text)
    if not spans:
        raise EngineError("The text has no sentences to compare.")
    threshold = inputs["similarity"]
    if threshold < 1 and len(spans) > _MAX_NEAR_DUPLICATE_SENTENCES:
        raise EngineError(
            f"Near-duplicate search handles up to {_MAX_NEAR_DUPLICATE_SENTENCES} sentences; "
            "use similarity 1 for exact duplicates or send a shorter text."
        )
    groups: list[dict[str, Any]] = []
    by_key: dict[str, dict[str, Any]] = {}
    postings: dict[str, list[int]] = {}  # word -> indexes of the groups that contain it
    for index, (start, end) in enumerate(spans):
        sentence = " ".join(text[start:end].split())
        key = _sentence_key(sentence)
        if len(key.split()) < inputs["min_words"]:
            continue
        words = set(key.split())
        group = by_key.get(key)
        if group is None and threshold < 1:
            group = _similar_group(words, groups, postings, threshold)
        if group is None:
            group = {"sentence": sentence, "words": words, "occurrences": []}
            for word in words:
                postings.setdefault(word, []).append(len(groups))
            groups.append(group)
        by_key[key] = group
        group["occurrences"].append({"index": index, "start": start, "text": sentence})
    repeated = [g for g in groups if len(g["occurrences"]) > 1]
    return {
        "sentences": len(spans),
        "duplicate_groups": len(repeated),
        "repeated_sentences": sum(len(g["occurrences"]) - 1 for g in repeated),
        "duplicates": [
            {
                "sentence": g["sentence"],
                "count": len(g["occurrences"]),
                "occurrences": g["occurrences"],
            }
            for g in repeated
        ],
    }


class CompareEngine(ChoiceEngine):
    name = "text.compare"
    requires = ("pysbd",)
    choice = "comparison"
    jobs = {"similarity": _similarity, "duplicates": _duplicates}
