"""``summarize.*``: extractive summaries and key points (sumy), document statistics."""

from __future__ import annotations

import math
import threading
import warnings
from collections import Counter
from typing import Any

from engines import _text
from engines.base import Engine, EngineError

# Languages that both pysbd (sentences) and sumy (stemmer, stop words) support.
_SUMY_LANGUAGES = {
    "en": "english",
    "fr": "french",
    "de": "german",
    "es": "spanish",
    "it": "italian",
}

_WARNINGS_LOCK = threading.Lock()

_SUMMARIZERS = {
    "textrank": ("sumy.summarizers.text_rank", "TextRankSummarizer"),
    "lexrank": ("sumy.summarizers.lex_rank", "LexRankSummarizer"),
    "lsa": ("sumy.summarizers.lsa", "LsaSummarizer"),
    "luhn": ("sumy.summarizers.luhn", "LuhnSummarizer"),
}


class _Tokenizer:
    """sumy's tokenizer interface on pysbd and a regex: sumy's own needs NLTK's punkt data."""

    def __init__(self, language: str) -> None:
        self.language = _SUMY_LANGUAGES[language]
        self._code = language

    def to_sentences(self, paragraph: str) -> list[str]:
        return _text.sentences(paragraph, self._code)

    def to_words(self, sentence: str) -> list[str]:
        return _text.words(sentence)


class ExtractiveSummaryEngine(Engine):
    """Picks the most central sentences of the text and returns them in their original order."""

    name = "summarize.extractive"
    requires = ("sumy", "pysbd", "numpy")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["format", "count_field"],
        "properties": {
            "format": {"enum": ["paragraph", "bullets"]},
            "count_field": {"type": "string"},
        },
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        from sumy.parsers.plaintext import PlaintextParser

        language = inputs["language"]
        parser = PlaintextParser.from_string(inputs["text"], _Tokenizer(language))
        document = parser.document
        total = len(document.sentences)
        if total == 0:
            raise EngineError("The text has no sentences to summarize.")
        count = inputs[params["count_field"]]
        if total <= count:
            picked = [str(s) for s in document.sentences]
        else:
            picked = self._pick(document, count, inputs["algorithm"], language)
        if params["format"] == "bullets":
            return {
                "points": picked,
                "markdown": "\n".join(f"- {s}" for s in picked),
                "source_sentences": total,
            }
        return {"summary": " ".join(picked), "sentences": picked, "source_sentences": total}

    @staticmethod
    def _pick(document: Any, count: int, algorithm: str, language: str) -> list[str]:
        import importlib

        import numpy
        from sumy.nlp.stemmers import Stemmer

        module, class_name = _SUMMARIZERS[algorithm]
        summarizer = getattr(importlib.import_module(module), class_name)(
            Stemmer(_SUMY_LANGUAGES[language])
        )
        summarizer.stop_words = _text.stop_words(language)
        # Sentences sharing no word make similarity matrices with zero rows, and LSA warns
        # when a text has fewer distinct words than sentences; either way the ranking still
        # completes, so keep both warnings out of the logs. catch_warnings swaps a global
        # filter list: the lock keeps two summaries from restoring each other's.
        with _WARNINGS_LOCK, warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Number of words", category=UserWarning)
            with numpy.errstate(divide="ignore", invalid="ignore"):
                picked = [str(s) for s in summarizer(document, count)]
        # LSA finds nothing in a text of stop words only: fall back to the lead sentences.
        return picked or [str(s) for s in document.sentences[:count]]


# A "sentence" without punctuation can be the whole document: quote only its start.
_LONGEST_SENTENCE_CHARS = 300


class DocumentStatisticsEngine(Engine):
    name = "summarize.statistics"

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = inputs["text"]
        words = _text.words(text)
        if not words:
            raise EngineError("The text has no words.")
        sentences = _text.quick_sentences(text)
        lowered = [w.lower().replace("’", "'") for w in words]
        stops = _text.stop_words(inputs["language"])
        terms = Counter(w for w in lowered if w not in stops and not w[0].isdigit() and len(w) > 1)
        top = sorted(terms.items(), key=lambda item: (-item[1], item[0]))[: inputs["top_terms"]]
        reading = math.ceil(len(words) / inputs["words_per_minute"] * 60)
        speaking = math.ceil(len(words) / inputs["speaking_words_per_minute"] * 60)
        longest = max(sentences, key=lambda s: len(_text.words(s))) if sentences else ""
        if len(longest) > _LONGEST_SENTENCE_CHARS:
            longest = longest[: _LONGEST_SENTENCE_CHARS - 1].rstrip() + "…"
        return {
            "words": len(words),
            "sentences": len(sentences),
            "paragraphs": len(_text.paragraphs(text)),
            "reading_time_seconds": reading,
            "reading_time": _text.duration_text(reading),
            "speaking_time_seconds": speaking,
            "speaking_time": _text.duration_text(speaking),
            "average_sentence_words": round(len(words) / max(len(sentences), 1), 1),
            "longest_sentence": longest,
            "lexical_diversity": round(len(set(lowered)) / len(lowered), 3),
            "top_terms": [{"term": term, "count": count} for term, count in top],
        }
