"""``summarize.*``: extractive summaries and key points (sumy), document statistics."""

from __future__ import annotations

import math
import re
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

# Where a text states its subject: in its first sentence, or after an opening anecdote,
# question or scene, in its second or third.
_OPENING_SENTENCES = 3

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
    """Picks the text's topic sentence and its most central others, in their original order.

    A summary of the sentences a ranker rates best can drop the one that says what the text
    is about, and can open on "It ..." with nothing for "It" to point at; so the topic
    sentence is kept, and a sentence opening on a pronoun comes with the one it leans on.
    """

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
        stemmer = Stemmer(_SUMY_LANGUAGES[language])
        summarizer = getattr(importlib.import_module(module), class_name)(stemmer)
        stop_words = _text.stop_words(language)
        summarizer.stop_words = stop_words
        # Sentences sharing no word make similarity matrices with zero rows, and LSA warns
        # when a text has fewer distinct words than sentences; either way the ranking still
        # completes, so keep both warnings out of the logs. catch_warnings swaps a global
        # filter list: the lock keeps two summaries from restoring each other's.
        with _WARNINGS_LOCK, warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Number of words", category=UserWarning)
            with numpy.errstate(divide="ignore", invalid="ignore"):
                ranking = _ranking(summarizer, document)
        sentences = [str(s) for s in document.sentences]
        # LSA finds nothing in a text of stop words only: the lead sentences come first.
        ranking = ranking or list(range(len(sentences)))
        # Pronouns are told only in English.
        leaning = [language == "en" and _leans(sentence) for sentence in sentences]
        topic = _topic(document, ranking, leaning)
        return [sentences[index] for index in _choose(ranking, count, topic, leaning)]


def _ranking(summarizer: Any, document: Any) -> list[int]:
    """Every sentence's index, best rated first, as ``summarizer`` rates them: sumy's
    summarizers hand their rated sentences, best first, to a callable count."""
    ranking: list[int] = []

    def keep_all(infos: list[Any]) -> list[Any]:
        ranking.extend(info.order for info in infos)
        return infos

    summarizer(document, keep_all)
    return ranking


def _topic(document: Any, ranking: list[int], leaning: list[bool]) -> int:
    """The index of the sentence that states what the text is about: of its opening
    sentences (the first paragraph's, three at most) that do not lean on another, the one
    the summarizer rates best. Usually the lead; the third after an anecdote or a question."""
    opening = range(min(_OPENING_SENTENCES, len(document.paragraphs[0].sentences) or 1))
    candidates = [index for index in opening if not leaning[index]] or [0]
    return min(candidates, key=ranking.index)


# A sentence opening on a personal pronoun ("It", "They") or a demonstrative one ("This
# means", "That was") leans on the sentence before it: alone, the word points at nothing. A
# demonstrative before its noun ("This report", "These pans") names what it points at. Told
# apart by the word after it: an auxiliary or modal verb, or for "This" and "That" a verb in
# -s or -ed ("This means", "That changed"), where a noun rarely ends so.
_LEANING_RE = re.compile(
    r"^[\"'“‘(]*(?:(?:It|Its|They|Them|Their|He|She|Him|His|Her)\b"
    r"|(?:This|That|These|Those) (?:is|was|are|were|has|have|had|will|would|can|could|may"
    r"|might|must|should|shall|does|did|do)\b"
    r"|(?:This|That) [a-z]+(?:s|ed)\b(?<!ss)(?<!us)(?<!is))"
)


def _leans(sentence: str) -> bool:
    return bool(_LEANING_RE.match(sentence))


def _choose(ranking: list[int], count: int, topic: int, leaning: list[bool]) -> list[int]:
    """The indices of ``count`` sentences, in text order: the topic sentence, then the best
    rated. A sentence that leans on an earlier one comes with the nearest earlier one that
    does not lean, or not at all when the two do not both fit (a sentence that does not lean
    always fits, so the count is always reached)."""
    chosen: set[int] = set()
    for index in [topic, *ranking]:
        needed = {index}
        antecedent = next((j for j in range(index - 1, -1, -1) if not leaning[j]), None)
        if leaning[index] and antecedent is not None:
            needed.add(antecedent)
        if len(chosen | needed) <= count:
            chosen |= needed
        if len(chosen) == count:
            break
    return sorted(chosen)


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
