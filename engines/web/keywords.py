"""``seo.keywords``: keyword extraction with YAKE, kept to whole phrases of the text.

YAKE scores every run of up to n words between stop words, so its best candidates include
pieces no indexer would file a text under: "began in Great" out of "began in Great Britain",
"steal and hard" out of "easy to steal and hard to remember", "bank main tool" glued across
"the central bank's main tool". Its candidates are read best first and kept only when they
are a whole phrase of the text (see ``_whole_phrase``), up to the number asked for.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from engines.base import Engine

# Letters or digits with inner apostrophes or hyphens ("long-term", "COVID-19", "bank's").
_WORD_RE = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_POSSESSIVE_RE = re.compile(r"['’]s$", re.IGNORECASE)
_SENTENCE_END_RE = re.compile(r"[.!?…]|\n")
# Lowercase words inside names: "Bank of England", "Tour de France", "Ludwig van Beethoven".
_NAME_PARTICLES = frozenset({"of", "de", "du", "des", "del", "della", "di", "da", "van", "von"})
# YAKE's candidates, read best first, until enough of them are whole phrases.
_CANDIDATES_PER_KEYWORD = 5


@dataclass(frozen=True)
class _Word:
    text: str
    opens_sentence: bool

    @property
    def capitalized(self) -> bool:
        return self.text[0].isupper()


def _runs(text: str) -> list[list[_Word]]:
    """The text's runs of words with only spaces between them: anything else between two
    words (punctuation, a line break) or a possessive ("bank's") ends a run."""
    runs: list[list[_Word]] = []
    run: list[_Word] = []
    end = 0
    opens_sentence = True
    for match in _WORD_RE.finditer(text):
        gap = text[end : match.start()]
        end = match.end()
        if gap.strip(" \t"):
            opens_sentence = opens_sentence or bool(_SENTENCE_END_RE.search(gap))
            if run:
                runs.append(run)
            run = []
        word = match.group()
        possessive = _POSSESSIVE_RE.search(word)
        run.append(_Word(word[: possessive.start()] if possessive else word, opens_sentence))
        opens_sentence = False
        if possessive:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    return runs


class _Text:
    """Where each word starts a run of the text, to find a phrase's occurrences."""

    def __init__(self, text: str) -> None:
        self.runs = _runs(text)
        self.starts: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for r, run in enumerate(self.runs):
            for i, word in enumerate(run):
                self.starts[word.text.lower()].append((r, i))

    def occurrences(self, words: list[str]) -> Iterator[tuple[list[_Word], int]]:
        """Each occurrence of ``words`` inside a run: (the run, the index of its first word)."""
        lowered = [word.lower() for word in words]
        for r, i in self.starts.get(lowered[0], ()):
            run = self.runs[r]
            if [word.text.lower() for word in run[i : i + len(words)]] == lowered:
                yield run, i


def _cuts_a_name(run: list[_Word], start: int, length: int, stop_words: set[str]) -> bool:
    """Whether the occurrence leaves part of a capitalized name out: its first or last word
    is capitalized (or a particle), and so is the word beside it outside, possibly past a
    particle ("Bank" of "Bank of England", "van Beethoven" of "Ludwig van Beethoven"). A
    stop word capitalized only to open the sentence ("The Berlin Wall") is no part of a
    name."""

    def goes_on(index: int, step: int) -> bool:
        """Whether a name goes on at ``index``, directly or past a particle."""
        if 0 <= index < len(run) and run[index].text.lower() in _NAME_PARTICLES:
            index += step
        if not 0 <= index < len(run):
            return False
        word = run[index]
        return word.capitalized and not (word.opens_sentence and word.text.lower() in stop_words)

    first, last = run[start], run[start + length - 1]
    return (_in_name(first) and goes_on(start - 1, -1)) or (
        _in_name(last) and goes_on(start + length, 1)
    )


def _in_name(word: _Word) -> bool:
    return word.capitalized or word.text.lower() in _NAME_PARTICLES


def _is_name(words: list[str], stop_words: set[str]) -> bool:
    """Capitalized words, possibly joined by stop words or particles: "Bank of England",
    "Tour de France"."""
    joins = stop_words | _NAME_PARTICLES
    return (
        words[0][0].isupper()
        and words[-1][0].isupper()
        and all(word[0].isupper() or word.lower() in joins for word in words)
    )


def _whole_phrase(words: list[str], text: _Text, stop_words: set[str], english: bool) -> str | None:
    """The candidate as the text writes it where it is a phrase an indexer would file the
    text under (None if it is not one):

    - it neither starts nor ends with a stop word, and in English one inside it is part of
      a name ("Bank of England"): elsewhere it joins two phrases ("photos or business"). In
      French, Spanish or Italian "de" builds noun phrases ("lumière du soleil");
    - a name of two or more capitalized words is a unit: no lowercase words beside it
      ("Berlin Wall stood");
    - it occurs in the text inside one sentence with nothing but spaces between its words
      and without cutting a capitalized name ("began in Great" of "began in Great Britain").
    """
    lowered = [word.lower() for word in words]
    if lowered[0] in stop_words or lowered[-1] in stop_words:
        return None
    name = _is_name(words, stop_words)
    if english and not name and any(word in stop_words for word in lowered[1:-1]):
        return None
    if not name and sum(word[0].isupper() for word in words) >= 2:
        return None
    for run, start in text.occurrences(words):
        if not _cuts_a_name(run, start, len(words), stop_words):
            return " ".join(word.text for word in run[start : start + len(words)])
    return None


class KeywordsEngine(Engine):
    name = "seo.keywords"
    requires = ("yake",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        import yake

        wanted = inputs["max_keywords"]
        # An extractor keeps per-document caches, so one per call (construction is ~1 ms).
        extractor = yake.KeywordExtractor(
            lan=inputs["language"],
            n=inputs["max_ngram"],
            top=wanted * _CANDIDATES_PER_KEYWORD,
            dedup_lim=0.9,
        )
        text = _Text(inputs["text"])
        english = inputs["language"] == "en"
        keywords: list[dict[str, Any]] = []
        for candidate, score in extractor.extract_keywords(inputs["text"]):
            keyword = _whole_phrase(candidate.split(), text, extractor.stopword_set, english)
            if keyword:
                keywords.append(
                    {"keyword": keyword, "score": round(float(score), 6), "rank": len(keywords) + 1}
                )
                if len(keywords) == wanted:
                    break
        return {"keywords": keywords}
