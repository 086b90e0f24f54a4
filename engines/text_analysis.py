"""Writing analysis: readability, sentiment, spelling, language detection, word counts."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from engines import _text
from engines.base import Engine, EngineError, load_once


def _round(value: float, digits: int = 2) -> float:
    return round(float(value), digits)


# --- readability -------------------------------------------------------------------------


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


# --- sentiment ---------------------------------------------------------------------------


@load_once
def _vader() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def _sentiment_label(compound: float) -> str:
    # The thresholds VADER's authors recommend.
    if compound >= 0.05:
        return "positive"
    if compound <= -0.05:
        return "negative"
    return "neutral"


class SentimentEngine(Engine):
    name = "text.sentiment"
    requires = ("vaderSentiment",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = inputs["text"]
        analyser = _vader()
        scores = analyser.polarity_scores(text)
        per_sentence = []
        if inputs["by_sentence"]:
            for sentence in _text.quick_sentences(text):
                compound = analyser.polarity_scores(sentence)["compound"]
                per_sentence.append(
                    {
                        "text": sentence,
                        "compound": compound,
                        "label": _sentiment_label(compound),
                    }
                )
        return {
            "label": _sentiment_label(scores["compound"]),
            "compound": scores["compound"],
            "positive": scores["pos"],
            "negative": scores["neg"],
            "neutral": scores["neu"],
            "sentences": per_sentence,
        }


# --- spelling ----------------------------------------------------------------------------

# Words made of letters with inner apostrophes; hyphenated words are checked part by part.
_SPELL_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
# Spans never spell-checked: URLs, e-mail addresses, @handles, #hashtags, inline code.
_SKIP_SPAN_RE = re.compile(r"https?://\S+|www\.\S+|\S+@\S+\.\w+|[@#]\w+|`[^`\n]*`")


@load_once
def _spell_checker(language: str) -> Any:
    from spellchecker import SpellChecker

    return SpellChecker(language=language)


def _should_check(word: str) -> bool:
    if len(word) < 2:
        return False
    # Acronyms (NASA) and mixed-case names (iPhone, McDonald) are not dictionary words.
    return not (word.isupper() or any(c.isupper() for c in word[1:]))


class SpellingEngine(Engine):
    name = "text.spelling"
    requires = ("spellchecker",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = inputs["text"]
        checker = _spell_checker(inputs["language"])
        skipped = [m.span() for m in _SKIP_SPAN_RE.finditer(text)]
        tokens = []
        next_skip = 0  # both lists run in text order: walk them together
        for match in _SPELL_WORD_RE.finditer(text):
            start = match.start()
            while next_skip < len(skipped) and skipped[next_skip][1] <= start:
                next_skip += 1
            if next_skip < len(skipped) and skipped[next_skip][0] <= start:
                continue
            if _should_check(match.group()):
                tokens.append((match.group(), start))
        lookup = {word: word.replace("’", "'").lower() for word, _ in tokens}
        unknown = checker.unknown(lookup.values())
        suggestions: dict[str, list[str]] = {}
        issues = []
        for word, offset in tokens:
            key = lookup[word]
            if key not in unknown:
                continue
            if key not in suggestions:
                suggestions[key] = self._suggest(checker, key, inputs["max_suggestions"])
            found = suggestions[key]
            if word[0].isupper():  # "Teh" -> "The", German nouns keep their capital
                found = [s[:1].upper() + s[1:] for s in found]
            issues.append({"word": word, "offset": offset, "suggestions": found})
        return {"words_checked": len(tokens), "misspelled": len(issues), "issues": issues}

    @staticmethod
    def _suggest(checker: Any, word: str, limit: int) -> list[str]:
        # Only candidates one edit away: pyspellchecker's two-edit search takes 0.2-2 s per
        # unknown word, too slow for an inline tool, and most misspellings are one edit.
        if limit == 0:
            return []
        candidates = checker.known(checker.edit_distance_1(word))
        ranked = sorted(candidates, key=lambda c: (-checker.word_usage_frequency(c), c))
        return ranked[:limit]


# --- language detection ------------------------------------------------------------------

LANGUAGE_NAMES = {
    "af": "Afrikaans", "ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan",
    "cs": "Czech", "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek",
    "en": "English", "es": "Spanish", "et": "Estonian", "fa": "Persian", "fi": "Finnish",
    "fr": "French", "gu": "Gujarati", "he": "Hebrew", "hi": "Hindi", "hr": "Croatian",
    "hu": "Hungarian", "id": "Indonesian", "it": "Italian", "ja": "Japanese", "kn": "Kannada",
    "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "mk": "Macedonian", "ml": "Malayalam",
    "mr": "Marathi", "ne": "Nepali", "nl": "Dutch", "no": "Norwegian", "pa": "Punjabi",
    "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak",
    "sl": "Slovenian", "so": "Somali", "sq": "Albanian", "sv": "Swedish", "sw": "Swahili",
    "ta": "Tamil", "te": "Telugu", "th": "Thai", "tl": "Tagalog", "tr": "Turkish",
    "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "zh-cn": "Chinese (Simplified)",
    "zh-tw": "Chinese (Traditional)",
}  # fmt: skip


# Below these, langdetect's answer is often wrong (it calls "ok" Slovak with certainty).
_RELIABLE_PROBABILITY = 0.9
_RELIABLE_LETTERS = 15


def _letter_weight(text: str) -> int:
    # A Chinese or Japanese character carries about as much as a short word.
    return sum(
        3 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text if c.isalpha()
    )


@load_once
def _language_detector_factory() -> Any:
    from langdetect import DetectorFactory
    from langdetect.detector_factory import init_factory

    # langdetect samples randomly: without a fixed seed one text gets different answers.
    DetectorFactory.seed = 0
    init_factory()
    from langdetect import detector_factory

    return detector_factory._factory


class LanguageEngine(Engine):
    name = "text.language"
    requires = ("langdetect",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        from langdetect.lang_detect_exception import LangDetectException

        factory = _language_detector_factory()
        detector = factory.create()
        detector.append(inputs["text"])
        try:
            found = detector.get_probabilities()
        except LangDetectException:
            raise EngineError("The text has no letters to detect a language from.") from None
        candidates = [
            {
                "language": c.lang,
                "name": LANGUAGE_NAMES.get(c.lang, c.lang),
                "probability": _round(c.prob, 4),
            }
            for c in found[: inputs["max_candidates"]]
        ]
        best = candidates[0]
        return {
            "language": best["language"],
            "name": best["name"],
            "probability": best["probability"],
            "reliable": best["probability"] >= _RELIABLE_PROBABILITY
            and _letter_weight(inputs["text"]) >= _RELIABLE_LETTERS,
            "candidates": candidates,
        }


# --- word counter ------------------------------------------------------------------------


class WordCountEngine(Engine):
    name = "text.counts"

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = inputs["text"]
        found = _text.words(text)
        sentence_count = len(_text.quick_sentences(text))
        letters = len("".join(found))
        return {
            "characters": len(text),
            "characters_no_spaces": len("".join(text.split())),  # split() cuts at isspace()
            "words": len(found),
            "unique_words": len({w.lower() for w in found}),
            "sentences": sentence_count,
            "paragraphs": len(_text.paragraphs(text)),
            "lines": len(text.splitlines()),
            "average_word_length": _round(letters / len(found)) if found else 0,
            "average_sentence_words": _round(len(found) / sentence_count) if sentence_count else 0,
        }


ENGINES = (
    ReadabilityEngine(),
    SentimentEngine(),
    SpellingEngine(),
    LanguageEngine(),
    WordCountEngine(),
)
