"""Text helpers shared by the local text engines: words, sentences, paragraphs, stop words."""

from __future__ import annotations

import pkgutil
import re

from engines.base import load_once

# Letters (any script) with inner apostrophes or hyphens, or numbers such as 3.5 or 1,000.
WORD_RE = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*|\d+(?:[.,]\d+)*")
# A sentence runs to terminal punctuation (plus closing quotes or brackets) followed by
# whitespace, or to a line break, or to the end of the text: what the plain pattern
# r"\S.*?(?:[.!?…]+[\"'”’)\]]*(?=\s|$)|(?=\n)|$)" (DOTALL) finds, written so that the engine
# runs over ordinary characters in one step instead of trying each ending after every
# character (a third of the time; tests/engines/test_text.py checks the two agree).
_TERMINAL, _CLOSING = "[.!?…]", "[\"'”’)\\]]"
_SENTENCE_RE = re.compile(
    rf"\S(?:[^.!?…\n]+|{_TERMINAL}(?!{_TERMINAL}*{_CLOSING}*(?:\s|\Z)))*"
    rf"(?:{_TERMINAL}+{_CLOSING}*(?=\s|\Z))?"
)
_PARAGRAPH_SPLIT_RE = re.compile(r"\n[ \t]*\n")
_LINE_BREAK_RE = re.compile(r"[ \t]*\n[ \t]*(?=\S)")
# A "sentence" ending in one of these (or in an initial such as "J.") continues.
_ABBREVIATION_RE = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Mt|vs|etc|approx|No|Fig|e\.g|i\.e)|\b[A-Z])\.$"
)

# ISO 639-1 codes of the languages whose stop words sumy ships, to sumy's file names.
STOP_WORD_LANGUAGES = {
    "en": "english",
    "fr": "french",
    "de": "german",
    "es": "spanish",
    "it": "italian",
    "pt": "portuguese",
}


def words(text: str) -> list[str]:
    return WORD_RE.findall(text)


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in _PARAGRAPH_SPLIT_RE.split(text) if p.strip()]


def unwrap_lines(text: str) -> str:
    """Join hard-wrapped lines: a line break before a lowercase letter continues a sentence."""
    if "\n" not in text:
        return text

    def join(match: re.Match[str]) -> str:
        start = match.start()
        if start and text[start - 1] != "\n" and text[match.end()].islower():
            return " "
        return match.group()

    return _LINE_BREAK_RE.sub(join, text)


def quick_sentences(text: str) -> list[str]:
    """Split on terminal punctuation and line breaks: fast, good enough for counting.

    Abbreviations ("Dr.") end a sentence here; use ``sentences`` where that matters.
    """
    text = unwrap_lines(text)
    result: list[str] = []
    pending = ""
    for match in _SENTENCE_RE.finditer(text):
        sentence = f"{pending} {match.group().strip()}" if pending else match.group().strip()
        if (
            # The longest abbreviation is 7 characters: no need to scan the whole sentence
            # (\b still sees the character before the start position).
            _ABBREVIATION_RE.search(sentence, max(0, len(sentence) - 8))
            and match.end() < len(text)
            and text[match.end()] != "\n"
        ):
            pending = sentence
            continue
        pending = ""
        if WORD_RE.search(sentence):
            result.append(sentence)
    if pending and WORD_RE.search(pending):
        result.append(pending)
    return result


def sentences(text: str, language: str = "en") -> list[str]:
    """Split with pysbd's rule-based segmenter, which knows abbreviations and decimals.

    Costs about 10 ms per 1,000 characters; a segmenter keeps per-call state, so build one per
    call.
    """
    import pysbd

    segmenter = pysbd.Segmenter(language=language, clean=False)
    result: list[str] = []
    for paragraph in paragraphs(unwrap_lines(text)):
        result.extend(s.strip() for s in segmenter.segment(paragraph) if WORD_RE.search(s))
    return result


@load_once
def stop_words(language: str) -> frozenset[str]:
    data = pkgutil.get_data("sumy", f"data/stopwords/{STOP_WORD_LANGUAGES[language]}.txt")
    assert data is not None
    return frozenset(w.strip() for w in data.decode("utf-8").splitlines() if w.strip())


def duration_text(seconds: int) -> str:
    """Human duration as reading-time widgets show it: "45 sec", "4 min", "1 h 05 min"."""
    if seconds < 60:
        return f"{seconds} sec"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"
