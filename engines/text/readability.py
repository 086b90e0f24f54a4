"""``text.readability``: Flesch reading ease, grade levels and word counts (textstat)."""

from __future__ import annotations

from typing import Any

from engines import _text
from engines.base import Engine, EngineError, load_once
from engines.text._helpers import _round


def _no_cmudict(lang: str) -> None:
    return None


@load_once
def _textstat() -> Any:
    # textstat looks syllables up in NLTK's cmudict and calls nltk.download() when the corpus is
    # missing. Nothing may download at run time, and results must not depend on whether some
    # machine happens to have the corpus: count syllables with pyphen's hyphenation dictionary
    # (textstat's own fallback) everywhere.
    from textstat.backend.counts import _count_syllables

    _count_syllables.get_cmudict = _no_cmudict
    from textstat import backend

    return backend


_EASE_LABELS = (
    (90, "Very easy"),
    (80, "Easy"),
    (70, "Fairly easy"),
    (60, "Standard"),
    (50, "Fairly difficult"),
    (30, "Difficult"),
)


def _ease_label(score: float) -> str:
    for floor, label in _EASE_LABELS:
        if score >= floor:
            return label
    return "Very difficult"


class ReadabilityEngine(Engine):
    name = "text.readability"
    requires = ("textstat", "pyphen")

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = inputs["text"]
        if not _text.words(text):
            raise EngineError("The text has no words to score.")
        ts = _textstat()
        lang = "en_US"
        metrics, counts = ts.metrics, ts.counts
        ease = metrics.flesch_reading_ease(text, lang)
        grade = metrics.text_standard(text, lang)
        return {
            "flesch_reading_ease": _round(ease),
            "reading_ease_label": _ease_label(ease),
            "flesch_kincaid_grade": _round(metrics.flesch_kincaid_grade(text, lang)),
            "gunning_fog": _round(metrics.gunning_fog(text, lang)),
            "smog_index": _round(metrics.smog_index(text, lang)),
            "coleman_liau_index": _round(metrics.coleman_liau_index(text)),
            "automated_readability_index": _round(metrics.automated_readability_index(text)),
            "dale_chall_score": _round(metrics.dale_chall_readability_score(text, lang)),
            "consensus_grade": _round(grade),
            "meets_target_grade": grade <= inputs["target_grade"],
            "words": counts.count_words(text),
            "sentences": counts.count_sentences(text),
            "syllables": counts.count_syllables(text, lang),
            "difficult_words": counts.count_difficult_words(text, lang),
        }
